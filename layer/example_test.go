package layer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memlayer/memlayer/layer"
)

// notepad is a tiny layer for the examples: it keeps lines added through
// its "add" tool and recalls them.
type notepad struct{ lines []string }

func (n *notepad) Spec() layer.Spec {
	return layer.Spec{ID: "notepad", Slot: layer.SlotWorkingMemory, Budget: layer.Budget{Max: 500}}
}

func (n *notepad) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	if len(n.lines) == 0 {
		return nil, nil
	}
	return []layer.Item{{Text: strings.Join(n.lines, "; ")}}, nil
}

func (n *notepad) Functions() []layer.Function {
	return []layer.Function{{
		Name:       "add",
		Parameters: json.RawMessage(`{"type":"object","properties":{"line":{"type":"string"}}}`),
		Call: func(_ context.Context, args json.RawMessage) (string, error) {
			var a struct{ Line string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			n.lines = append(n.lines, a.Line)
			return "noted", nil
		},
	}}
}

func ExampleStack() {
	ctx := context.Background()
	s, err := layer.NewStack(layer.StackConfig{
		Env: layer.Env{ThreadID: "thread-1"},
		Layers: []layer.Layer{
			&notepad{},
			layer.Text(layer.Spec{ID: "rules", Slot: 90}, "Answer briefly."),
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Init(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close(ctx)

	// The model calls a layer tool by the name it is offered under.
	for _, t := range s.Tools() {
		fmt.Println("tool:", t.Name)
	}
	out, err := s.CallTool(ctx, "notepad_add", `{"line":"launch is on Friday"}`)
	fmt.Println(out, err)

	// Before the next model call, every layer recalls, in slot order.
	recalled, err := s.Recall(ctx, layer.Query{Text: "when is the launch?"}, nil)
	if err != nil {
		fmt.Println(err)
	}
	for _, r := range recalled {
		fmt.Printf("%s: %s\n", r.ID, r.Items[0].Text)
	}
	// Output:
	// tool: notepad_add
	// noted <nil>
	// rules: Answer briefly.
	// notepad: launch is on Friday
}

func ExampleStack_Spawn() {
	ctx := context.Background()
	parent, _ := layer.NewStack(layer.StackConfig{
		Env:    layer.Env{ThreadID: "parent"},
		Layers: []layer.Layer{layer.Text(layer.Spec{ID: "rules"}, "Be kind.")},
	})
	_ = parent.Init(ctx)
	defer parent.Close(ctx)

	child, err := parent.Spawn(ctx, layer.Env{ThreadID: "child"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer child.Close(ctx)
	for _, l := range child.Layers() {
		fmt.Println("child layer:", l.Spec().ID)
	}
	// Output:
	// child layer: rules
}

func ExampleToolName() {
	fmt.Println(layer.ToolName("working_memory", "update"))
	fmt.Println(layer.ToolName("entités", "liste"))
	// Output:
	// working_memory_update
	// entit__s_liste
}

func ExampleFunc() {
	step := layer.Func(layer.Spec{ID: "step", Slot: 80}, func(_ context.Context, q layer.Query) ([]layer.Item, error) {
		return []layer.Item{{Text: fmt.Sprintf("This is step %d.", q.Step)}}, nil
	})
	items, _ := step.Recall(context.Background(), layer.Query{Step: 3})
	fmt.Println(items[0].Text)
	// Output: This is step 3.
}

func ExampleEnv_ScopeKey() {
	env := layer.Env{ThreadID: "thread-1", ResourceID: "user-1", ExecutionID: "exec-1"}
	for _, sc := range []layer.Scope{layer.ScopeThread, layer.ScopeResource, layer.ScopeGlobal, layer.ScopeExecution} {
		fmt.Println(sc, "→", env.ScopeKey(sc))
	}
	// Output:
	// thread → thread:thread-1
	// resource → resource:user-1
	// global → global:
	// execution → execution:exec-1
}
