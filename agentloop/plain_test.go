package agentloop_test

import (
	"errors"
	"reflect"
	"regexp"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/thread/threadtest"
)

// Issue 10 (brief item 3): an unknown tool and bad tool arguments are
// layer's errors wherever they arise (an agent tool, a layer function,
// the spawn tool, Agent.Spawn), so one errors.Is check covers them all.
func TestPlain03_ToolErrorsAreLayers(t *testing.T) {
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(
			agenttest.Call("nope", `{}`),
			agenttest.Call("createPage", `[1]`),
			agenttest.Call("createPage", `{"title":`),
			agenttest.Call("createPage", `{"title":1}`),
			agenttest.Call("entities_note", `{"text":1}`),
			agenttest.Call(agentloop.SpawnToolName, `{"task":1}`),
		)),
		agenttest.Reply(agenttest.Text("done")),
	)
	var mu sync.Mutex
	var errs []error
	a := mustAgent(t, agentloop.Config{Model: model, Tools: newCMS().tools(), Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)},
		Observer: func(e agentloop.Event) {
			if e.Kind == agentloop.EventToolCall {
				mu.Lock()
				errs = append(errs, e.Err)
				mu.Unlock()
			}
		}})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"}); err != nil {
		t.Fatal(err)
	}
	unknown, invalid := 0, 0
	for _, err := range errs {
		switch {
		case errors.Is(err, layer.ErrUnknownTool):
			unknown++
		case errors.Is(err, layer.ErrInvalidArguments):
			invalid++
		default:
			t.Errorf("tool error %v is neither layer.ErrUnknownTool nor layer.ErrInvalidArguments", err)
		}
	}
	if unknown != 1 || invalid != 5 {
		t.Errorf("%d unknown-tool and %d invalid-argument errors, want 1 and 5: %v", unknown, invalid, errs)
	}
	if _, err := a.Spawn(t.Context(), agentloop.SpawnInput{ThreadID: "t"}); !errors.Is(err, layer.ErrInvalidArguments) {
		t.Errorf("Spawn without input: %v, want layer.ErrInvalidArguments", err)
	}
}

// Issue 10 (brief item 2): a stored message is memlayer's own record
// (StoredMessage), written with encoding/json. What a run stores is
// byte for byte the frozen file of the current form (the same
// conversation as the older files: version 4 with the head's optional
// title, threadtest.Titled), so the stored form changes only with a new
// frozen file; and every older version migrates to the same records.
func TestPlain02_StoredMessageRecord(t *testing.T) {
	store := storage.NewMemoryStore()
	restartScenario(t, store, false)
	stamp := regexp.MustCompile(`"updated_at": "[^"]*"`)
	got, want := stamp.ReplaceAll(frozenForm(t, store, "thread-about"), nil), stamp.ReplaceAll(threadtest.Titled(t), nil)
	if string(got) != string(want) {
		t.Errorf("stored thread differs from thread/threadtest/testdata/checkpoint_v4_titled.json:\n got %s\nwant %s", got, want)
	}

	var first *thread.Checkpoint
	for version := 1; version <= thread.Version; version++ {
		store := storage.NewMemoryStore()
		putFrozen(t, store, "t", readFrozen(t, version))
		ck, err := mustAgent(t, agentloop.Config{Model: agenttest.New(), Store: store}).LoadCheckpoint(t.Context(), "t")
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		if ck.Version != thread.Version {
			t.Errorf("v%d loads as version %d", version, ck.Version)
		}
		if first == nil {
			first = ck
			continue
		}
		if !reflect.DeepEqual(ck.Messages, first.Messages) || ck.Steps != first.Steps || ck.Usage != first.Usage ||
			!reflect.DeepEqual(ck.Layers, first.Layers) || ck.ThreadID != first.ThreadID || ck.Agent != first.Agent {
			t.Errorf("v%d loads as\n%+v\nv1 as\n%+v", version, ck, first)
		}
	}
}
