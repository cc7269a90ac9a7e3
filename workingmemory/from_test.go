package workingmemory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// TestFit08_FromAndStateAs: code handed a run's stack finds the run's
// scratchpad by ID and reads its state as a Go type; a missing layer, or
// a state of another shape, is a clear error.
func TestFit08_FromAndStateAs(t *testing.T) {
	ctx := t.Context()
	pad, err := workingmemory.New(workingmemory.Config{Schema: `{"type":"object","properties":{"goal":{"type":"string"},"done":{"type":"array","items":{"type":"string"}}}}`})
	if err != nil {
		t.Fatal(err)
	}
	st, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{pad}, Env: layer.Env{ThreadID: "t", Store: storage.NewMemoryStore()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Init(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := workingmemory.From(st, "")
	if err != nil {
		t.Fatal(err)
	}
	if l == pad {
		t.Error("From returned the template, not the run's layer")
	}
	if err := l.Update(ctx, json.RawMessage(`{"goal":"ship","done":["tests"]}`)); err != nil {
		t.Fatal(err)
	}
	type plan struct {
		Goal string   `json:"goal"`
		Done []string `json:"done"`
	}
	p, err := workingmemory.StateAs[plan](l)
	if err != nil || p.Goal != "ship" || len(p.Done) != 1 || p.Done[0] != "tests" {
		t.Errorf("StateAs = %+v, %v", p, err)
	}
	if _, err := workingmemory.StateAs[string](l); err == nil || !strings.Contains(err.Error(), "state as string") {
		t.Errorf("StateAs[string] of an object state: %v", err)
	}
	if _, err := workingmemory.From(st, "plan"); err == nil || !strings.Contains(err.Error(), `"plan"`) {
		t.Errorf("From of a missing layer: %v", err)
	}
}

// Code given a run's layer stack (an agentloop run tool: run.Stack())
// reads the scratchpad's state as its own Go type.
func ExampleStateAs() {
	type Plan struct {
		Goal  string   `json:"goal"`
		Steps []string `json:"steps"`
	}
	pad, _ := workingmemory.New(workingmemory.Config{Template: `{"goal":"launch","steps":["draft","review"]}`,
		Schema: `{"type":"object","properties":{"goal":{"type":"string"},"steps":{"type":"array"}}}`})
	stack, _ := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{pad}, Env: layer.Env{ThreadID: "t"}})
	_ = stack.Init(context.Background())

	run, err := workingmemory.From(stack, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, _ := workingmemory.StateAs[Plan](run)
	fmt.Println(plan.Goal, plan.Steps)
	// Output: launch [draft review]
}
