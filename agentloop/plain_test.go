package agentloop_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
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
	a := mustAgent(t, agentloop.Config{Model: model, Tools: newCMS().tools(), Layers: []layer.Layer{newNotes("entities", layer.ScopeThread)},
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
