package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms/openai"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
)

// chatRequest is the part of an OpenAI chat completion request the test
// checks.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// fakeOpenAI answers chat completions from a script of raw JSON
// responses and records the requests.
type fakeOpenAI struct {
	mu        sync.Mutex
	responses []string
	requests  []chatRequest
	raw       [][]byte
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer t" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, req)
	f.raw = append(f.raw, body)
	f.mu.Unlock()
	if n >= len(f.responses) {
		http.Error(w, "script exhausted", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, f.responses[n])
}

func TestOpenAIWire(t *testing.T) {
	fake := &fakeOpenAI{responses: []string{
		`{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"finish_reason":"tool_calls",
		  "message":{"role":"assistant","content":null,"tool_calls":[
		    {"id":"call_abc","type":"function","function":{"name":"createPage","arguments":"{\"title\":\"About\"}"}},
		    {"id":"call_def","type":"function","function":{"name":"entities_note","arguments":"{\"text\":\"made About\"}"}}]}}],
		  "usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`,
		`{"id":"c2","object":"chat.completion","created":2,"model":"gpt-4o-mini","choices":[{"index":0,"finish_reason":"stop",
		  "message":{"role":"assistant","content":"Created the About page (page_101)."}}],
		  "usage":{"prompt_tokens":200,"completion_tokens":12,"total_tokens":212}}`,
	}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	llm, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("t"), openai.WithModel("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	cms := newCMS()
	a := mustAgent(t, agentloop.Config{Model: llm, Instructions: "You manage a CMS.", Tools: cms.tools(), Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Create an About page"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "Created the About page (page_101)." || res.Steps != 2 || res.ToolCalls != 2 {
		t.Errorf("result: %+v", res)
	}
	if want := (agentloop.Usage{PromptTokens: 320, CompletionTokens: 42, TotalTokens: 362}); res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	if len(fake.requests) != 2 {
		t.Fatalf("%d requests", len(fake.requests))
	}

	// Tool names on the wire are provider-safe, and schemas go verbatim.
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	var names []string
	params := map[string]string{}
	for _, tl := range fake.requests[0].Tools {
		if tl.Type != "function" || !valid.MatchString(tl.Function.Name) {
			t.Errorf("tool %+v not valid on the wire", tl)
		}
		names = append(names, tl.Function.Name)
		var buf bytes.Buffer
		json.Compact(&buf, tl.Function.Parameters)
		params[tl.Function.Name] = buf.String()
	}
	if got := strings.Join(names, ","); got != "createPage,listSections,spawn_agent,entities_note" {
		t.Errorf("tools on the wire: %s", got)
	}
	if want := `{"type":"object","properties":{"title":{"type":"string","minLength":1}},"required":["title"]}`; params["createPage"] != want {
		t.Errorf("createPage schema on the wire:\n%s\nwant\n%s", params["createPage"], want)
	}
	if !strings.Contains(params["entities_note"], `"additionalProperties":false`) {
		t.Errorf("layer tool schema on the wire: %s", params["entities_note"])
	}

	// The follow-up carries the assistant's tool calls, then one tool
	// message per call with its tool_call_id, then nothing else.
	msgs := fake.requests[1].Messages
	if len(msgs) != 5 || msgs[0].Role != "system" || msgs[1].Role != "user" || msgs[2].Role != "assistant" {
		t.Fatalf("follow-up messages: %s", fake.raw[1])
	}
	if len(msgs[2].ToolCalls) != 2 || msgs[2].ToolCalls[0].ID != "call_abc" || msgs[2].ToolCalls[1].Function.Name != "entities_note" {
		t.Errorf("assistant tool calls: %+v", msgs[2].ToolCalls)
	}
	for i, id := range []string{"call_abc", "call_def"} {
		m := msgs[3+i]
		if m.Role != "tool" || m.ToolCallID != id {
			t.Errorf("message %d: role %q tool_call_id %q, want tool %q", 3+i, m.Role, m.ToolCallID, id)
		}
	}
	var content string
	json.Unmarshal(msgs[3].Content, &content)
	if !strings.Contains(content, `"id":"page_101"`) {
		t.Errorf("tool result content %s", msgs[3].Content)
	}
	// Memory reached the second request's system prompt.
	var sys string
	json.Unmarshal(msgs[0].Content, &sys)
	if !strings.Contains(sys, "(id: page_101)") || !strings.Contains(sys, "note: made About") {
		t.Errorf("system prompt of the follow-up:\n%s", sys)
	}
}

// sse writes a streamed chat completion: one data line per chunk.
func sse(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

func TestOpenAIStreaming(t *testing.T) {
	const head = `{"id":"s","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,`
	fake := &fakeOpenAI{responses: []string{
		sse(
			head+`"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_s1","type":"function","function":{"name":"createPage","arguments":""}}]},"finish_reason":null}]}`,
			head+`"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"title\":"}}]},"finish_reason":null}]}`,
			head+`"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"About\"}"}}]},"finish_reason":null}]}`,
			head+`"delta":{},"finish_reason":"tool_calls"}]}`,
		),
		sse(
			head+`"delta":{"role":"assistant","content":"Created "},"finish_reason":null}]}`,
			head+`"delta":{"content":"page_101."},"finish_reason":null}]}`,
			head+`"delta":{},"finish_reason":"stop"}]}`,
		),
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fake.ServeHTTP(w, r)
	}))
	defer srv.Close()
	llm, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("t"), openai.WithModel("gpt-4o-mini"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var streamed []string
	cms := newCMS()
	a := mustAgent(t, agentloop.Config{Model: llm, Tools: cms.tools(), Stream: func(ctx context.Context, chunk []byte) error {
		mu.Lock()
		defer mu.Unlock()
		streamed = append(streamed, string(chunk))
		return nil
	}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Create an About page"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "Created page_101." || len(cms.pages) != 1 {
		t.Errorf("output %q, pages %d", res.Output, len(cms.pages))
	}
	if got := strings.Join(streamed, "|"); got != "Created |page_101." {
		t.Errorf("streamed %q, want only the answer's text", got)
	}
	if !strings.Contains(string(fake.raw[0]), `"stream":true`) {
		t.Errorf("request did not ask for a stream: %s", fake.raw[0])
	}
}
