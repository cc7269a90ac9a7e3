package agenttest_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop/agenttest"
)

func TestRequestHelpers(t *testing.T) {
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "sys"),
		llms.TextParts(llms.ChatMessageTypeHuman, "first"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{agenttest.Call("a", "{}")}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "1", Name: "a", Content: "r1"}}},
		llms.TextParts(llms.ChatMessageTypeHuman, "second"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{agenttest.Call("b", "{}"), agenttest.Call("c", "{}")}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "2", Name: "b", Content: "r2"}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "3", Name: "c", Content: "r3"}}},
	}
	tools := []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{Name: "b"}}, {Type: "function", Function: &llms.FunctionDefinition{Name: "c"}}}
	var got agenttest.Request
	m := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		got = r
		return agenttest.Text("ok"), nil
	})
	if _, err := m.GenerateContent(t.Context(), msgs, llms.WithTools(tools)); err != nil {
		t.Fatal(err)
	}
	if got.System() != "sys" || got.LastUser() != "second" {
		t.Errorf("System %q LastUser %q", got.System(), got.LastUser())
	}
	res := got.ToolResults()
	if len(res) != 2 || res[0].Content != "r2" || res[1].Content != "r3" {
		t.Errorf("ToolResults %+v", res)
	}
	if !got.HasTool("c") || got.HasTool("a") || strings.Join(got.ToolNames(), ",") != "b,c" {
		t.Errorf("tools %v", got.ToolNames())
	}
	// After a user message there are no fresh tool results.
	got = agenttest.Request{Messages: msgs[:5]}
	if len(got.ToolResults()) != 0 {
		t.Errorf("stale tool results")
	}
}

func TestModelErrorsAndStreaming(t *testing.T) {
	boom := errors.New("boom")
	m := agenttest.New(func(context.Context, agenttest.Request) (*llms.ContentChoice, error) { return nil, boom })
	if _, err := m.GenerateContent(t.Context(), nil); !errors.Is(err, boom) {
		t.Errorf("step error: %v", err)
	}
	if _, err := m.GenerateContent(t.Context(), nil); !errors.Is(err, agenttest.ErrExhausted) {
		t.Errorf("exhausted: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.GenerateContent(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	m.Reset()
	if n := len(m.Requests()); n != 0 {
		t.Errorf("%d requests after Reset", n)
	}
	if _, err := m.GenerateContent(t.Context(), nil); !errors.Is(err, boom) {
		t.Errorf("after Reset the script did not restart: %v", err)
	}
	var chunks []string
	s := agenttest.New(agenttest.Reply(agenttest.Text("a b c")))
	_, err := s.GenerateContent(t.Context(), nil, llms.WithStreamingFunc(func(ctx context.Context, c []byte) error {
		chunks = append(chunks, string(c))
		return nil
	}))
	if err != nil || strings.Join(chunks, "|") != "a |b |c" {
		t.Errorf("streamed %q, %v", chunks, err)
	}
}

func TestConcurrentUse(t *testing.T) {
	m := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Text(r.LastUser()), nil
	})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if _, err := m.Call(t.Context(), "x"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if n := len(m.Requests()); n != 160 {
		t.Errorf("%d requests recorded", n)
	}
}
