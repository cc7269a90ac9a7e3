package kv_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

type task struct {
	ID    int
	Title string
}

// Typed values in a key-value memory.
func ExampleNew() {
	mem := kv.New(kv.Config{})
	_ = kv.Set(mem, "current", task{ID: 7, Title: "draft notes"})
	t, ok, err := kv.Get[task](mem, "current")
	fmt.Println(t, ok, err)
	_, ok, _ = kv.Get[task](mem, "missing")
	fmt.Println(ok)
	// Output:
	// {7 draft notes} true <nil>
	// false
}

// Entries carry metadata; Lookup returns it with the access statistics.
func ExampleSetWith() {
	mem := kv.New(kv.Config{})
	_ = kv.SetWith(mem, "tone", "concise", kv.Meta{Importance: 0.8, Tags: []string{"pref"}, Type: "preference", TTL: time.Hour})
	_, _, _ = kv.Get[string](mem, "tone")
	e, _, _ := mem.Lookup("tone")
	fmt.Println(string(e.Value), e.Importance, e.Tags, e.Type, e.AccessCount, !e.ExpiresAt.IsZero())
	// Output:
	// "concise" 0.8 [pref] preference 2 true
}

// GetOrSet computes a value once, even when many goroutines ask at once.
func ExampleGetOrSet() {
	mem := kv.New(kv.Config{})
	calls := 0
	load := func() (string, error) { calls++; return "expensive", nil }
	a, _ := kv.GetOrSet(mem, "report", load)
	b, _ := kv.GetOrSet(mem, "report", load)
	fmt.Println(a, b, calls)
	// Output:
	// expensive expensive 1
}

// Child scopes read through to their parents; writes stay local.
func ExampleScope_Child() {
	root := kv.New(kv.Config{})
	_ = kv.Set(root, "project", "docs")
	child, _ := root.Child("agent-1")
	_ = kv.Set(child, "draft", "v1")

	p, _, _ := kv.Get[string](child, "project")
	_, local, _ := kv.GetLocal[string](child, "project")
	fmt.Println(p, local, root.Contains("draft"))
	_, _ = child.MergeToParent(true)
	fmt.Println(root.Contains("draft"), root.Scopes())
	_ = child.Dispose()
	fmt.Println(root.Scopes(), errors.Is(kv.Set(child, "x", 1), kv.ErrDisposed))
	// Output:
	// docs false false
	// true [root root/agent-1]
	// [root] true
}

// A snapshot saves a scope and its children; Restore loads it.
func ExampleScope_Snapshot() {
	mem := kv.New(kv.Config{})
	_ = kv.Set(mem, "a", 1)
	child, _ := mem.Child("c")
	_ = kv.Set(child, "b", 2)
	snap, _ := mem.Snapshot()

	other := kv.New(kv.Config{})
	_ = other.Restore(snap)
	c := other.Children()[0]
	a, _, _ := kv.Get[int](c, "a")
	b, _, _ := kv.Get[int](c, "b")
	fmt.Println(a, b, other.Scopes())
	// Output:
	// 1 2 [root root/c]
}

// OnChange receives every change of the memory.
func ExampleConfig_onChange() {
	mem := kv.New(kv.Config{OnChange: func(e kv.Change) {
		fmt.Println(e.Kind, e.Scope, e.Key != "")
	}})
	_ = kv.Set(mem, "k", true)
	_, _ = mem.Remove("k")
	c, _ := mem.Child("c")
	_ = c.Dispose()
	// Output:
	// set root true
	// removed root true
	// scope-created root/c false
	// scope-disposed root/c false
}

// Each thread has its own key-value memory, loaded from the store when a
// run starts and persisted after every step and when the run ends. A
// spawned child agent gets a child scope of its parent's run memory.
func ExampleNewLayer() {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	kl, _ := kv.NewLayer(kv.LayerConfig{MergeOnReturn: true})

	// Code outside a run opens a thread's memory, and closes it to persist.
	t1, _ := kl.Open(ctx, layer.Env{ThreadID: "t1", Store: st})
	_ = kv.Set(t1.Memory(), "repo", "memlayer")
	_ = t1.Close(ctx)

	// A run of thread t1 (an agent's run does this) sees it; t2 does not.
	parent, _ := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{kl}, Env: layer.Env{ThreadID: "t1", Store: st}})
	_ = parent.Init(ctx)
	mem, _ := kv.From(parent, "")
	t2, _ := kl.Open(ctx, layer.Env{ThreadID: "t2", Store: st})
	fmt.Println(mem.Contains("repo"), t2.Memory().Contains("repo"))

	child, _ := parent.Spawn(ctx, layer.Env{ThreadID: "t1", ExecutionID: "sub-1"})
	ckv, _ := kv.From(child, "")
	repo, _, _ := kv.Get[string](ckv, "repo")
	_ = kv.Set(ckv, "finding", "flaky test")
	fmt.Println(ckv.Path(), repo, mem.Contains("finding"))

	_ = parent.Return(ctx, child)
	_ = parent.Close(ctx)
	again, _ := kl.Open(ctx, layer.Env{ThreadID: "t1", Store: st})
	fmt.Println(again.Memory().Keys())
	// Output:
	// true false
	// root/sub-1 memlayer false
	// [finding repo] <nil>
}
