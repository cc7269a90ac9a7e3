package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/storage"
)

func TestRunResolvesEntityFromMemory(t *testing.T) {
	cms := newCMS()
	notes := looptest.NewNotes("entities", layer.ScopeThread)
	model := agenttest.NewFunc(cmsPolicy)
	a := mustAgent(t, agentloop.Config{Model: model, Instructions: "You manage a CMS.", Layers: []layer.Layer{notes}, Tools: cms.tools()})

	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t1", Input: "Create an About page"})
	if err != nil {
		t.Fatalf("run 1: %v", err)
	}
	if res.Steps != 2 || res.ToolCalls != 1 {
		t.Errorf("run 1: steps=%d toolCalls=%d, want 2 and 1", res.Steps, res.ToolCalls)
	}
	if !strings.Contains(res.Output, "page_101") {
		t.Errorf("run 1 output %q does not mention the new page", res.Output)
	}
	res, err = a.Run(t.Context(), agentloop.RunInput{ThreadID: "t1", Input: "What sections are on this page?"})
	if err != nil {
		t.Fatalf("run 2: %v", err)
	}
	if got := cms.listed(); len(got) != 1 || got[0] != "page_101" {
		t.Fatalf("listSections called with %v, want [page_101]", got)
	}
	if !strings.Contains(res.Output, `"hero","team","contact"`) {
		t.Errorf("run 2 output %q lacks the sections", res.Output)
	}
	// The model saw the memory block and the instructions in its system
	// prompt, and the tools on the wire.
	reqs := model.Requests()
	last := reqs[len(reqs)-2]
	if sys := last.System(); !strings.HasPrefix(sys, "You manage a CMS.") || !strings.Contains(sys, "<notes>") {
		t.Errorf("system prompt:\n%s", sys)
	}
	want := []string{"createPage", "listSections", "spawn_agent", "entities_note"}
	if got := last.ToolNames(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("tools offered %v, want %v", got, want)
	}
}

func TestToolFailuresGoBackToTheModel(t *testing.T) {
	boom := agentloop.Tool{Name: "boom", Description: "fails", Call: func(context.Context, json.RawMessage) (string, error) {
		return "", errors.New("disk full")
	}}
	panicky := agentloop.Tool{Name: "panicky", Call: func(context.Context, json.RawMessage) (string, error) { panic("oops") }}
	cms := newCMS()
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(
			agenttest.Call("nope", `{}`),
			agenttest.Call("createPage", `{"title":""}`),
			agenttest.Call("createPage", `[1]`),
			agenttest.Call("createPage", `{not json`),
			agenttest.Call("boom", `{}`),
			agenttest.Call("panicky", `{}`),
			agenttest.Call("entities_note", `{"text":5}`),
			agenttest.Call("createPage", `{"title":"Ok"}`),
		)),
		agenttest.Reply(agenttest.Text("recovered")),
	)
	a := mustAgent(t, agentloop.Config{Model: model, Tools: append(cms.tools(), boom, panicky), Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Output != "recovered" {
		t.Errorf("output %q", res.Output)
	}
	got := toolContents(res.Messages)
	wants := []string{
		`error: unknown tool "nope"; the available tools are: createPage, listSections, boom, panicky, spawn_agent, entities_note`,
		"error: invalid tool arguments: createPage:",
		"error: createPage: invalid tool arguments: want a JSON object",
		"error: createPage: invalid tool arguments: not valid JSON",
		"error: disk full",
		"error: panic in tool panicky: oops",
		"error: invalid tool arguments: entities_note:",
		`{"id":"page_101","title":"Ok","sections":["hero","team","contact"]}`,
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d tool results, want %d: %q", len(got), len(wants), got)
	}
	for i, w := range wants {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("result %d = %q, want prefix %q", i, got[i], w)
		}
	}
	if !strings.Contains(got[1], "minLength") {
		t.Errorf("schema error does not say what is wrong: %q", got[1])
	}
	// Every tool message has exactly one part, answering a call by ID.
	calls := map[string]bool{}
	for _, m := range res.Messages {
		for _, p := range m.Parts {
			if c, ok := p.(llms.ToolCall); ok {
				calls[c.ID] = true
			}
		}
		if m.Role == llms.ChatMessageTypeTool {
			if len(m.Parts) != 1 {
				t.Fatalf("tool message with %d parts", len(m.Parts))
			}
			if id := m.Parts[0].(llms.ToolCallResponse).ToolCallID; !calls[id] {
				t.Errorf("tool result for unknown call %q", id)
			}
		}
	}
}

func TestNewRejectsBadTools(t *testing.T) {
	ok := func(context.Context, json.RawMessage) (string, error) { return "", nil }
	long := strings.Repeat("a", 65)
	tests := []struct {
		name  string
		tools []agentloop.Tool
		cfg   func(*agentloop.Config)
	}{
		{"empty name", []agentloop.Tool{{Name: "", Call: ok}}, nil},
		{"slash", []agentloop.Tool{{Name: "cms/create", Call: ok}}, nil},
		{"dot", []agentloop.Tool{{Name: "pages.create", Call: ok}}, nil},
		{"space", []agentloop.Tool{{Name: "create page", Call: ok}}, nil},
		{"65 bytes", []agentloop.Tool{{Name: long, Call: ok}}, nil},
		{"duplicate", []agentloop.Tool{{Name: "a", Call: ok}, {Name: "a", Call: ok}}, nil},
		{"nil call", []agentloop.Tool{{Name: "a"}}, nil},
		{"bad schema", []agentloop.Tool{{Name: "a", Call: ok, Parameters: json.RawMessage(`{"type":"nope"}`)}}, nil},
		{"schema not json", []agentloop.Tool{{Name: "a", Call: ok, Parameters: json.RawMessage(`{`)}}, nil},
		{"spawn name taken", []agentloop.Tool{{Name: "spawn_agent", Call: ok}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agentloop.New(agentloop.Config{Model: agenttest.New(), Tools: tt.tools})
			if !errors.Is(err, agentloop.ErrInvalidTool) {
				t.Fatalf("New: %v, want ErrInvalidTool", err)
			}
		})
	}
	// Valid edge cases.
	for _, name := range []string{"a", strings.Repeat("Z", 64), "create_page-2"} {
		if _, err := agentloop.New(agentloop.Config{Model: agenttest.New(), Tools: []agentloop.Tool{{Name: name, Call: ok}}}); err != nil {
			t.Errorf("name %q rejected: %v", name, err)
		}
	}
	if _, err := agentloop.New(agentloop.Config{Model: agenttest.New(), DisableSpawnTool: true, Tools: []agentloop.Tool{{Name: "spawn_agent", Call: ok}}}); err != nil {
		t.Errorf("spawn_agent with DisableSpawnTool: %v", err)
	}
	if _, err := agentloop.New(agentloop.Config{}); !errors.Is(err, agentloop.ErrNoModel) {
		t.Errorf("no model: %v", err)
	}
	if _, err := agentloop.New(agentloop.Config{Model: agenttest.New(), Template: "{{#if}"}); !errors.Is(err, agentloop.ErrInvalidConfig) {
		t.Errorf("bad template: %v", err)
	}
}

func TestMaxStepsCarriesPartialResult(t *testing.T) {
	loop := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Calls(agenttest.Call("createPage", `{"title":"x"}`)), nil
	})
	store := storage.NewMemoryStore()
	a := mustAgent(t, agentloop.Config{Model: loop, Tools: newCMS().tools(), MaxSteps: 3, Store: store})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if !errors.Is(err, agentloop.ErrMaxSteps) {
		t.Fatalf("err = %v, want ErrMaxSteps", err)
	}
	var le *agentloop.LimitError
	if !errors.As(err, &le) || le.Result != res {
		t.Fatalf("err %T does not carry the result", err)
	}
	if res.Steps != 3 || res.ToolCalls != 3 || len(toolContents(res.Messages)) != 3 {
		t.Errorf("partial result: steps=%d calls=%d results=%d", res.Steps, res.ToolCalls, len(toolContents(res.Messages)))
	}
	// The checkpoint has the same messages: the thread can continue.
	ck, err := a.LoadCheckpoint(t.Context(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if len(ck.Messages) != len(res.Messages) || ck.Steps != 3 {
		t.Errorf("checkpoint has %d messages and %d steps, result %d", len(ck.Messages), ck.Steps, len(res.Messages))
	}
}

func TestMaxTokens(t *testing.T) {
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		c := agenttest.Calls(agenttest.Call("createPage", `{"title":"x"}`))
		c.GenerationInfo = map[string]any{"PromptTokens": 80, "CompletionTokens": 20, "TotalTokens": 100}
		return c, nil
	})
	a := mustAgent(t, agentloop.Config{Model: model, Tools: newCMS().tools(), MaxTokens: 250})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if !errors.Is(err, agentloop.ErrMaxTokens) {
		t.Fatalf("err = %v, want ErrMaxTokens", err)
	}
	want := agentloop.Usage{PromptTokens: 240, CompletionTokens: 60, TotalTokens: 300}
	if res.Steps != 3 || res.Usage != want {
		t.Errorf("steps=%d usage=%+v, want 3 and %+v", res.Steps, res.Usage, want)
	}
}

func TestEstimatedUsage(t *testing.T) {
	a := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("four words right here"))), Instructions: strings.Repeat("x", 400)})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	u := res.Usage
	if !u.Estimated || u.PromptTokens < 100 || u.CompletionTokens < 5 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage %+v", u)
	}
}

// blockingTool blocks until ctx ends.
func blockingTool(started chan<- struct{}) agentloop.Tool {
	return agentloop.Tool{Name: "wait", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
		if started != nil {
			close(started)
		}
		<-ctx.Done()
		return "", ctx.Err()
	}}
}

func TestTimeoutStopsAndCloses(t *testing.T) {
	notes := looptest.NewNotes("entities", layer.ScopeThread)
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("wait", `{}`))))
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{blockingTool(nil)}, Layers: []layer.Layer{notes}, Timeout: 50 * time.Millisecond})
	start := time.Now()
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if !errors.Is(err, agentloop.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want ErrTimeout and DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stopped after %v", d)
	}
	if res == nil || len(res.Messages) == 0 {
		t.Errorf("no partial result")
	}
	if n := notes.Closed(); n != 1 {
		t.Errorf("layer closed %d times, want 1", n)
	}
}

func TestCancelStopsPromptly(t *testing.T) {
	notes := looptest.NewNotes("entities", layer.ScopeThread)
	started := make(chan struct{})
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("wait", `{}`))))
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{blockingTool(started)}, Layers: []layer.Layer{notes}})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	_, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t", Input: "go"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, agentloop.ErrTimeout) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := notes.Closed(); n != 1 {
		t.Errorf("layer closed %d times, want 1", n)
	}
	// Model errors close the layers too.
	failing := agenttest.New(func(context.Context, agenttest.Request) (*llms.ContentChoice, error) { return nil, errors.New("503") })
	notes2 := looptest.NewNotes("entities", layer.ScopeThread)
	a = mustAgent(t, agentloop.Config{Model: failing, Layers: []layer.Layer{notes2}})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"}); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("model error: %v", err)
	}
	if n := notes2.Closed(); n != 1 {
		t.Errorf("layer closed %d times after a model error, want 1", n)
	}
}

func TestToolsRunConcurrentlyExceptExclusive(t *testing.T) {
	var cur, peak, exclusiveOverlap atomic.Int32
	var exclusiveRunning atomic.Bool
	track := func(name string, exclusive bool) agentloop.Tool {
		return agentloop.Tool{Name: name, Exclusive: exclusive, Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
			n := cur.Add(1)
			defer cur.Add(-1)
			if exclusive {
				exclusiveRunning.Store(true)
				defer exclusiveRunning.Store(false)
				if n != 1 {
					exclusiveOverlap.Add(1)
				}
			} else if exclusiveRunning.Load() {
				exclusiveOverlap.Add(1)
			}
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			return name, nil
		}}
	}
	var calls []llms.ToolCall
	for _, n := range []string{"p", "p", "p", "x", "p", "p"} {
		calls = append(calls, agenttest.Call(n, `{}`))
	}
	model := agenttest.New(agenttest.Reply(agenttest.Calls(calls...)), agenttest.Reply(agenttest.Text("done")))
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{track("p", false), track("x", true)}, ToolConcurrency: 3})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p != 3 {
		t.Errorf("peak concurrency %d, want 3", p)
	}
	if n := exclusiveOverlap.Load(); n != 0 {
		t.Errorf("exclusive tool overlapped %d times", n)
	}
	if got := strings.Join(toolContents(res.Messages), ""); got != "pppxpp" {
		t.Errorf("results out of order: %q", got)
	}
}

func TestMaxToolCallsPerStep(t *testing.T) {
	var ran atomic.Int32
	tool := agentloop.Tool{Name: "t", Call: func(context.Context, json.RawMessage) (string, error) { ran.Add(1); return "ok", nil }}
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("t", ""), agenttest.Call("t", ""), agenttest.Call("t", ""))), agenttest.Reply(agenttest.Text("done")))
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{tool}, MaxToolCallsPerStep: 2})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	got := toolContents(res.Messages)
	if ran.Load() != 2 || len(got) != 3 || !strings.Contains(got[2], "at most 2 tool calls") {
		t.Errorf("ran %d, results %q", ran.Load(), got)
	}
}

func TestStreaming(t *testing.T) {
	var mu sync.Mutex
	var chunks []string
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("createPage", `{"title":"a"}`))), agenttest.Reply(agenttest.Text("all done now")))
	a := mustAgent(t, agentloop.Config{Model: model, Tools: newCMS().tools(), Stream: func(ctx context.Context, c []byte) error {
		mu.Lock()
		defer mu.Unlock()
		chunks = append(chunks, string(c))
		return nil
	}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(chunks, "") != res.Output || len(chunks) != 3 {
		t.Errorf("streamed %q, output %q", chunks, res.Output)
	}
}

func TestObserverEvents(t *testing.T) {
	var mu sync.Mutex
	kinds := map[agentloop.EventKind]int{}
	var steps []agentloop.Event
	a := mustAgent(t, agentloop.Config{
		Model:  agenttest.NewFunc(cmsPolicy),
		Tools:  newCMS().tools(),
		Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)},
		Observer: func(e agentloop.Event) {
			mu.Lock()
			defer mu.Unlock()
			kinds[e.Kind]++
			if e.Kind == agentloop.EventStep {
				steps = append(steps, e)
			}
		},
	})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Create an About page"}); err != nil {
		t.Fatal(err)
	}
	want := map[agentloop.EventKind]int{agentloop.EventRunStart: 1, agentloop.EventRunEnd: 1, agentloop.EventModelCall: 2, agentloop.EventToolCall: 1, agentloop.EventStep: 2, agentloop.EventCheckpoint: 2}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%s events: %d, want %d", k, kinds[k], n)
		}
	}
	// init, 2 recalls, 2 stores, 2 snapshots, close at least.
	if kinds[agentloop.EventLayerHook] < 7 {
		t.Errorf("layer hook events: %d", kinds[agentloop.EventLayerHook])
	}
	for _, s := range steps {
		if s.Duration < s.ModelTime+s.ToolTime {
			t.Errorf("step %d: duration %v < model %v + tools %v", s.Step, s.Duration, s.ModelTime, s.ToolTime)
		}
	}
}

func TestTemplateAndVars(t *testing.T) {
	model := agenttest.New(agenttest.Reply(agenttest.Text("hi")))
	a := mustAgent(t, agentloop.Config{
		Model:        model,
		Instructions: "Be brief.",
		Template:     "{{{instructions}}} User: {{user}}. Today: {{day}}.",
		Vars:         map[string]any{"day": "Monday"},
	})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "x", Vars: map[string]any{"user": "Ann"}}); err != nil {
		t.Fatal(err)
	}
	if got := model.Requests()[0].System(); got != "Be brief. User: Ann. Today: Monday." {
		t.Errorf("system prompt %q", got)
	}
}

func TestRunInputErrors(t *testing.T) {
	a := mustAgent(t, agentloop.Config{Model: agenttest.New()})
	if _, err := a.Run(t.Context(), agentloop.RunInput{Input: "x"}); !errors.Is(err, agentloop.ErrNoThread) {
		t.Errorf("no thread: %v", err)
	}
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "new"}); !errors.Is(err, agentloop.ErrInvalidConfig) {
		t.Errorf("empty input on a new thread: %v", err)
	}
}

func TestRepeatedToolCallIDsAreMadeUnique(t *testing.T) {
	same := func() *llms.ContentChoice {
		c1, c2 := agenttest.Call("createPage", `{"title":"a"}`), agenttest.Call("createPage", `{"title":"b"}`)
		c1.ID, c2.ID = "x", "x"
		return agenttest.Calls(c1, c2)
	}
	model := agenttest.New(agenttest.Reply(same()), agenttest.Reply(same()), agenttest.Reply(agenttest.Text("done")))
	a := mustAgent(t, agentloop.Config{Model: model, Tools: newCMS().tools()})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	var ids, answered []string
	for _, m := range res.Messages {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				ids = append(ids, p.ID)
			case llms.ToolCallResponse:
				answered = append(answered, p.ToolCallID)
			}
		}
	}
	if strings.Join(ids, ",") != "x,x_1,x_2,x_3" || strings.Join(answered, ",") != "x,x_1,x_2,x_3" {
		t.Errorf("call IDs %v, answered %v", ids, answered)
	}
	// The last request held all four results, paired.
	if n := len(toolContents(model.Requests()[2].Messages)); n != 4 {
		t.Errorf("last request has %d tool results, want 4", n)
	}
}

func TestConcurrentRunsOnOneAgent(t *testing.T) {
	cms := newCMS()
	store := storage.NewMemoryStore()
	a := mustAgent(t, agentloop.Config{Model: agenttest.NewFunc(cmsPolicy), Store: store, Tools: cms.tools(),
		Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread), looptest.NewProfile("profile", layer.ScopeResource)}})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 8 {
		wg.Go(func() {
			thread := fmt.Sprintf("thread-%d", i)
			for _, in := range []string{"Create an About page", "What sections are on this page?"} {
				res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: thread, ResourceID: "shared", Input: in})
				if err != nil {
					errs <- err
					return
				}
				if strings.Contains(res.Output, "Which page") {
					errs <- fmt.Errorf("%s lost its page: %q", thread, res.Output)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Every thread listed the page it created itself.
	distinct := map[string]bool{}
	for _, id := range cms.listed() {
		distinct[id] = true
	}
	if len(cms.listed()) != 8 || len(distinct) != 8 {
		t.Errorf("listSections calls %v, want 8 distinct pages", cms.listed())
	}
}

func TestCallOptionsPassThrough(t *testing.T) {
	model := agenttest.New(agenttest.Reply(agenttest.Text("ok")))
	a := mustAgent(t, agentloop.Config{Model: model, Tools: newCMS().tools(), DisableSpawnTool: true,
		CallOptions: []llms.CallOption{llms.WithTemperature(0.25), llms.WithMaxTokens(77), llms.WithToolChoice("required")}})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "x"}); err != nil {
		t.Fatal(err)
	}
	o := model.Requests()[0].Options
	if o.Temperature != 0.25 || o.MaxTokens != 77 || o.ToolChoice != "required" || len(o.Tools) != 2 {
		t.Errorf("options reached the model as %+v", o)
	}
}

// TestEstimatedUsageOverSteps: when the model reports no usage, each
// call's estimated prompt tokens are the count of exactly the messages
// the model was sent, step after step, whether the history was sent
// whole or cut to fit the window (the run reuses each message's count
// from one step to the next; this checks the reuse against a plain
// count of the request).
func TestEstimatedUsageOverSteps(t *testing.T) {
	big := strings.Repeat("word ", 120)
	tool := agentloop.Tool{Name: "fetch", Call: func(context.Context, json.RawMessage) (string, error) { return big, nil }}
	for _, window := range []int{0, 700} { // 0: the default window, nothing is cut
		var mu sync.Mutex
		var usages []agentloop.Usage
		fetch := agenttest.Reply(agenttest.Calls(agenttest.Call("fetch", `{}`)))
		model := agenttest.New(fetch, fetch, fetch, fetch, agenttest.Reply(agenttest.Text("done")), fetch, agenttest.Reply(agenttest.Text("again")))
		a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{tool}, Instructions: "Fetch things.",
			ContextWindow: window, ResponseReserve: 100,
			Observer: func(e agentloop.Event) {
				if e.Kind == agentloop.EventModelCall {
					mu.Lock()
					usages = append(usages, e.Usage)
					mu.Unlock()
				}
			}})
		for _, in := range []string{"fetch four times", "once more"} {
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: in}); err != nil {
				t.Fatalf("window %d: %v", window, err)
			}
		}
		reqs := model.Requests()
		if len(usages) != len(reqs) {
			t.Fatalf("window %d: %d usages for %d requests", window, len(usages), len(reqs))
		}
		cut := false
		for i, r := range reqs {
			want := 0
			for _, m := range r.Messages {
				want += prompt.CountMessage(prompt.Estimate, m)
			}
			if u := usages[i]; !u.Estimated || u.PromptTokens != want {
				t.Errorf("window %d, call %d: prompt tokens %d (estimated %v), the request counts %d", window, i, u.PromptTokens, u.Estimated, want)
			}
			// Cut: some earlier tool result is missing (calls 0-3 and 5
			// fetch). The user's message is always there.
			fetched := min(i, 4) + max(0, i-5)
			cut = cut || len(toolContents(r.Messages)) < fetched
			if r.LastUser() == "" {
				t.Errorf("window %d, call %d: no user message", window, i)
			}
		}
		if cut != (window != 0) {
			t.Errorf("window %d: history cut = %v", window, cut)
		}
	}
}

// TestConfigIsACopy: changing what Config returns does not change the
// agent, which is immutable after New.
func TestConfigIsACopy(t *testing.T) {
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Text(r.System()), nil
	})
	a := mustAgent(t, agentloop.Config{Model: model, Template: "Hello {{who}}.", Vars: map[string]any{"who": "Ada"},
		Tools: newCMS().tools(), Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)}})
	c := a.Config()
	c.Vars["who"] = "Bob"
	c.Tools[0].Name = "renamed"
	c.Layers[0] = looptest.NewNotes("other", layer.ScopeThread)
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "Hello Ada." {
		t.Errorf("system prompt %q after changing the returned Config's Vars", res.Output)
	}
	c = a.Config()
	if c.Vars["who"] != "Ada" || c.Tools[0].Name != "createPage" || c.Layers[0].Spec().ID != "entities" {
		t.Errorf("Config changed through a returned copy: vars %v, tool %q, layer %q", c.Vars, c.Tools[0].Name, c.Layers[0].Spec().ID)
	}
}

// TestLayerOverBudgetIsTrimmedToItsShare: a layer that returns more than
// its allocated budget (it should trim to Query.Budget; this one does
// not) keeps only the items that fit its own share, so a later layer
// still gets its guaranteed minimum.
func TestLayerOverBudgetIsTrimmedToItsShare(t *testing.T) {
	var budgets sync.Map
	greedy := layer.Func(layer.Spec{ID: "greedy", Slot: 100, Budget: layer.Budget{Min: 10, Max: 20}}, func(ctx context.Context, q layer.Query) ([]layer.Item, error) {
		budgets.Store("greedy", q.Budget)
		var items []layer.Item
		for i := range 4 {
			items = append(items, layer.Item{Text: fmt.Sprintf("greedy item %d", i), Tokens: 15})
		}
		return items, nil
	})
	later := layer.Func(layer.Spec{ID: "later", Slot: 200, Budget: layer.Budget{Min: 20, Max: 40}}, func(ctx context.Context, q layer.Query) ([]layer.Item, error) {
		return []layer.Item{{Text: "later item", Tokens: 15}}, nil
	})
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Text(r.System()), nil
	})
	a, err := agentloop.New(agentloop.Config{Model: model, Instructions: "Hi.", Layers: []layer.Layer{greedy, later}, ContextWindow: 300, ResponseReserve: 100, DisableSpawnTool: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := budgets.Load("greedy")
	share := b.(int)
	if share < 15 || share >= 30 {
		t.Fatalf("greedy's budget is %v; the test needs room for one of its items, not two", share)
	}
	if n := strings.Count(res.Output, "greedy item"); n != 1 {
		t.Errorf("%d greedy items in the prompt, want the 1 that fits its budget of %v:\n%s", n, share, res.Output)
	}
	if !strings.Contains(res.Output, "later item") {
		t.Errorf("the later layer lost its share to the greedy one:\n%s", res.Output)
	}
}
