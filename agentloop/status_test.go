package agentloop_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/internal/looptest"
)

// statusAgent is an agent whose tool "status" records the run's status
// as the tool sees it, and whose model calls it once, then answers.
func statusAgent(t *testing.T, seen *agentloop.Status, observe func(agentloop.Event)) *agentloop.Agent {
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("status", `{}`))), agenttest.Reply(agenttest.Text("done")))
	tool := agentloop.Tool{Name: "status", Description: "Reads the run's status.",
		Call: func(ctx context.Context, _ json.RawMessage) (string, error) {
			s, ok := agentloop.RunStatus(ctx)
			if !ok {
				t.Error("RunStatus is false inside a run's tool")
			}
			*seen = s
			return "ok", nil
		}}
	return mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{tool}, Layers: looptest.GateLayers(t), Timeout: time.Minute, Observer: observe})
}

// TestStatus27_BudgetStatus: a run's status, read by a tool during the
// run and returned with its result, reports the tokens each layer used
// and left, the tokens in total, the events by kind and the time elapsed
// against the run's time budget. A Tally fed by the agent's observer
// counts what the run's own does. Outside a run there is none, and two
// runs at once each have their own.
func TestStatus27_BudgetStatus(t *testing.T) {
	if _, ok := agentloop.RunStatus(t.Context()); ok {
		t.Error("RunStatus is true outside a run")
	}
	var mid agentloop.Status
	var outside *agentloop.Tally
	var mu sync.Mutex
	observe := func(e agentloop.Event) {
		mu.Lock()
		defer mu.Unlock()
		if outside == nil {
			outside = agentloop.NewTally(time.Now(), time.Minute)
		}
		outside.Observe(e)
	}
	res, err := statusAgent(t, &mid, observe).Run(t.Context(), agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "How are we doing?"})
	if err != nil {
		t.Fatal(err)
	}
	// During the first step's tools: the model was called once, no step
	// finished yet.
	if mid.Events[agentloop.EventRunStart] != 1 || mid.Events[agentloop.EventModelCall] != 1 || mid.Steps != 0 || mid.Events[agentloop.EventRunEnd] != 0 {
		t.Errorf("status during the run: %+v", mid)
	}
	if mid.TimeBudget != time.Minute || mid.Elapsed <= 0 || mid.TimeLeft != mid.TimeBudget-mid.Elapsed {
		t.Errorf("time during the run: elapsed %v, budget %v, left %v", mid.Elapsed, mid.TimeBudget, mid.TimeLeft)
	}
	end := res.Status
	if end.Steps != res.Steps || end.Usage != res.Usage || end.Events[agentloop.EventStep] != res.Steps || end.Events[agentloop.EventRunEnd] != 1 ||
		end.Events[agentloop.EventToolCall] != 1 || end.Elapsed < mid.Elapsed || end.TimeLeft > mid.TimeLeft {
		t.Errorf("status at the end: %+v, result steps %d usage %+v", end, res.Steps, res.Usage)
	}
	if len(end.Budgets) == 0 || !slices.Equal(end.Budgets, res.Budgets) {
		t.Errorf("layers' budgets %+v, want the result's %+v", end.Budgets, res.Budgets)
	}
	for _, b := range end.Budgets {
		if b.Left != max(b.Allocated-b.Used, 0) {
			t.Errorf("layer %s: %+v, want what is left of its budget", b.Layer, b)
		}
	}
	mu.Lock()
	got := outside.Status(time.Now())
	mu.Unlock()
	for k, n := range end.Events {
		if got.Events[k] != n {
			t.Errorf("the observer's tally counts %d %s events, the run's %d", got.Events[k], k, n)
		}
	}

	// Two runs at once: each status is its own.
	var wg sync.WaitGroup
	ends := make([]agentloop.Status, 2)
	for i := range ends {
		wg.Go(func() {
			var s agentloop.Status
			r, err := statusAgent(t, &s, nil).Run(t.Context(), agentloop.RunInput{ThreadID: "c" + string(rune('0'+i)), Input: "Go."})
			if err != nil {
				t.Error(err)
				return
			}
			ends[i] = r.Status
		})
	}
	wg.Wait()
	for i, s := range ends {
		if s.Events[agentloop.EventRunStart] != 1 || s.Events[agentloop.EventRunEnd] != 1 {
			t.Errorf("run %d of two at once: events %v", i, s.Events)
		}
	}
}
