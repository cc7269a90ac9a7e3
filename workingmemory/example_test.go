package workingmemory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

func printState(l *workingmemory.Layer) {
	b, _ := json.Marshal(l.State())
	fmt.Println(string(b))
}

// A free-text scratchpad: the template is the starting text, the first
// object update keeps it under "_previous", and Recall fences the state.
func ExampleNew() {
	ctx := context.Background()
	tmpl, err := workingmemory.New(workingmemory.Config{Template: "Goal: migrate the blog"})
	if err != nil {
		panic(err)
	}
	// New returns a template; Init binds it to a run (here without a
	// store: the state lives in memory).
	run, _ := tmpl.Init(ctx, layer.Env{ThreadID: "thread-1"})
	wm := run.(*workingmemory.Layer)
	if err := wm.Update(ctx, json.RawMessage(`{"step":"export posts","done":false}`)); err != nil {
		panic(err)
	}
	items, _ := wm.Recall(ctx, layer.Query{})
	fmt.Println(items[0].Text)
	// Output:
	// <working_memory>
	// {
	//   "_previous": "Goal: migrate the blog",
	//   "done": false,
	//   "step": "export posts"
	// }
	// </working_memory>
}

// With a schema, an update whose merged state fails it is rejected with
// every violation, and the state is unchanged.
func ExampleNew_schema() {
	ctx := context.Background()
	tmpl, err := workingmemory.New(workingmemory.Config{
		Schema: `{
			"type": "object",
			"additionalProperties": false,
			"properties": {
				"goal":  {"type": "string"},
				"step":  {"type": "integer", "minimum": 1},
				"tasks": {"type": "array", "items": {"type": "string"}}
			}
		}`,
		Template: map[string]any{"goal": "ship v2", "step": 1},
	})
	if err != nil {
		panic(err)
	}
	run, _ := tmpl.Init(ctx, layer.Env{ThreadID: "thread-1"})
	wm := run.(*workingmemory.Layer)
	err = wm.Update(ctx, json.RawMessage(`{"step":0,"tasks":["a",2],"owner":"me"}`))
	var se *workingmemory.SchemaError
	if errors.As(err, &se) {
		for _, v := range se.Violations {
			fmt.Printf("%s: %s\n", v.Pointer, v.Reason)
		}
	}
	printState(wm)
	// Unordered output:
	// : additional properties 'owner' not allowed
	// /step: minimum: got 0, want 1
	// /tasks/1: got number, want string
	// {"goal":"ship v2","step":1}
}

// Update merges objects key by key, replaces arrays and scalars, treats
// null as "no change" and deletes what "$delete" lists.
func ExampleLayer_Update() {
	ctx := context.Background()
	tmpl, _ := workingmemory.New(workingmemory.Config{})
	run, _ := tmpl.Init(ctx, layer.Env{ThreadID: "thread-1"})
	wm := run.(*workingmemory.Layer)
	_ = wm.Update(ctx, json.RawMessage(`{"plan":{"goal":"fix login","steps":["repro","patch"]},"blockers":["no access"],"notes":"x"}`))
	_ = wm.Update(ctx, json.RawMessage(`{"plan":{"steps":["patch","test"]},"notes":null,"$delete":["blockers"]}`))
	printState(wm)
	_ = wm.Update(ctx, json.RawMessage(`{"plan":{"$delete":["steps/0"],"done":false}}`))
	printState(wm)
	// Output:
	// {"notes":"x","plan":{"goal":"fix login","steps":["patch","test"]}}
	// {"notes":"x","plan":{"done":false,"goal":"fix login","steps":["test"]}}
}

// Init binds the scratchpad to a run: it loads the state stored for the
// run's scope, and every update is stored with compare-and-swap.
func ExampleLayer_Init() {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	wm, _ := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})

	run1, _ := wm.Init(ctx, layer.Env{ThreadID: "t1", ResourceID: "user-42", Store: store})
	_ = run1.(*workingmemory.Layer).Update(ctx, json.RawMessage(`{"timezone":"Europe/Paris"}`))

	// Another thread of the same user, later.
	run2, _ := wm.Init(ctx, layer.Env{ThreadID: "t2", ResourceID: "user-42", Store: store})
	printState(run2.(*workingmemory.Layer))
	it, _ := store.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ResourceScope("user-42"), "state"))
	stored, _ := workingmemory.StoredState(it.Value)
	fmt.Println("stored", string(stored))
	// Output:
	// {"timezone":"Europe/Paris"}
	// stored {"timezone":"Europe/Paris"}
}

// In a stack, the update function is a tool the model calls, named
// "working_memory_update".
func ExampleLayer_Functions() {
	ctx := context.Background()
	wm, _ := workingmemory.New(workingmemory.Config{})
	stack, _ := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{wm}, Env: layer.Env{ThreadID: "t1"}})
	_ = stack.Init(ctx)
	for _, t := range stack.Tools() {
		fmt.Println(t.Name)
	}
	out, err := stack.CallTool(ctx, "working_memory_update", `{"finding":"the cache key ignores the locale"}`)
	fmt.Println(out, err)
	run, _ := layer.Find[*workingmemory.Layer](stack, workingmemory.DefaultID) // the run's scratchpad
	fmt.Println(run.State())
	// Output:
	// working_memory_update
	// Working memory updated. <nil>
	// map[finding:the cache key ignores the locale]
}

// A resource-scoped scratchpad gives a child agent a copy of the parent's
// state; the child's tool writes to the child's copy, and OnReturn (here:
// merge) brings the changes back.
func ExampleLayer_OnSpawn() {
	ctx := context.Background()
	wm, _ := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, OnReturn: workingmemory.ReturnMerge})
	parent, _ := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{wm}, Env: layer.Env{ThreadID: "t1", ResourceID: "site-7"}})
	_ = parent.Init(ctx)
	_, _ = parent.CallTool(ctx, "working_memory_update", `{"site":"docs","pages":3}`)

	child, _ := parent.Spawn(ctx, layer.Env{ThreadID: "t1-sub", ResourceID: "site-7"})
	_, _ = child.CallTool(ctx, "working_memory_update", `{"pages":4}`)
	state := func(s *layer.Stack) any {
		l, _ := layer.Find[*workingmemory.Layer](s, workingmemory.DefaultID)
		return l.State()
	}
	fmt.Println("parent:", state(parent), "child:", state(child))

	_ = parent.Return(ctx, child)
	fmt.Println("after return:", state(parent))
	// Output:
	// parent: map[pages:3 site:docs] child: map[pages:4 site:docs]
	// after return: map[pages:4 site:docs]
}

// A legacy updateWorkingMemory call in the model's response is applied by
// the store hook.
func ExampleLayer_Store() {
	ctx := context.Background()
	tmpl, _ := workingmemory.New(workingmemory.Config{})
	run, _ := tmpl.Init(ctx, layer.Env{ThreadID: "thread-1"})
	wm := run.(*workingmemory.Layer)
	err := wm.Store(ctx, layer.Turn{ToolCalls: []layer.ToolCall{
		{ID: "c1", Name: "updateWorkingMemory", Arguments: `{"status":"in-progress"}`},
	}})
	fmt.Println(err)
	printState(wm)
	// Output:
	// <nil>
	// {"status":"in-progress"}
}

// Two scratchpads in one stack fence their blocks with tags derived from
// their IDs, so each keeps its own fence in the prompt.
func ExampleLayer_Tag() {
	ctx := context.Background()
	notes, err := workingmemory.New(workingmemory.Config{Template: "draft the launch post"})
	if err != nil {
		panic(err)
	}
	plan, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{ID: "plan"}, Template: "1. outline 2. write"})
	if err != nil {
		panic(err)
	}
	for _, l := range []*workingmemory.Layer{notes, plan} {
		items, _ := l.Recall(ctx, layer.Query{})
		fmt.Printf("%s (tag %s):\n%s\n", l.Spec().ID, l.Tag(), items[0].Text)
	}
	fmt.Println(fence.Tag("sub-task-notes"))
	// Output:
	// working_memory (tag working_memory):
	// <working_memory>
	// draft the launch post
	// </working_memory>
	// plan (tag plan):
	// <plan>
	// 1. outline 2. write
	// </plan>
	// sub_task_notes
}
