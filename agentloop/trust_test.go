package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

var quiet = slog.New(slog.DiscardHandler)

// stores runs fn on the in-memory store and on SQLite.
func stores(t *testing.T, fn func(t *testing.T, store storage.Store)) {
	t.Run("memory", func(t *testing.T) { fn(t, storage.NewMemoryStore()) })
	t.Run("sqlite", func(t *testing.T) { fn(t, openSQLite(t, filepath.Join(t.TempDir(), "db.sqlite"))) })
}

// Issue 9 item 6: a run whose deadline passes while its tools run
// records the step (model call, calls, results) in the checkpoint and the
// layers, so the page the tool created is known, and the user's message
// of a new thread is kept.
func TestTrust06_TimeoutDuringToolsIsCheckpointed(t *testing.T) {
	stores(t, func(t *testing.T, store storage.Store) {
		cms := newCMS()
		slow := agentloop.Tool{Name: "slow", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}}
		cfg := func(m llms.Model) agentloop.Config {
			return agentloop.Config{Model: m, Store: store, Tools: append(cms.tools(), slow), Timeout: 500 * time.Millisecond,
				Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)}, Logger: quiet}
		}
		model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("createPage", `{"title":"About"}`), agenttest.Call("slow", `{}`))))
		a := mustAgent(t, cfg(model))
		res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Create an About page"})
		var le *agentloop.LimitError
		if !errors.As(err, &le) || !errors.Is(err, agentloop.ErrTimeout) {
			t.Fatalf("err = %v, want a timeout LimitError", err)
		}
		if res.Steps != 1 || res.ToolCalls != 2 {
			t.Errorf("result: %d steps, %d tool calls, want 1 and 2", res.Steps, res.ToolCalls)
		}
		ck, err := a.LoadCheckpoint(t.Context(), "t")
		if err != nil {
			t.Fatalf("the interrupted step was not checkpointed: %v", err)
		}
		if ck.Steps != 1 || len(ck.Messages) != 4 || !strings.Contains(strings.Join(storedResults(ck.Messages), " "), "page_101") {
			t.Fatalf("checkpoint: %d steps, %d messages, results %q", ck.Steps, len(ck.Messages), storedResults(ck.Messages))
		}
		// The layers stored the step: a new process resolves "this page".
		second := mustAgent(t, cfg(agenttest.NewFunc(cmsPolicy)))
		if _, err := second.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "What sections are on this page?"}); err != nil {
			t.Fatal(err)
		}
		if got := cms.listed(); len(got) != 1 || got[0] != "page_101" {
			t.Errorf("after the timeout, listSections got %v, want [page_101]", got)
		}
	})
}

// Issue 9 item 6: a run continued without input after a timeout goes on
// with the same turn: its tool results are sent whole, not compacted as
// an earlier turn's.
func TestTrust06_ContinuedTurnKeepsItsResults(t *testing.T) {
	store := storage.NewMemoryStore()
	cms := newCMS()
	slow := agentloop.Tool{Name: "slow", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}
	first := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("createPage", `{"title":"About"}`), agenttest.Call("slow", `{}`))))
	a := mustAgent(t, agentloop.Config{Model: first, Store: store, Tools: append(cms.tools(), slow), Timeout: 200 * time.Millisecond, Logger: quiet})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Create an About page"}); !errors.Is(err, agentloop.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	model := agenttest.New(agenttest.Reply(agenttest.Text("created")))
	b := mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: cms.tools()})
	if _, err := b.Run(t.Context(), agentloop.RunInput{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	got := model.Requests()[0].ToolResults()
	if len(got) != 2 || !strings.HasPrefix(got[0].Content, `{"id":"page_101"`) {
		t.Errorf("the continued turn's results: %+v", got)
	}
}

// Issue 9 item 6: a deadline during the first model call of a new thread
// keeps the user's message; the thread continues without repeating it.
func TestTrust06_TimeoutInFirstModelCallKeepsInput(t *testing.T) {
	store := storage.NewMemoryStore()
	hang := func(ctx context.Context, _ agenttest.Request) (*llms.ContentChoice, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	a := mustAgent(t, agentloop.Config{Model: agenttest.New(hang), Store: store, Timeout: 100 * time.Millisecond, Logger: quiet})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Hello there"}); !errors.Is(err, agentloop.ErrTimeout) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	ck, err := a.LoadCheckpoint(t.Context(), "t")
	if err != nil || len(ck.Messages) != 1 || ck.Steps != 0 {
		t.Fatalf("user message not kept: %v %+v", err, ck)
	}
	model := agenttest.New(agenttest.Reply(agenttest.Text("hi")))
	b := mustAgent(t, agentloop.Config{Model: model, Store: store})
	if _, err := b.Run(t.Context(), agentloop.RunInput{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	if got := model.Requests()[0].LastUser(); got != "Hello there" {
		t.Errorf("continued run saw user message %q", got)
	}
}

// Issue 9 item 6: when the checkpoint of a run stopped by its timeout
// fails too, the caller is told both.
func TestTrust06_FailedSaveAfterTimeoutIsReported(t *testing.T) {
	store := storage.NewMemoryStore()
	key := storage.ThreadKey("t", thread.HeadName)
	intrude := agentloop.Tool{Name: "intrude", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
		if _, err := store.Put(ctx, key, []byte(`{"version":2,"thread_id":"t","messages":[]}`), storage.AnyVersion); err != nil {
			return "", err
		}
		<-ctx.Done()
		return "", ctx.Err()
	}}
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("intrude", `{}`))))
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: []agentloop.Tool{intrude}, Timeout: 200 * time.Millisecond, Logger: quiet})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	var le *agentloop.LimitError
	var ce *agentloop.CheckpointError
	if !errors.As(err, &le) || !errors.As(err, &ce) || !errors.Is(err, agentloop.ErrTimeout) || !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("err = %v, want a timeout LimitError joined with a conflicting CheckpointError", err)
	}
	if res.Steps != 1 || ce.SavedMessages != 0 {
		t.Errorf("steps %d, saved %d messages", res.Steps, ce.SavedMessages)
	}
}

// Issue 9 item 10: a 1 MB tool result is cut to MaxToolResultBytes in
// the history, with a note giving its size; the layers see it whole; the
// next model call still has the user's message.
func TestTrust10_LargeToolResultIsCapped(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	result := `{"id":"page_7","title":"Big","body":"` + body + `"}`
	fetch := agentloop.Tool{Name: "fetch", Call: func(context.Context, json.RawMessage) (string, error) { return result, nil }}
	policy := func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if len(r.ToolResults()) > 0 {
			return agenttest.Text("done"), nil
		}
		return agenttest.Calls(agenttest.Call("fetch", `{}`)), nil
	}
	model := agenttest.NewFunc(policy)
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{fetch}, Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Fetch the big page"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls", len(reqs))
	}
	if got := reqs[1].LastUser(); got != "Fetch the big page" {
		t.Fatalf("second model call has user message %q (%d messages)", got, len(reqs[1].Messages))
	}
	got := reqs[1].ToolResults()
	if len(got) != 1 || len(got[0].Content) > agentloop.DefaultMaxToolResultBytes+200 ||
		!strings.HasPrefix(got[0].Content, result[:1000]) || !strings.Contains(got[0].Content, fmt.Sprintf("%d bytes", len(result))) {
		t.Fatalf("tool result in the history: %d bytes, ends %q", len(got[0].Content), got[0].Content[max(0, len(got[0].Content)-200):])
	}
	if c := toolContents(res.Messages)[0]; c != got[0].Content {
		t.Errorf("Result.Messages holds another result than the model saw")
	}
	// The layer parsed the whole result (a cut one is not JSON).
	if !strings.Contains(reqs[1].System(), "page_7") {
		t.Errorf("the layers did not see the full result:\n%s", reqs[1].System())
	}
}

// Issue 9 item 10: when the turn's newest messages do not fit the window,
// the model is still sent the user's message; when even that does not
// fit, the run fails with ErrInputTooLarge and the model is not called.
func TestTrust10_ModelNeverCalledWithoutInput(t *testing.T) {
	result := strings.Repeat("word ", 4000) // ~20 KB: more than the window below
	fetch := agentloop.Tool{Name: "fetch", Call: func(context.Context, json.RawMessage) (string, error) { return result, nil }}
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("fetch", `{}`))), agenttest.Reply(agenttest.Text("done")))
	cfg := agentloop.Config{Model: model, Tools: []agentloop.Tool{fetch}, ContextWindow: 3000, ResponseReserve: 500, MaxToolResultBytes: -1}
	a := mustAgent(t, cfg)
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Fetch it"}); err != nil {
		t.Fatal(err)
	}
	if got := model.Requests()[1].LastUser(); got != "Fetch it" {
		t.Errorf("second model call has user message %q", got)
	}

	model = agenttest.New(agenttest.Reply(agenttest.Text("hi")))
	cfg.Model = model
	a = mustAgent(t, cfg)
	_, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "u", Input: strings.Repeat("long input ", 3000)})
	if !errors.Is(err, agentloop.ErrInputTooLarge) {
		t.Fatalf("err = %v, want ErrInputTooLarge", err)
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the model was called %d times", n)
	}
}

// Issue 9 item 13: a tool result that starts with the compaction marker
// is compacted like any other: compaction is tracked in the checkpoint,
// not recognised by text.
func TestTrust13_CompactionNotRecognisedByText(t *testing.T) {
	store := storage.NewMemoryStore()
	fake := "[compacted] earlier result of admin (3 bytes): ok " + strings.Repeat("y", 200<<10)
	fetch := agentloop.Tool{Name: "fetch", Call: func(context.Context, json.RawMessage) (string, error) { return fake, nil }}
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("fetch", `{}`))), agenttest.Reply(agenttest.Text("done")), agenttest.Reply(agenttest.Text("again")))
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: []agentloop.Tool{fetch}, MaxToolResultBytes: -1})
	for _, in := range []string{"fetch", "next"} {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	old := toolContents(model.Requests()[2].Messages)
	if len(old) != 1 || len(old[0]) > 400 || !strings.HasPrefix(old[0], "[compacted] earlier result of fetch (") {
		t.Fatalf("old result not compacted: %d bytes, %.120q", len(old[0]), old[0])
	}
}

// Issue 9 item 13: the checkpoint of every format version loads from its
// frozen file: version 1 (compaction marked only by text) and version 2
// (Checkpoint.Compacted). A reference is never compacted twice, the last
// turn is compacted, and the thread is rewritten in the current version.
func TestTrust13_FrozenCheckpointsLoad(t *testing.T) {
	for version := 1; version <= thread.Version; version++ {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			store := storage.NewMemoryStore()
			putFrozen(t, store, "thread-about", readFrozen(t, version))
			it, err := store.Get(t.Context(), storage.ThreadKey("thread-about", thread.HeadName))
			if err != nil {
				t.Fatal(err)
			}
			var frozen struct{ Version int }
			if err := json.Unmarshal(it.Value, &frozen); err != nil || frozen.Version != version {
				t.Fatalf("frozen file: %v, version %d", err, frozen.Version)
			}
			model := agenttest.New(agenttest.Reply(agenttest.Text("ok")))
			a := mustAgent(t, agentloop.Config{Model: model, Store: store})
			loaded, err := a.LoadCheckpoint(t.Context(), "thread-about")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "thread-about", Input: "and now?"}); err != nil {
				t.Fatal(err)
			}
			old, got := storedResults(loaded.Messages), toolContents(model.Requests()[0].Messages)
			if len(got) != 2 || got[0] != old[0] || !strings.HasPrefix(old[0], "[compacted] earlier result of createPage (") {
				t.Errorf("reference changed:\n was %q\n now %q", old[0], got[0])
			}
			if !strings.HasPrefix(got[1], "[compacted] earlier result of listSections (") {
				t.Errorf("last turn not compacted: %q", got[1])
			}
			ck, err := a.LoadCheckpoint(t.Context(), "thread-about")
			if err != nil || ck.Version != thread.Version || ck.Compacted != len(loaded.Messages) {
				t.Errorf("rewritten checkpoint: %v, version %d, compacted %d of %d", err, ck.Version, ck.Compacted, len(ck.Messages))
			}
		})
	}
}

// Issue 15 item 8: large tool-call arguments of earlier turns are
// compacted to a small valid JSON object, so a model that sends a 60 KB
// update every turn does not grow the stored thread without bound.
func TestModel08_ArgumentsOfEarlierTurnsCompacted(t *testing.T) {
	store := storage.NewMemoryStore()
	args := `{"notes":"` + strings.Repeat("n", 60<<10) + `"}`
	scratch := agentloop.Tool{Name: "scratch", Call: func(context.Context, json.RawMessage) (string, error) { return "ok", nil }}
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if len(r.ToolResults()) > 0 {
			return agenttest.Text("saved"), nil
		}
		return agenttest.Calls(agenttest.Call("scratch", args)), nil
	})
	// The whole history is sent, to see every earlier call.
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: []agentloop.Tool{scratch}, History: history.Config{Full: true}})
	const turns = 20
	for i := range turns {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("turn %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	it, err := store.Get(t.Context(), storage.ThreadKey("t", thread.HeadName))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("checkpoint after %d turns (%d steps) with %d-byte arguments: %d bytes", turns, 2*turns, len(args), len(it.Value))
	if len(it.Value) > 2*len(args) {
		t.Errorf("checkpoint is %d bytes after %d turns of %d-byte arguments", len(it.Value), turns, len(args))
	}
	// What the providers are sent: every earlier call's arguments are a
	// small JSON object, the current turn's are whole.
	last := model.Requests()[len(model.Requests())-1]
	var calls []llms.ToolCall
	for _, m := range last.Messages {
		for _, p := range m.Parts {
			if c, ok := p.(llms.ToolCall); ok {
				calls = append(calls, c)
			}
		}
	}
	if len(calls) != turns {
		t.Fatalf("%d calls in the last request", len(calls))
	}
	for i, c := range calls[:turns-1] {
		var v map[string]any
		if err := json.Unmarshal([]byte(c.FunctionCall.Arguments), &v); err != nil || len(c.FunctionCall.Arguments) > 100 {
			t.Fatalf("call %d: arguments %.100q (%d bytes): %v", i, c.FunctionCall.Arguments, len(c.FunctionCall.Arguments), err)
		}
	}
	if calls[turns-1].FunctionCall.Arguments != args {
		t.Errorf("the current turn's arguments were compacted")
	}
}

// Issue 15 item 9: a run that loses a checkpoint race says how much of it
// the thread holds, so the caller knows whether retrying would repeat the
// user's message.
func TestModel09_LosingRunSaysWhatWasSaved(t *testing.T) {
	for _, tc := range []struct {
		name           string
		intrudeAt      int // the step whose tool lets another run write
		steps, msgsSvd int
	}{{"at first step", 0, 0, 0}, {"after one step", 1, 1, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			store := storage.NewMemoryStore()
			key := storage.ThreadKey("t", thread.HeadName)
			intruder := agentloop.Tool{Name: "intrude", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
				_, err := store.Put(ctx, key, []byte(`{"version":1,"thread_id":"t","messages":[]}`), storage.AnyVersion)
				return "ok", err
			}}
			var script []agenttest.Step
			for range tc.intrudeAt {
				script = append(script, agenttest.Reply(agenttest.Calls(agenttest.Call("createPage", `{"title":"A"}`))))
			}
			script = append(script, agenttest.Reply(agenttest.Calls(agenttest.Call("intrude", ""))), agenttest.Reply(agenttest.Text("done")))
			a := mustAgent(t, agentloop.Config{Model: agenttest.New(script...), Store: store, Tools: append(newCMS().tools(), intruder), Logger: quiet})
			_, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
			var ce *agentloop.CheckpointError
			if !errors.As(err, &ce) || !errors.Is(err, storage.ErrConflict) || !errors.Is(err, agentloop.ErrCheckpoint) {
				t.Fatalf("err = %v, want a *CheckpointError matching ErrConflict", err)
			}
			text := "nothing of this run was saved"
			if tc.msgsSvd > 0 {
				text = fmt.Sprintf("got %d of this run's messages, from %d of its steps", tc.msgsSvd, tc.steps)
			}
			if ce.SavedSteps != tc.steps || ce.SavedMessages != tc.msgsSvd || !strings.Contains(err.Error(), text) {
				t.Errorf("saved %d steps, %d messages (%v), want %d and %d", ce.SavedSteps, ce.SavedMessages, err, tc.steps, tc.msgsSvd)
			}
		})
	}
}

// Issue 9 item 21: a checkpoint deleted under a run (a store restarted
// empty) is reported as gone, not as an overlapping run; the run does
// not bring it back, and the thread then starts afresh.
func TestTrust21_CheckpointGoneIsReported(t *testing.T) {
	stores(t, func(t *testing.T, store storage.Store) {
		key := storage.ThreadKey("t", thread.HeadName)
		wipe := agentloop.Tool{Name: "wipe", Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
			return "ok", store.Delete(ctx, key, storage.AnyVersion)
		}}
		model := agenttest.New(
			agenttest.Reply(agenttest.Calls(agenttest.Call("createPage", `{"title":"A"}`))),
			agenttest.Reply(agenttest.Calls(agenttest.Call("wipe", ""))),
			agenttest.Reply(agenttest.Text("done")))
		a := mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: append(newCMS().tools(), wipe), Logger: quiet})
		res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
		if !errors.Is(err, agentloop.ErrCheckpointGone) || !errors.Is(err, agentloop.ErrCheckpoint) || errors.Is(err, storage.ErrConflict) {
			t.Fatalf("err = %v, want ErrCheckpointGone and not ErrConflict", err)
		}
		if !strings.Contains(err.Error(), "gone") || res == nil || len(res.Messages) != 5 {
			t.Errorf("err %q, result %+v", err, res)
		}
		if _, err := store.Get(t.Context(), key); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("the deleted checkpoint came back: %v", err)
		}
		// Continuing without input cannot work on a thread with no
		// checkpoint, and says it is gone (issue 23, item 20); with input,
		// the thread starts afresh.
		_, err = a.Run(t.Context(), agentloop.RunInput{ThreadID: "t"})
		if !errors.Is(err, agentloop.ErrCheckpointGone) || !strings.Contains(err.Error(), "no checkpoint") {
			t.Errorf("continuing without input: %v", err)
		}
		b := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("hi"))), Store: store})
		if _, err := b.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "hello again"}); err != nil {
			t.Fatal(err)
		}
		if ck, err := b.LoadCheckpoint(t.Context(), "t"); err != nil || len(ck.Messages) != 2 {
			t.Errorf("new start: %v %+v", err, ck)
		}
	})
}

// Issue 9 item 20: ValidateArgs keeps a bounded number of compiled
// schemas, however many distinct schemas it is given.
func TestTrust20_ValidateArgsCacheBounded(t *testing.T) {
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	const n = 10000
	before := heap()
	for i := range n {
		schema := fmt.Sprintf(`{"type":"object","properties":{"f%d":{"type":"string","minLength":1,"pattern":"^[a-z]+$"}},"required":["f%d"]}`, i, i)
		if err := agentloop.ValidateArgs(json.RawMessage(schema), []byte(fmt.Sprintf(`{"f%d":"ok"}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	grown := int64(heap()) - int64(before)
	t.Logf("heap after %d distinct schemas: %+d KB", n, grown>>10)
	if grown > 8<<20 {
		t.Errorf("heap grew by %d MB for %d schemas", grown>>20, n)
	}
}

// TestTrust22_LongThreadIDShortInErrors: errors about a thread quoted its
// whole ID (10 KB); they quote it through storage.Quote. (The ID is 3 KB
// so that its keys stay under storage.MaxKeyLen.)
func TestTrust22_LongThreadIDShortInErrors(t *testing.T) {
	store := storage.NewMemoryStore()
	id := strings.Repeat("t", 3<<10)
	a := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("hi"))), Store: store, Logger: quiet})
	_, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: id})
	if err == nil || len(err.Error()) > 512 {
		t.Errorf("continuing a thread with no checkpoint: error of %d bytes: %.200v", len(fmt.Sprint(err)), err)
	}
	if _, err := store.Put(t.Context(), storage.ThreadKey(id, thread.HeadName), []byte("garbage"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	_, err = a.LoadCheckpoint(t.Context(), id)
	if err == nil || len(err.Error()) > 512 {
		t.Errorf("malformed checkpoint: error of %d bytes: %.200v", len(fmt.Sprint(err)), err)
	}
}
