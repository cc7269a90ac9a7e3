package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// restartScenario creates the About page with one Agent, then asks about
// "this page" with a brand-new Agent (new layers, new model) on the same
// store, as a restarted process would. It returns the second model's
// requests and the CMS.
func restartScenario(t *testing.T, store storage.Store, keep bool) ([]agenttest.Request, *fakeCMS, *agentloop.Result) {
	t.Helper()
	cms := newCMS()
	cfg := func(m llms.Model) agentloop.Config {
		return agentloop.Config{Model: m, Instructions: "You manage a CMS.", Store: store, KeepToolResults: keep,
			Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)}, Tools: cms.tools()}
	}
	first := mustAgent(t, cfg(agenttest.NewFunc(cmsPolicy)))
	if _, err := first.Run(t.Context(), agentloop.RunInput{ThreadID: "thread-about", Input: "Create an About page"}); err != nil {
		t.Fatalf("first process: %v", err)
	}
	model := agenttest.NewFunc(cmsPolicy)
	second := mustAgent(t, cfg(model))
	res, err := second.Run(t.Context(), agentloop.RunInput{ThreadID: "thread-about", Input: "What sections are on this page?"})
	if err != nil {
		t.Fatalf("second process: %v", err)
	}
	return model.Requests(), cms, res
}

func TestRestartContinuesThread(t *testing.T) {
	reqs, cms, res := restartScenario(t, storage.NewMemoryStore(), false)
	if got := cms.listed(); len(got) != 1 || got[0] != "page_101" {
		t.Fatalf("after restart, listSections got %v, want [page_101]", got)
	}
	// The history came back: the first request of the new process holds
	// the first turn, with its tool result compacted to a reference.
	first := reqs[0]
	if n := len(first.Messages); n != 1+5 { // system + user, AI(call), tool, AI(answer), user
		t.Fatalf("first request after restart has %d messages", n)
	}
	old := toolContents(first.Messages)
	if len(old) != 1 || !strings.HasPrefix(old[0], "[compacted] earlier result of createPage (") || strings.Contains(old[0], "\n") {
		t.Errorf("old tool result not compacted to one line: %q", old)
	}
	// The current turn's result is whole.
	cur := toolContents(res.Messages)
	if cur[len(cur)-1] != `{"pageId":"page_101","sections":["hero","team","contact"]}` {
		t.Errorf("current result %q", cur[len(cur)-1])
	}
	if res.Steps != 2 {
		t.Errorf("steps %d", res.Steps)
	}
}

func TestRestartKeepToolResults(t *testing.T) {
	reqs, _, _ := restartScenario(t, storage.NewMemoryStore(), true)
	old := toolContents(reqs[0].Messages)
	if len(old) != 1 || !strings.HasPrefix(old[0], `{"id":"page_101"`) {
		t.Errorf("KeepToolResults: old result %q", old)
	}
}

func TestWithoutMemoryTheReferenceIsLost(t *testing.T) {
	// Control for the restart test: the same script, with no layer, cannot
	// resolve "this page" (the ID is not taken from anywhere else).
	store := storage.NewMemoryStore()
	cms := newCMS()
	a := mustAgent(t, agentloop.Config{Model: agenttest.NewFunc(cmsPolicy), Store: store, Tools: cms.tools()})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Create an About page"}); err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "What sections are on this page?"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "Which page do you mean?" || len(cms.listed()) != 0 {
		t.Errorf("output %q, listed %v", res.Output, cms.listed())
	}
}

func TestCheckpointConflict(t *testing.T) {
	store := storage.NewMemoryStore()
	key := storage.ThreadKey("t", thread.HeadName)
	// A tool that, mid-run, lets "another process" write the thread.
	intruder := agentloop.Tool{Name: "intrude", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
		_, err := store.Put(ctx, key, []byte(`{"version":1,"thread_id":"t","messages":[]}`), storage.AnyVersion)
		return "ok", err
	}}
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("intrude", ""))), agenttest.Reply(agenttest.Text("done")))
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: []agentloop.Tool{intruder}, Logger: slog.New(slog.DiscardHandler)})
	_, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if !errors.Is(err, agentloop.ErrCheckpoint) || !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("err = %v, want ErrCheckpoint and ErrConflict", err)
	}
	it, _ := store.Get(t.Context(), key)
	if string(it.Value) != `{"version":1,"thread_id":"t","messages":[]}` {
		t.Errorf("the other writer's checkpoint was overwritten: %s", it.Value)
	}
}

func TestBadCheckpointIsRefusedAndKept(t *testing.T) {
	for name, value := range map[string]string{
		"not json":          `{"version":1,`,
		"newer version":     `{"version":99,"thread_id":"t","messages":[]}`,
		"no version":        `{"thread_id":"t","messages":[]}`,
		"bad message":       `{"version":1,"messages":[{"role":"human","parts":[{"type":"nope"}]}]}`,
		"messages wrong":    `{"version":1,"messages":{}}`,
		"v2 image part":     `{"version":2,"messages":[{"role":"human","parts":[{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		"v2 system role":    `{"version":2,"messages":[{"role":"system","text":"x"}]}`,
		"v3 unknown role":   `{"version":3,"messages":[{"role":"human","text":"x"}]}`,
		"v3 messages wrong": `{"version":3,"messages":[{"role":"user","tool_calls":{}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			store := storage.NewMemoryStore()
			key := storage.ThreadKey("t", thread.HeadName)
			if _, err := store.Put(t.Context(), key, []byte(value), storage.NoVersion); err != nil {
				t.Fatal(err)
			}
			notes := looptest.NewNotes("entities", layer.ScopeThread)
			a := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("x"))), Store: store, Layers: []layer.Layer{notes}})
			_, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
			if !errors.Is(err, agentloop.ErrCheckpoint) {
				t.Fatalf("err = %v, want ErrCheckpoint", err)
			}
			it, _ := store.Get(t.Context(), key)
			if string(it.Value) != value {
				t.Errorf("stored checkpoint changed to %s", it.Value)
			}
			if _, err := a.LoadCheckpoint(t.Context(), "t"); !errors.Is(err, agentloop.ErrCheckpoint) {
				t.Errorf("LoadCheckpoint: %v", err)
			}
		})
	}
	a := mustAgent(t, agentloop.Config{Model: agenttest.New()})
	if _, err := a.LoadCheckpoint(t.Context(), "missing"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("missing checkpoint: %v", err)
	}
}

func TestRestoreLayersFromCheckpoint(t *testing.T) {
	// An execution-scoped layer persists nothing itself: only the
	// checkpoint's snapshot can bring its state back.
	store := storage.NewMemoryStore()
	noteCall := agenttest.Reply(agenttest.Calls(agenttest.Call("scratch_note", `{"text":"remember 42"}`)))
	newAgent := func(m llms.Model, restore bool) *agentloop.Agent {
		return mustAgent(t, agentloop.Config{Model: m, Store: store, RestoreLayers: restore, Layers: []layer.Layer{looptest.NewNotes("scratch", layer.ScopeExecution)}})
	}
	if _, err := newAgent(agenttest.New(noteCall, agenttest.Reply(agenttest.Text("ok"))), false).Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "note it"}); err != nil {
		t.Fatal(err)
	}
	for _, restore := range []bool{true, false} {
		m := agenttest.New(agenttest.Reply(agenttest.Text("ok")))
		if _, err := newAgent(m, restore).Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "again"}); err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(m.Requests()[0].System(), "remember 42")
		if has != restore {
			t.Errorf("RestoreLayers=%v: note in prompt = %v", restore, has)
		}
	}
	ck, err := newAgent(agenttest.New(), false).LoadCheckpoint(t.Context(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if ck.Version != thread.Version || ck.Agent != agentloop.DefaultName || ck.Steps != 4 || string(ck.Layers.Layers["scratch"]) != `{"seen":null,"notes":null}` || len(ck.Layers.Layers) != 1 {
		t.Errorf("checkpoint: version %d agent %q steps %d layers %d", ck.Version, ck.Agent, ck.Steps, len(ck.Layers.Layers))
	}
}

func TestContinueWithoutInput(t *testing.T) {
	store := storage.NewMemoryStore()
	loop := agenttest.Reply(agenttest.Calls(agenttest.Call("createPage", `{"title":"x"}`)))
	a := mustAgent(t, agentloop.Config{Model: agenttest.New(loop, loop, agenttest.Reply(agenttest.Text("finished"))), Store: store, Tools: newCMS().tools(), MaxSteps: 2})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Create pages"}); !errors.Is(err, agentloop.ErrMaxSteps) {
		t.Fatalf("first run: %v", err)
	}
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t"})
	if err != nil || res.Output != "finished" {
		t.Fatalf("continued run: %v, %+v", err, res)
	}
	humans := 0
	for _, m := range res.Messages {
		if m.Role == llms.ChatMessageTypeHuman {
			humans++
		}
	}
	if humans != 1 {
		t.Errorf("%d user messages after continuing, want 1", humans)
	}
}

// Issue 10: the agent's name moved from layer.Snapshot to the checkpoint
// alone; a checkpoint written by an agent of another name is still not
// restored into this agent's layers, and one of its own name is.
func TestPlain70_CheckpointOfAnotherAgentIsNotRestored(t *testing.T) {
	store := storage.NewMemoryStore()
	newAgent := func(name string, m llms.Model) *agentloop.Agent {
		return mustAgent(t, agentloop.Config{Name: name, Model: m, Store: store, RestoreLayers: true, Layers: []layer.Layer{looptest.NewNotes("scratch", layer.ScopeExecution)}})
	}
	noteCall := agenttest.Reply(agenttest.Calls(agenttest.Call("scratch_note", `{"text":"remember 42"}`)))
	if _, err := newAgent("writer", agenttest.New(noteCall, agenttest.Reply(agenttest.Text("ok")))).Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "note it"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		agent string
		want  bool
	}{{"writer", true}, {"other", false}} {
		m := agenttest.New(agenttest.Reply(agenttest.Text("ok")))
		if _, err := newAgent(tc.agent, m).Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "again"}); err != nil {
			t.Fatal(err)
		}
		if has := strings.Contains(m.Requests()[0].System(), "remember 42"); has != tc.want {
			t.Errorf("agent %q: note in prompt = %v, want %v", tc.agent, has, tc.want)
		}
	}
}
