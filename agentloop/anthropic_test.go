package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// anthropicBlock is a content block of an Anthropic Messages API request.
type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// anthropicRequest is the part of a Messages API request the tests read.
type anthropicRequest struct {
	Stream   bool   `json:"stream"`
	System   string `json:"system"`
	Messages []struct {
		Role    string           `json:"role"`
		Content []anthropicBlock `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

// turns returns the request's messages with consecutive messages of one
// role combined into one turn, as the Messages API does.
func (r anthropicRequest) turns() (roles []string, blocks [][]anthropicBlock) {
	for _, m := range r.Messages {
		if n := len(roles); n > 0 && roles[n-1] == m.Role {
			blocks[n-1] = append(blocks[n-1], m.Content...)
			continue
		}
		roles = append(roles, m.Role)
		blocks = append(blocks, append([]anthropicBlock(nil), m.Content...))
	}
	return roles, blocks
}

var anthropicToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// check refuses what the Messages API refuses: tool_use blocks without a
// tool_result in the next user turn (and the reverse), invalid tool names,
// empty text blocks, a conversation that does not start with the user.
func (r anthropicRequest) check() error {
	roles, blocks := r.turns()
	if len(roles) == 0 || roles[0] != "user" {
		return fmt.Errorf("messages: first message must use the user role")
	}
	for _, tl := range r.Tools {
		if !anthropicToolName.MatchString(tl.Name) {
			return fmt.Errorf("tools: name %q does not match %s", tl.Name, anthropicToolName)
		}
	}
	for i, bs := range blocks {
		uses := map[string]bool{}
		for _, b := range bs {
			switch b.Type {
			case "text":
				if b.Text == "" {
					return fmt.Errorf("messages.%d: text content blocks must be non-empty", i)
				}
			case "tool_use":
				if !anthropicToolName.MatchString(b.Name) {
					return fmt.Errorf("messages.%d: tool_use name %q does not match %s", i, b.Name, anthropicToolName)
				}
				var obj map[string]any
				if json.Unmarshal(b.Input, &obj) != nil || obj == nil {
					return fmt.Errorf("messages.%d: tool_use.input: Input should be a valid dictionary", i)
				}
				uses[b.ID] = true
			}
		}
		if len(uses) == 0 {
			continue
		}
		if i+1 >= len(blocks) {
			return fmt.Errorf("messages.%d: tool_use ids were found without tool_result blocks immediately after", i)
		}
		for _, b := range blocks[i+1] {
			if b.Type == "tool_result" {
				if !uses[b.ToolUseID] {
					return fmt.Errorf("messages.%d: unexpected tool_use_id %q in tool_result blocks", i+1, b.ToolUseID)
				}
				delete(uses, b.ToolUseID)
			}
		}
		if len(uses) > 0 {
			return fmt.Errorf("messages.%d: tool_use ids were found without tool_result blocks immediately after: %v", i, uses)
		}
	}
	return nil
}

// fakeAnthropic answers the Messages API with a policy and records the
// requests; requests the real API refuses get its 400 error.
type fakeAnthropic struct {
	mu       sync.Mutex
	policy   func(n int, req anthropicRequest) string
	requests []anthropicRequest
	raw      [][]byte
}

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != "k" {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req anthropicRequest
	err := json.Unmarshal(body, &req)
	if err == nil {
		err = req.check()
	}
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": err.Error()}})
		w.Write(b)
		return
	}
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, req)
	f.raw = append(f.raw, body)
	f.mu.Unlock()
	if req.Stream {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, anthropicSSE(f.policy(n, req)))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, f.policy(n, req))
}

// anthropicSSE turns a Messages API response into the server-sent events
// of the same response streamed: message_start, then each content block
// (text as text_delta, tool input as input_json_delta), message_delta
// with the stop reason and usage, message_stop.
func anthropicSSE(message string) string {
	var m struct {
		Content    []map[string]any `json:"content"`
		StopReason string           `json:"stop_reason"`
		Usage      map[string]any   `json:"usage"`
	}
	if err := json.Unmarshal([]byte(message), &m); err != nil {
		panic(err)
	}
	var b strings.Builder
	event := func(typ string, v map[string]any) {
		v["type"] = typ
		data, _ := json.Marshal(v)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", typ, data)
	}
	event("message_start", map[string]any{"message": map[string]any{"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": []any{}, "stop_reason": nil, "usage": map[string]any{"input_tokens": m.Usage["input_tokens"], "output_tokens": 1}}})
	for i, c := range m.Content {
		switch c["type"] {
		case "text":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		case "tool_use":
			event("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			input, _ := json.Marshal(c["input"])
			event("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		}
		event("content_block_stop", map[string]any{"index": i})
	}
	event("message_delta", map[string]any{"delta": map[string]any{"stop_reason": m.StopReason, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": m.Usage["output_tokens"]}})
	event("message_stop", map[string]any{})
	return b.String()
}

func (f *fakeAnthropic) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// anthropicMessage is a Messages API response with the given content
// blocks (JSON) and stop reason.
func anthropicMessage(stop string, blocks ...string) string {
	return `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[` + strings.Join(blocks, ",") + `],"stop_reason":"` + stop + `","stop_sequence":null,` +
		`"usage":{"input_tokens":100,"output_tokens":20}}`
}

func anthropicText(s string) string {
	b, _ := json.Marshal(s)
	return `{"type":"text","text":` + string(b) + `}`
}

func anthropicToolUse(id, name, input string) string {
	return `{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}`
}

// newAnthropic returns langchaingo's Anthropic client talking to f.
func newAnthropic(t *testing.T, f *fakeAnthropic) *anthropic.LLM {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	llm, err := anthropic.New(anthropic.WithBaseURL(srv.URL+"/v1"), anthropic.WithToken("k"), anthropic.WithModel("claude-sonnet-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

// TestModel02_SeveralChoicesOneTurn: langchaingo's Anthropic client
// returns one choice per content block, so Claude's usual answer (a text
// block, then tool_use blocks) arrives as several choices. They are one
// assistant turn: every tool call runs, and the follow-up request
// carries the text and every tool_use, each answered by its tool_result.
func TestModel02_SeveralChoicesOneTurn(t *testing.T) {
	t.Run("json", func(t *testing.T) { testSeveralChoices(t, nil) })
	var mu sync.Mutex
	var streamed strings.Builder
	t.Run("sse", func(t *testing.T) {
		testSeveralChoices(t, func(ctx context.Context, chunk []byte) error {
			mu.Lock()
			defer mu.Unlock()
			streamed.Write(chunk)
			return nil
		})
		if got := streamed.String(); got != "I'll create the page and note it.Created the About page." {
			t.Errorf("streamed %q", got)
		}
	})
}

func testSeveralChoices(t *testing.T, stream func(context.Context, []byte) error) {
	fake := &fakeAnthropic{policy: func(n int, req anthropicRequest) string {
		if n == 0 {
			return anthropicMessage("tool_use",
				anthropicText("I'll create the page and note it."),
				anthropicToolUse("toolu_01", "createPage", `{"title":"About"}`),
				anthropicToolUse("toolu_02", "entities_note", `{"text":"made About"}`))
		}
		return anthropicMessage("end_turn", anthropicText("Created the About page."))
	}}
	cms := newCMS()
	notes := looptest.NewNotes("entities", layer.ScopeThread)
	a := mustAgent(t, agentloop.Config{Model: newAnthropic(t, fake), Instructions: "You manage a CMS.", Tools: cms.tools(), Layers: []layer.Layer{notes}, Stream: stream})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Create an About page"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "Created the About page." || res.Steps != 2 || res.ToolCalls != 2 || len(cms.pages) != 1 {
		t.Fatalf("output %q, %d steps, %d tool calls, %d pages", res.Output, res.Steps, res.ToolCalls, len(cms.pages))
	}
	// One step's usage, not one per block.
	if want := (agentloop.Usage{PromptTokens: 200, CompletionTokens: 40, TotalTokens: 240}); res.Usage != want {
		t.Errorf("usage %+v, want %+v", res.Usage, want)
	}
	if len(fake.requests) != 2 || fake.requests[0].Stream != (stream != nil) {
		t.Fatalf("%d requests, stream %v", len(fake.requests), fake.requests[0].Stream)
	}
	roles, blocks := fake.requests[1].turns()
	if len(roles) != 3 || roles[1] != "assistant" || roles[2] != "user" {
		t.Fatalf("follow-up turns %v: %s", roles, fake.raw[1])
	}
	var got []string
	for _, b := range blocks[1] {
		got = append(got, b.Type+":"+b.Text+b.Name)
	}
	if want := "text:I'll create the page and note it.|tool_use:createPage|tool_use:entities_note"; strings.Join(got, "|") != want {
		t.Errorf("assistant turn replayed as %q, want %q", strings.Join(got, "|"), want)
	}
	if !strings.Contains(fake.requests[1].System, "note: made About") {
		t.Errorf("the note did not reach memory:\n%s", fake.requests[1].System)
	}
}

// TestModel04_MalformedArgumentsDoNotPoisonThread: a model on the OpenAI
// client sends arguments wrapped in a markdown fence in turn 1; the model
// is told they are not valid JSON. Turn 2 of the same thread runs on the
// Anthropic client, which decodes every replayed call's arguments: it
// goes through, the bad call replayed with {} and its raw text in the
// tool result.
func TestModel04_MalformedArgumentsDoNotPoisonThread(t *testing.T) {
	store := storage.NewMemoryStore()
	fenced := "```json\n{\"title\": \"About\"}\n```"
	fencedJSON, _ := json.Marshal(fenced)
	oa := &fakeOpenAI{responses: []string{
		`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",
		  "message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"createPage","arguments":` + string(fencedJSON) + `}}]}}],
		  "usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
		`{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop",
		  "message":{"role":"assistant","content":"I could not create it."}}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`,
	}}
	srv := httptest.NewServer(oa)
	defer srv.Close()
	oaLLM, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("t"), openai.WithModel("m"))
	if err != nil {
		t.Fatal(err)
	}
	cms := newCMS()
	a1 := mustAgent(t, agentloop.Config{Model: oaLLM, Tools: cms.tools(), Store: store})
	res, err := a1.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Create an About page"})
	if err != nil {
		t.Fatal(err)
	}
	if r := toolContents(res.Messages); len(r) != 1 || !strings.Contains(r[0], "not valid JSON") || !strings.Contains(r[0], fenced) {
		t.Errorf("turn 1 tool result %q, want the error and the raw arguments", r)
	}

	fake := &fakeAnthropic{policy: func(int, anthropicRequest) string {
		return anthropicMessage("end_turn", anthropicText("Created it this time."))
	}}
	// KeepToolResults: the raw arguments are kept in full in the thread.
	a2 := mustAgent(t, agentloop.Config{Model: newAnthropic(t, fake), Tools: cms.tools(), Store: store, KeepToolResults: true})
	res, err = a2.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Try again"})
	if err != nil {
		t.Fatalf("turn 2 on the Anthropic client: %v", err)
	}
	if res.Output != "Created it this time." || fake.count() != 1 {
		t.Fatalf("turn 2: output %q, %d requests", res.Output, fake.count())
	}
	_, blocks := fake.requests[0].turns()
	var input, result string
	for _, bs := range blocks {
		for _, b := range bs {
			switch b.Type {
			case "tool_use":
				input = string(b.Input)
			case "tool_result":
				json.Unmarshal(b.Content, &result)
			}
		}
	}
	if input != "{}" || !strings.Contains(result, fenced) {
		t.Errorf("replayed call input %s, result %q", input, result)
	}
}

// TestModel04_PoisonedThreadFromEarlierVersion: a thread stored before
// the fix, with the fenced arguments and an internal tool name in its
// history, continues on the Anthropic client: what is loaded is made
// replayable too.
func TestModel04_PoisonedThreadFromEarlierVersion(t *testing.T) {
	store := storage.NewMemoryStore()
	old := thread.Checkpoint{Version: 3, ThreadID: "t", Messages: []thread.Message{
		{Role: thread.RoleUser, Text: "Create an About page"},
		{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{
			{ID: "call_1", Name: "createPage", Arguments: "```json\n{}\n```"},
			{ID: "call_2", Name: "working-memory/update", Arguments: `{"a":1}`},
		}},
		{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "call_1", Name: "createPage", Content: "error: not valid JSON"}}},
		{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "call_2", Name: "working-memory/update", Content: "error: unknown tool"}}},
		{Role: thread.RoleAssistant, Text: "I could not."},
	}}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(t.Context(), storage.ThreadKey("t", thread.HeadName), b, storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	fake := &fakeAnthropic{policy: func(int, anthropicRequest) string {
		return anthropicMessage("end_turn", anthropicText("Done."))
	}}
	a := mustAgent(t, agentloop.Config{Model: newAnthropic(t, fake), Tools: newCMS().tools(), Store: store})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Try again"})
	if err != nil || res.Output != "Done." {
		t.Fatalf("continuing the old thread: %v, %+v", err, res)
	}
}

// TestModel04_EmptyAnswerDoesNotPoisonThread: a turn whose answer had no
// content at all (an OpenAI-style server answering content "" with no
// tool calls) was stored as an empty text part, which the Messages API
// refuses ("text content blocks must be non-empty"), so the thread could
// not continue on the Anthropic client. An empty assistant message is
// not replayed to it.
func TestModel04_EmptyAnswerDoesNotPoisonThread(t *testing.T) {
	store := storage.NewMemoryStore()
	oa := &fakeOpenAI{responses: []string{
		`{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop",
		  "message":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`,
	}}
	srv := httptest.NewServer(oa)
	defer srv.Close()
	oaLLM, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("t"), openai.WithModel("m"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := mustAgent(t, agentloop.Config{Model: oaLLM, Store: store}).Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Hello?"})
	if err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	if res.Output != "" {
		t.Fatalf("turn 1 output %q, want the empty answer", res.Output)
	}
	fake := &fakeAnthropic{policy: func(int, anthropicRequest) string {
		return anthropicMessage("end_turn", anthropicText("Here I am."))
	}}
	res, err = mustAgent(t, agentloop.Config{Model: newAnthropic(t, fake), Store: store}).Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Are you there?"})
	if err != nil {
		t.Fatalf("turn 2 on the Anthropic client: %v", err)
	}
	if res.Output != "Here I am." {
		t.Errorf("turn 2 output %q", res.Output)
	}
	roles, blocks := fake.requests[0].turns()
	if len(roles) != 1 || roles[0] != "user" || len(blocks[0]) != 2 {
		t.Errorf("turn 2 sent roles %v with blocks %v, want the two user messages as one turn", roles, blocks)
	}
}
