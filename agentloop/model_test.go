package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// Tests for issue 15 (surviving what real models and providers do), one
// per item, named TestModelNN_...

// openAIPolicy serves chat completions from a function of the request,
// for runs whose requests arrive in no fixed order (children).
func openAIPolicy(t *testing.T, fn func(req chatRequest) string) *openai.LLM {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req chatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, fn(req))
	}))
	t.Cleanup(srv.Close)
	llm, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("t"), openai.WithModel("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

func systemText(req chatRequest) string {
	if len(req.Messages) == 0 || req.Messages[0].Role != "system" {
		return ""
	}
	var s string
	json.Unmarshal(req.Messages[0].Content, &s)
	return s
}

// TestModel01_PanicInChildIsAToolError: langchaingo's OpenAI client
// dereferences nil when a server answers finish_reason "function_call"
// without a function_call. Two children hit it at once, in goroutines of
// the parent's step; the host survives, each spawn_agent call gets an
// error result, and the parent answers.
func TestModel01_PanicInChildIsAToolError(t *testing.T) {
	llm := openAIPolicy(t, func(req chatRequest) string {
		switch {
		case strings.HasPrefix(systemText(req), "You are a child"):
			return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"function_call",
			  "message":{"role":"assistant","content":null}}]}`
		case req.Messages[len(req.Messages)-1].Role == "tool":
			return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop",
			  "message":{"role":"assistant","content":"The children failed."}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
		}
		return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
		  "message":{"role":"assistant","content":null,"tool_calls":[
		    {"id":"call_a","type":"function","function":{"name":"spawn_agent","arguments":"{\"instructions\":\"You are a child.\",\"input\":\"a\"}"}},
		    {"id":"call_b","type":"function","function":{"name":"spawn_agent","arguments":"{\"instructions\":\"You are a child.\",\"input\":\"b\"}"}}]}}],
		  "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	})
	quiet := slog.New(slog.DiscardHandler)
	a := mustAgent(t, agentloop.Config{Model: llm, Instructions: "You are the parent.", Logger: quiet})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "delegate"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "The children failed." {
		t.Errorf("output %q", res.Output)
	}
	results := toolContents(res.Messages)
	if len(results) != 2 {
		t.Fatalf("tool results %q", results)
	}
	for _, c := range results {
		if !strings.HasPrefix(c, "error: child agent failed") || !strings.Contains(c, "panic") {
			t.Errorf("tool result %q, want the child's panic as an error", c)
		}
	}

	// A custom model that panics in the top-level run: an error, not a
	// crash.
	boom := agenttest.NewFunc(func(context.Context, agenttest.Request) (*llms.ContentChoice, error) { panic("boom") })
	_, err = mustAgent(t, agentloop.Config{Model: boom, Logger: quiet}).Run(t.Context(), agentloop.RunInput{ThreadID: "t2", Input: "hi"})
	if !errors.Is(err, agentloop.ErrPanic) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("err = %v, want ErrPanic with the panic value", err)
	}

	// A panic in an Observer called from a tool goroutine of the step.
	two := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("createPage", `{"title":"a"}`), agenttest.Call("createPage", `{"title":"b"}`))),
		agenttest.Reply(agenttest.Text("done")),
	)
	res, err = mustAgent(t, agentloop.Config{Model: two, Tools: newCMS().tools(), Logger: quiet, Observer: func(e agentloop.Event) {
		if e.Kind == agentloop.EventToolCall {
			panic("observer boom")
		}
	}}).Run(t.Context(), agentloop.RunInput{ThreadID: "t4", Input: "hi"})
	if err != nil || res.Output != "done" {
		t.Fatalf("observer panic: %v, %+v", err, res)
	}
	for _, c := range toolContents(res.Messages) {
		if !strings.Contains(c, "observer boom") {
			t.Errorf("tool result %q, want the observer's panic", c)
		}
	}

	// A panic in the caller's Stream func, which langchaingo's Anthropic
	// client calls from a goroutine of its own while it reads the SSE
	// stream, is an error of the model call.
	streamer := newAnthropic(t, &fakeAnthropic{policy: func(int, anthropicRequest) string {
		return anthropicMessage("end_turn", anthropicText("some words"))
	}})
	_, err = mustAgent(t, agentloop.Config{Model: streamer, Stream: func(context.Context, []byte) error { panic("stream boom") }}).
		Run(t.Context(), agentloop.RunInput{ThreadID: "t3", Input: "hi"})
	if !errors.Is(err, agentloop.ErrPanic) {
		t.Errorf("err = %v, want ErrPanic", err)
	}
}

// TestModel03_StopReasons: a final answer cut by the output limit or
// withheld by a filter is an error the caller can test for, with the
// partial result; the stop reason is in the Result and the events.
func TestModel03_StopReasons(t *testing.T) {
	oaJSON := func(finish, content string) string {
		b, _ := json.Marshal(content)
		return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"` + finish + `",
		  "message":{"role":"assistant","content":` + string(b) + `}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	}
	const head = `{"id":"s","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,`
	tests := []struct {
		name   string
		model  func(t *testing.T) llms.Model
		want   error
		reason string
		output string
	}{
		{"openai-json-length", func(t *testing.T) llms.Model {
			return openAIPolicy(t, func(chatRequest) string { return oaJSON("length", "The three sections are: hero, te") })
		}, agentloop.ErrTruncated, "length", "The three sections are: hero, te"},
		{"openai-sse-content-filter", func(t *testing.T) llms.Model {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, sse(head+`"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
					head+`"delta":{},"finish_reason":"content_filter"}]}`))
			}))
			t.Cleanup(srv.Close)
			llm, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("t"), openai.WithModel("m"))
			if err != nil {
				t.Fatal(err)
			}
			return llm
		}, agentloop.ErrFiltered, "content_filter", ""},
		{"anthropic-max-tokens", func(t *testing.T) llms.Model {
			return newAnthropic(t, &fakeAnthropic{policy: func(int, anthropicRequest) string {
				return anthropicMessage("max_tokens", anthropicText("Part one of the ans"))
			}})
		}, agentloop.ErrTruncated, "max_tokens", "Part one of the ans"},
		{"anthropic-refusal", func(t *testing.T) llms.Model {
			return newAnthropic(t, &fakeAnthropic{policy: func(int, anthropicRequest) string {
				return anthropicMessage("refusal", anthropicText("I can"))
			}})
		}, agentloop.ErrFiltered, "refusal", "I can"},
		{"openai-json-stop", func(t *testing.T) llms.Model {
			return openAIPolicy(t, func(chatRequest) string { return oaJSON("stop", "Done.") })
		}, nil, "stop", "Done."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var reasons []string
			a := mustAgent(t, agentloop.Config{Model: tt.model(t), Stream: streamIf(tt.name), Observer: func(e agentloop.Event) {
				if e.Kind == agentloop.EventModelCall {
					mu.Lock()
					reasons = append(reasons, e.StopReason)
					mu.Unlock()
				}
			}})
			res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "List the sections"})
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if res == nil || res.StopReason != tt.reason || res.Output != tt.output || res.Steps != 1 {
				t.Fatalf("result %+v, want stop reason %q and output %q", res, tt.reason, tt.output)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(reasons) != 1 || reasons[0] != tt.reason {
				t.Errorf("model call events carry %q, want %q", reasons, tt.reason)
			}
		})
	}
}

// streamIf makes the SSE case ask for a stream.
func streamIf(name string) func(context.Context, []byte) error {
	if !strings.Contains(name, "sse") {
		return nil
	}
	return func(context.Context, []byte) error { return nil }
}

// TestModel05_UnofferedToolNamesDoNotRun: a model that calls the
// scratchpad's internal name (working-memory/update, offered as
// working_memory_update) gets the unknown-tool result, the update is not
// applied, and the call is replayed under a name providers accept, so
// the next step goes through the real Anthropic client.
func TestModel05_UnofferedToolNamesDoNotRun(t *testing.T) {
	wm, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeAnthropic{policy: func(n int, req anthropicRequest) string {
		if n == 0 {
			return anthropicMessage("tool_use", anthropicToolUse("toolu_1", "working-memory/update", `{"task":"sneaked in"}`))
		}
		return anthropicMessage("end_turn", anthropicText("ok"))
	}}
	a := mustAgent(t, agentloop.Config{Model: newAnthropic(t, fake), Layers: []layer.Layer{wm}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "remember the task"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "ok" || fake.count() != 2 {
		t.Fatalf("output %q after %d requests", res.Output, fake.count())
	}
	results := toolContents(res.Messages)
	if len(results) != 1 || !strings.Contains(results[0], `unknown tool "working-memory/update"`) {
		t.Errorf("tool results %q, want the unknown-tool error", results)
	}
	if strings.Contains(fake.requests[1].System, "sneaked in") {
		t.Errorf("the unoffered call updated the scratchpad:\n%s", fake.requests[1].System)
	}
	for _, m := range res.Messages {
		for _, p := range m.Parts {
			if c, ok := p.(llms.ToolCall); ok {
				if err := agentloop.ValidateToolName(c.FunctionCall.Name); err != nil {
					t.Errorf("replayed call name: %v", err)
				}
			}
		}
	}
}

// usageModel answers every call with a createPage call (or, once spawn
// is offered and spawn is set, with spawn calls) reporting info as usage.
func usageModel(info map[string]any) *agenttest.Model {
	return agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		c := agenttest.Calls(agenttest.Call("createPage", `{"title":"x"}`))
		c.GenerationInfo = info
		return c, nil
	})
}

// TestModel06_ChildrenCountAgainstTheRun: a model that spawns 50
// children per step at every depth. The children per step and per run
// are bounded, their tokens count against the parent's MaxTokens and
// appear in its usage, and no goroutine is left after the run.
func TestModel06_ChildrenCountAgainstTheRun(t *testing.T) {
	before := runtime.NumGoroutine()
	var calls atomic.Int64
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		calls.Add(1)
		var c *llms.ContentChoice
		if r.HasTool(agentloop.SpawnToolName) {
			var spawns []llms.ToolCall
			for range 50 {
				spawns = append(spawns, agenttest.Call(agentloop.SpawnToolName, `{"input":"subtask"}`))
			}
			c = agenttest.Calls(spawns...)
		} else {
			c = agenttest.Text("leaf done")
		}
		c.GenerationInfo = map[string]any{"PromptTokens": 900, "CompletionTokens": 100, "TotalTokens": 1000}
		return c, nil
	})
	var children atomic.Int64
	// A resource-scoped layer, so that every child has layers and their
	// hook runners.
	layers := []layer.Layer{looptest.NewProfile("profile", layer.ScopeResource)}
	a := mustAgent(t, agentloop.Config{Model: model, MaxTokens: 5000, MaxDepth: 2, Layers: layers, Observer: func(e agentloop.Event) {
		if e.Kind == agentloop.EventRunStart && e.Depth > 0 {
			children.Add(1)
		}
	}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "storm", Input: "go"})
	if !errors.Is(err, agentloop.ErrMaxTokens) {
		t.Errorf("err = %v, want ErrMaxTokens", err)
	}
	n := calls.Load()
	t.Logf("%d model calls, %d children, usage %+v", n, children.Load(), res.Usage)
	if res.Usage.TotalTokens != int(n)*1000 {
		t.Errorf("usage %d tokens, want %d (every call, children included)", res.Usage.TotalTokens, n*1000)
	}
	if c := children.Load(); c > agentloop.DefaultMaxChildrenPerRun {
		t.Errorf("%d children, want at most %d", c, agentloop.DefaultMaxChildrenPerRun)
	}
	// Calls start only while the run is under its limit; the ones already
	// under way when it is reached finish (at most one per running run).
	if n > 5+agentloop.DefaultMaxChildrenPerRun {
		t.Errorf("%d model calls for a 5,000-token limit at 1,000 per call", n)
	}
	// Every goroutine the run started ends (the layer runners park for a
	// second before they exit).
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines before the run, %d after:\n%s", before, g, buf[:runtime.Stack(buf, true)])
	}

	// The per-run bound, without a token limit: children at every depth
	// count against it.
	children.Store(0)
	a = mustAgent(t, agentloop.Config{Model: model, MaxDepth: 2, MaxChildrenPerRun: 5, MaxSteps: 2, Observer: func(e agentloop.Event) {
		if e.Kind == agentloop.EventRunStart && e.Depth > 0 {
			children.Add(1)
		}
	}})
	res, _ = a.Run(t.Context(), agentloop.RunInput{ThreadID: "run", Input: "go"})
	if c := children.Load(); c != 5 {
		t.Errorf("%d children, want MaxChildrenPerRun (5)", c)
	}
	if !strings.Contains(strings.Join(toolContents(res.Messages), "\n"), strings.TrimPrefix(agentloop.ErrMaxChildren.Error(), "agentloop: ")) {
		t.Errorf("no spawn refused with ErrMaxChildren: %q", toolContents(res.Messages))
	}

	// The per-step bound: 50 calls in one step start at most
	// MaxChildrenPerStep children; the others are answered with an error.
	children.Store(0)
	calls.Store(0)
	a = mustAgent(t, agentloop.Config{Model: model, MaxDepth: 1, MaxChildrenPerStep: 3, MaxSteps: 2, Observer: func(e agentloop.Event) {
		if e.Kind == agentloop.EventRunStart && e.Depth > 0 {
			children.Add(1)
		}
	}})
	res, _ = a.Run(t.Context(), agentloop.RunInput{ThreadID: "step", Input: "go"})
	if c := children.Load(); c != 6 {
		t.Errorf("%d children over 2 steps, want 3 per step", c)
	}
	var refused int
	for _, c := range toolContents(res.Messages) {
		if strings.Contains(c, "child agents are started per step") {
			refused++
		}
	}
	// Calls beyond MaxToolCallsPerStep (16) are refused by that bound.
	if want := 2 * (agentloop.DefaultMaxToolCallsPerStep - 3); refused != want {
		t.Errorf("%d calls refused, want %d", refused, want)
	}
}

// TestModel07_ImplausibleUsageIsEstimated: reported usage that is
// negative, absurd (1e300, which wraps when converted to int) or all zero
// (langchaingo's OpenAI client when a server omits usage) is replaced by
// the estimate, marked Estimated, so MaxTokens still applies.
func TestModel07_ImplausibleUsageIsEstimated(t *testing.T) {
	tests := []struct {
		name  string
		model func(t *testing.T) llms.Model
	}{
		{"negative", func(*testing.T) llms.Model {
			return usageModel(map[string]any{"PromptTokens": -5000, "CompletionTokens": 10, "TotalTokens": -4990})
		}},
		{"1e300", func(*testing.T) llms.Model {
			return usageModel(map[string]any{"prompt_tokens": 1e300, "completion_tokens": 1e300, "total_tokens": 1e300})
		}},
		{"nan", func(*testing.T) llms.Model {
			return usageModel(map[string]any{"PromptTokens": math.NaN(), "CompletionTokens": 1.0})
		}},
		{"int64-max", func(*testing.T) llms.Model {
			return usageModel(map[string]any{"InputTokens": int64(math.MaxInt64), "OutputTokens": 10})
		}},
		{"zero", func(*testing.T) llms.Model {
			return usageModel(map[string]any{"PromptTokens": 0, "CompletionTokens": 0, "TotalTokens": 0})
		}},
		{"openai-omits-usage", func(t *testing.T) llms.Model {
			return openAIPolicy(t, func(chatRequest) string {
				return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
				  "message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"createPage","arguments":"{\"title\":\"x\"}"}}]}}]}`
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := mustAgent(t, agentloop.Config{Model: tt.model(t), Tools: newCMS().tools(), MaxTokens: 300, MaxSteps: 50, Instructions: strings.Repeat("Manage the CMS. ", 10)})
			res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
			if !errors.Is(err, agentloop.ErrMaxTokens) {
				t.Fatalf("err = %v, want ErrMaxTokens (usage %+v)", err, res.Usage)
			}
			u := res.Usage
			if !u.Estimated || u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens || u.TotalTokens > 10000 {
				t.Errorf("usage %+v, want a positive estimate", u)
			}
		})
	}

	// Plausible reported usage stays exact; stored totals are the sum.
	store := storage.NewMemoryStore()
	a := mustAgent(t, agentloop.Config{Model: usageModel(map[string]any{"PromptTokens": 80, "CompletionTokens": 20, "TotalTokens": 100}), Tools: newCMS().tools(), MaxTokens: 250, Store: store})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if !errors.Is(err, agentloop.ErrMaxTokens) || res.Usage != (agentloop.Usage{PromptTokens: 240, CompletionTokens: 60, TotalTokens: 300}) {
		t.Errorf("err = %v, usage %+v", err, res.Usage)
	}
}

// choicesModel answers the first call with the given choices and every
// later call with "done".
type choicesModel struct {
	mu      sync.Mutex
	n       int
	choices []*llms.ContentChoice
}

func (m *choicesModel) GenerateContent(ctx context.Context, _ []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	if m.n == 1 {
		return &llms.ContentResponse{Choices: m.choices}, nil
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "done", StopReason: "stop"}}}, nil
}

func (m *choicesModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// TestModel02_AlternativesWhenAskedFor: with llms.WithN(2) the choices
// are alternative answers and only the first is taken; without it they
// are parts of one turn.
func TestModel02_AlternativesWhenAskedFor(t *testing.T) {
	choices := func() []*llms.ContentChoice {
		return []*llms.ContentChoice{
			{Content: "Plan A. ", ToolCalls: []llms.ToolCall{agenttest.Call("createPage", `{"title":"A"}`)}},
			{Content: "Plan B.", ToolCalls: []llms.ToolCall{agenttest.Call("createPage", `{"title":"B"}`)}},
		}
	}
	for _, tt := range []struct {
		name  string
		opts  []llms.CallOption
		pages int
		text  string
	}{
		{"parts", nil, 2, "Plan A. Plan B."},
		{"alternatives", []llms.CallOption{llms.WithN(2)}, 1, "Plan A. "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cms := newCMS()
			a := mustAgent(t, agentloop.Config{Model: &choicesModel{choices: choices()}, Tools: cms.tools(), CallOptions: tt.opts})
			res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
			if err != nil {
				t.Fatal(err)
			}
			if len(cms.pages) != tt.pages || res.ToolCalls != tt.pages {
				t.Errorf("%d pages, %d tool calls, want %d", len(cms.pages), res.ToolCalls, tt.pages)
			}
			if got := res.Messages[1].Parts[0].(llms.TextContent).Text; got != tt.text {
				t.Errorf("assistant text %q, want %q", got, tt.text)
			}
		})
	}
}
