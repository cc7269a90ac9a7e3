package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// The return-merge scenario (issue 9, item 2): a parent process spawns a
// child agent from a resource-scoped scratchpad; while the child works,
// sibling processes (other threads of the same resource) update keys the
// child's spawn-time copy also holds; then the child returns under
// ReturnMerge. No sibling update may be reverted to the spawn-time value.

// returnArgs are the arguments of the return-merge workers.
type returnArgs struct {
	Store    storeSpec `json:"store"`
	Resource string    `json:"resource"`
	Keys     int       `json:"keys"`  // base keys k0000..
	Proc     int       `json:"proc"`  // sibling number
	Procs    int       `json:"procs"` // siblings
	// Control returns the child the way the layer did before the
	// three-way merge: its whole state merged into the parent's.
	Control bool `json:"control,omitempty"`
}

// contested is how many base keys (the first ones) the child changes too:
// the siblings change them as well, so the merge must report them.
const contested = 4

func baseKey(i int) string { return fmt.Sprintf("k%04d", i) }

func init() {
	workers["return-parent"] = returnParent
	workers["return-sibling"] = returnSibling
}

// returnParent writes the base state, spawns a child, lets the child
// update its own keys and the contested ones until told to return, and
// returns it.
func returnParent(ctx context.Context, raw string, in *bufio.Scanner, out *lineWriter) error {
	var args returnArgs
	st, closeFn, err := openWorkerStore(ctx, raw, &args)
	if err != nil {
		return err
	}
	defer closeFn()
	var conflicts atomic.Int64
	wm, err := workingmemory.New(workingmemory.Config{
		Spec:     layer.Spec{Scope: layer.ScopeResource},
		OnReturn: workingmemory.ReturnMerge, MaxBytes: 1 << 20,
		OnWarning: func(e workingmemory.Warning) { conflicts.Add(int64(len(e.Paths))) },
	})
	if err != nil {
		return err
	}
	bound, err := wm.Init(ctx, layer.Env{ThreadID: "parent", ResourceID: args.Resource, Store: st})
	if err != nil {
		return err
	}
	parent := bound.(*workingmemory.Layer)
	base := map[string]any{}
	for i := range args.Keys {
		base[baseKey(i)] = "base"
	}
	b, _ := json.Marshal(base)
	if err := parent.Update(ctx, b); err != nil {
		return err
	}
	spawned, err := parent.OnSpawn(ctx, layer.Env{ThreadID: "child", ResourceID: args.Resource})
	if err != nil {
		return err
	}
	child := spawned.(*workingmemory.Layer)
	out.Printf("spawned")
	if err := waitFor(in, "go"); err != nil {
		return err
	}
	// The child works until the test says the siblings are done.
	stop := make(chan struct{})
	go func() {
		_ = waitFor(in, "return")
		close(stop)
	}()
	n := 0
	for work := true; work || n < contested; {
		patch := fmt.Sprintf(`{"child-%04d":%d,%q:"child"}`, n, n, baseKey(n%contested))
		if err := child.Update(ctx, json.RawMessage(patch)); err != nil {
			return err
		}
		n++
		select {
		case <-stop:
			work = false
		case <-time.After(time.Millisecond):
		}
	}
	if args.Control {
		snap, err := child.Snapshot(ctx)
		if err == nil {
			err = parent.Update(ctx, snap)
		}
		if err != nil {
			return err
		}
	} else if err := parent.OnReturn(ctx, child); err != nil {
		return err
	}
	out.Printf("result %d %d", n, conflicts.Load())
	return nil
}

// returnSibling sets its share of the base keys (key i belongs to sibling
// i mod procs; the contested ones too) to its own value, one update each.
func returnSibling(ctx context.Context, raw string, in *bufio.Scanner, out *lineWriter) error {
	var args returnArgs
	st, closeFn, err := openWorkerStore(ctx, raw, &args)
	if err != nil {
		return err
	}
	defer closeFn()
	wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, MaxBytes: 1 << 20})
	if err != nil {
		return err
	}
	bound, err := wm.Init(ctx, layer.Env{ThreadID: fmt.Sprintf("sibling-%d", args.Proc), ResourceID: args.Resource, Store: st})
	if err != nil {
		return err
	}
	pad := bound.(*workingmemory.Layer)
	out.Printf("ready")
	if err := waitFor(in, "go"); err != nil {
		return err
	}
	n := 0
	for i := args.Proc; i < args.Keys; {
		if err := pad.Update(ctx, json.RawMessage(fmt.Sprintf(`{%q:"p%d"}`, baseKey(i), args.Proc))); err != nil {
			if errors.Is(err, workingmemory.ErrConflict) {
				continue // told, not lost: send it again
			}
			return fmt.Errorf("update %s: %w", baseKey(i), err)
		}
		n++
		i += args.Procs
	}
	out.Printf("result %d", n)
	return nil
}

// runReturn runs one return-merge scenario and returns the sibling
// updates acknowledged, those reverted by the return, the child's
// updates, the conflicts reported and the final state.
func runReturn(t *testing.T, spec storeSpec, procs, keys int, control bool) (acked, reverted, childUpdates int, conflicts int64, state map[string]any) {
	t.Helper()
	const resource = "team-1"
	args := returnArgs{Store: spec, Resource: resource, Keys: keys, Procs: procs, Control: control}
	parent := startWorker(t, "return-parent", args)
	parent.expect(t, "spawned", time.Minute)
	sibs := make([]*worker, procs)
	for p := range sibs {
		a := args
		a.Proc = p
		sibs[p] = startWorker(t, "return-sibling", a)
	}
	for _, w := range sibs {
		w.expect(t, "ready", time.Minute)
	}
	parent.send(t, "go")
	for _, w := range sibs {
		w.send(t, "go")
	}
	for _, w := range sibs {
		var n int
		fmt.Sscan(w.expect(t, "result", 10*time.Minute), &n)
		acked += n
		w.wait(t, time.Minute)
	}
	parent.send(t, "return")
	if _, err := fmt.Sscan(parent.expect(t, "result", 5*time.Minute), &childUpdates, &conflicts); err != nil {
		t.Fatal(err)
	}
	parent.wait(t, time.Minute)

	st := mustOpen(t, spec)
	it, err := st.Get(t.Context(), storage.LayerKey(workingmemory.DefaultStorageID, storage.ResourceScope(resource), "state"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(scratchpadState(t, it.Value), &state); err != nil {
		t.Fatal(err)
	}
	for i := contested; i < keys; i++ {
		if want := fmt.Sprintf("p%d", i%procs); state[baseKey(i)] != want {
			reverted++
		}
	}
	return acked, reverted, childUpdates, conflicts, state
}

// TestReturnMergeKeepsSiblingWrites: sibling processes write while a
// child runs; the child's return reverts none of their updates, keeps
// every change of the child, and reports each key both changed.
func TestReturnMergeKeepsSiblingWrites(t *testing.T) {
	parallelInMakeTest(t)
	procs, keys := pick(6, 2), pick(600, 40)
	for _, spec := range sharedBackends(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			acked, reverted, childUpdates, conflicts, state := runReturn(t, spec, procs, keys, false)
			if reverted != 0 {
				t.Errorf("%d of %d sibling updates reverted by the child's return", reverted, acked)
			}
			for i := range childUpdates {
				if _, ok := state[fmt.Sprintf("child-%04d", i)]; !ok {
					t.Errorf("the child's update %d is lost", i)
					break
				}
			}
			for i := range contested {
				if state[baseKey(i)] != "child" {
					t.Errorf("contested key %s = %v, want the child's value", baseKey(i), state[baseKey(i)])
				}
			}
			if conflicts != contested {
				t.Errorf("%d conflicts reported, want %d (the contested keys)", conflicts, contested)
			}
			t.Logf("FIGURE return-merge %s: a child (%d updates) returned over %d sibling updates from %d processes: %d reverted, %d conflicts reported (child wins)",
				spec.Backend, childUpdates, acked, procs, reverted, conflicts)
		})
	}
}

// TestReturnMergeControl returns the child the way the layer did before
// the three-way merge (its whole state merged into the parent's): sibling
// updates must be reverted, which shows that the scenario can see it.
func TestReturnMergeControl(t *testing.T) {
	parallelInMakeTest(t)
	procs, keys := pick(6, 2), pick(600, 40)
	for _, spec := range sharedBackends(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			acked, reverted, _, _, _ := runReturn(t, spec, procs, keys, true)
			if reverted == 0 {
				t.Fatalf("merging the child's whole state reverted none of %d sibling updates: the scenario cannot see a revert", acked)
			}
			t.Logf("FIGURE return-merge control %s: merging the child's whole state reverts %d of %d sibling updates", spec.Backend, reverted, acked)
		})
	}
}
