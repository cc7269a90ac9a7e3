package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/workingmemory"
)

// TestOverlappingRuns starts 8 runs of one thread at once, each updating
// the thread's scratchpad at every step. Runs of one thread must not
// overlap, and the store makes sure they cannot both win: every run either
// finishes or fails with an error matching agentloop.ErrCheckpoint and
// storage.ErrConflict; the final checkpoint is one well-formed history
// (every tool call answered, steps matching its AI messages); and every
// scratchpad update a run saw succeed is in the stored state, whichever
// run lost the checkpoint race (layer state has its own compare-and-swap):
// the state holds exactly one key per successful update tool call.
func TestOverlappingRuns(t *testing.T) {
	specs := append([]storeSpec{{Backend: "memory"}}, sharedBackends(t)...)
	for _, spec := range specs {
		t.Run(spec.Backend, func(t *testing.T) {
			st := mustOpen(t, spec)
			for round := range pick(10, 2) {
				overlappingRound(t, st, fmt.Sprintf("shared-thread-%d", round))
			}
		})
	}
}

func overlappingRound(t *testing.T, st storage.Store, threadID string) {
	ctx := t.Context()
	const runs, steps = 8, 3
	wm, err := workingmemory.New(workingmemory.Config{MaxRetries: 100})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	confirmed := map[string]bool{} // keys whose update the model saw succeed
	var applied atomic.Int64       // update tool calls that succeeded, each a new key
	agentFor := func(g int) *agentloop.Agent {
		model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
			k := 0
			for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != llms.ChatMessageTypeHuman; i-- {
				if r.Messages[i].Role == llms.ChatMessageTypeAI {
					k++
				}
			}
			if res := r.ToolResults(); k > 0 && len(res) == 1 && !strings.HasPrefix(res[0].Content, "error: ") {
				mu.Lock()
				confirmed[fmt.Sprintf("g%d-s%d", g, k-1)] = true
				mu.Unlock()
			}
			if k >= steps {
				return agenttest.Text("done"), nil
			}
			return agenttest.Calls(agenttest.Call(wmTool, fmt.Sprintf(`{"g%d-s%d": true}`, g, k))), nil
		})
		a, err := agentloop.New(agentloop.Config{Model: model, Layers: []layer.Layer{wm}, Store: st, MaxSteps: steps + 1,
			Observer: func(e agentloop.Event) {
				if e.Kind == agentloop.EventToolCall && e.Err == nil {
					applied.Add(1)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	var wg sync.WaitGroup
	errs := make([]error, runs)
	start := make(chan struct{})
	for g := range runs {
		a := agentFor(g)
		wg.Go(func() {
			<-start
			_, errs[g] = a.Run(ctx, agentloop.RunInput{ThreadID: threadID, Input: fmt.Sprintf("run %d", g)})
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for g, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, agentloop.ErrCheckpoint) && errors.Is(err, storage.ErrConflict):
		default:
			t.Errorf("run %d: %v, want success or a checkpoint conflict", g, err)
		}
	}
	if won == 0 {
		t.Errorf("no run of %d finished", runs)
	}

	cp, err := agentFor(0).LoadCheckpoint(ctx, threadID)
	if err != nil {
		t.Fatal(err)
	}
	ai, pending := 0, map[string]bool{}
	for _, m := range cp.Messages {
		for _, c := range m.ToolCalls {
			pending[c.ID] = true
		}
		for _, r := range m.ToolResults {
			if !pending[r.CallID] {
				t.Errorf("checkpoint: result for unknown call %q", r.CallID)
			}
			delete(pending, r.CallID)
		}
		if m.Role == thread.RoleAssistant {
			ai++
		}
	}
	if len(pending) > 0 || ai != cp.Steps {
		t.Errorf("checkpoint: %d unanswered calls, %d AI messages, %d steps", len(pending), ai, cp.Steps)
	}

	it, err := st.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope(threadID), "state"))
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(scratchpadState(t, it.Value), &state); err != nil {
		t.Fatal(err)
	}
	if int64(len(state)) != applied.Load() {
		t.Errorf("stored state has %d keys; %d updates succeeded", len(state), applied.Load())
	}
	for k := range confirmed {
		if state[k] != true {
			t.Errorf("update %s was confirmed to the model but is not stored", k)
		}
	}
	t.Logf("%s: %d of %d overlapping runs finished; checkpoint has %d steps; %d confirmed updates, %d successful updates, all stored", threadID, won, runs, cp.Steps, len(confirmed), applied.Load())
}
