package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// writerArgs are the arguments of the lost-update workers.
type writerArgs struct {
	Store    storeSpec `json:"store"`
	Proc     int       `json:"proc"`
	Updates  int       `json:"updates"`
	Resource string    `json:"resource"`
	// Blind makes the worker's store ignore versions (every Put is
	// unconditional): the negative control, which must lose updates.
	Blind bool `json:"blind,omitempty"`
}

// writerResult is what a lost-update worker reports.
type writerResult struct {
	Updates   int   `json:"updates"`
	Conflicts int64 `json:"conflicts"` // Puts that lost a compare-and-swap race
	GaveUp    int   `json:"gave_up"`   // updates the layer gave up on (retried by the worker)
	ElapsedNS int64 `json:"elapsed_ns"`
}

// countingStore counts the compare-and-swap conflicts of a store, to show
// that the processes really raced.
type countingStore struct {
	storage.Store
	blind     bool
	conflicts atomic.Int64
}

func (c *countingStore) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	if c.blind {
		ifVersion = storage.AnyVersion
	}
	v, err := c.Store.Put(ctx, key, value, ifVersion)
	if errors.Is(err, storage.ErrConflict) {
		c.conflicts.Add(1)
	}
	return v, err
}

// scratchpadKey is the update key process proc sends as its i-th update.
func scratchpadKey(proc, i int) string { return fmt.Sprintf("p%02d-%03d", proc, i) }

func init() {
	workers["scratchpad-writer"] = scratchpadWriter
	workers["kv-writer"] = kvWriter
}

// scratchpadWriter adds args.Updates distinct keys to a resource-scoped
// scratchpad through the stack's update tool, the path a model's tool
// call takes.
func scratchpadWriter(ctx context.Context, raw string, in *bufio.Scanner, out *lineWriter) error {
	var args writerArgs
	st, closeFn, err := openWorkerStore(ctx, raw, &args)
	if err != nil {
		return err
	}
	defer closeFn()
	counted := &countingStore{Store: st, blind: args.Blind}
	wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		return err
	}
	stack, err := layer.NewStack(layer.StackConfig{
		Layers:       []layer.Layer{wm},
		Env:          layer.Env{ThreadID: fmt.Sprintf("thread-%d", args.Proc), ResourceID: args.Resource, Store: counted},
		ValidateArgs: agentloop.ValidateArgs,
	})
	if err != nil {
		return err
	}
	if err := stack.Init(ctx); err != nil {
		return err
	}
	defer stack.Close(context.WithoutCancel(ctx))
	out.Printf("ready")
	if err := waitFor(in, "go"); err != nil {
		return err
	}
	res := writerResult{}
	start := time.Now()
	tool := layer.ToolName(workingmemory.DefaultID, "update")
	for i := 0; i < args.Updates; {
		patch := fmt.Sprintf(`{%q: %d}`, scratchpadKey(args.Proc, i), i)
		if _, err := stack.CallTool(ctx, tool, patch); err != nil {
			if errors.Is(err, workingmemory.ErrConflict) {
				res.GaveUp++ // told, not lost: send it again
				continue
			}
			return fmt.Errorf("update %d: %w", i, err)
		}
		i++
	}
	res.ElapsedNS = time.Since(start).Nanoseconds()
	res.Updates = args.Updates
	res.Conflicts = counted.conflicts.Load()
	b, _ := json.Marshal(res)
	out.Printf("result %s", b)
	return nil
}

// kvWriter adds args.Updates distinct keys to a resource-scoped key-value
// memory, persisting each with kv.Layer.Flush (compare-and-swap, merging
// another writer's keys on conflict).
func kvWriter(ctx context.Context, raw string, in *bufio.Scanner, out *lineWriter) error {
	var args writerArgs
	st, closeFn, err := openWorkerStore(ctx, raw, &args)
	if err != nil {
		return err
	}
	defer closeFn()
	counted := &countingStore{Store: st, blind: args.Blind}
	kvl, err := kv.NewLayer(kv.LayerConfig{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		return err
	}
	l, err := kvl.Open(ctx, layer.Env{ThreadID: fmt.Sprintf("thread-%d", args.Proc), ResourceID: args.Resource, Store: counted})
	if err != nil {
		return err
	}
	out.Printf("ready")
	if err := waitFor(in, "go"); err != nil {
		return err
	}
	res := writerResult{Updates: args.Updates}
	start := time.Now()
	flush := func() error {
		for {
			err := l.Flush(ctx)
			if !errors.Is(err, kv.ErrConflict) {
				return err
			}
			res.GaveUp++ // told, not lost: the changes stay pending
		}
	}
	for i := range args.Updates {
		if err := kv.Set(l.Memory(), scratchpadKey(args.Proc, i), i); err != nil {
			return err
		}
		if err := flush(); err != nil {
			return fmt.Errorf("update %d: %w", i, err)
		}
	}
	res.ElapsedNS = time.Since(start).Nanoseconds()
	res.Conflicts = counted.conflicts.Load()
	b, _ := json.Marshal(res)
	out.Printf("result %s", b)
	return nil
}

// runWriters starts procs workers of role, releases them together and
// returns their results and the wall time from release to the last
// result.
func runWriters(t *testing.T, role string, spec storeSpec, procs, updates int, resource string, blind bool) ([]writerResult, time.Duration) {
	t.Helper()
	return runWorkers[writerResult](t, role, procs, 10*time.Minute, func(p int) any {
		return writerArgs{Store: spec, Proc: p, Updates: updates, Resource: resource, Blind: blind}
	})
}

// TestLostUpdates runs 8 processes × 200 updates, each adding a distinct
// key to one resource-scoped scratchpad, against every shared backend:
// the final state must hold all 1,600 keys with their values. The same
// runs against a key-value memory persisted with compare-and-swap.
func TestLostUpdates(t *testing.T) {
	parallelInMakeTest(t)
	procs, updates := pick(8, 3), pick(200, 20)
	for _, spec := range sharedBackends(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			t.Run("scratchpad", func(t *testing.T) {
				const resource = "team-1"
				results, elapsed := runWriters(t, "scratchpad-writer", spec, procs, updates, resource, false)
				st := mustOpen(t, spec)
				it, err := st.Get(t.Context(), storage.LayerKey(workingmemory.DefaultStorageID, storage.ResourceScope(resource), "state"))
				if err != nil {
					t.Fatalf("stored state: %v", err)
				}
				var state map[string]any
				if err := json.Unmarshal(scratchpadState(t, it.Value), &state); err != nil {
					t.Fatalf("stored state is not a JSON object: %v\n%.300s", err, it.Value)
				}
				lost := checkKeys(t, state, procs, updates)

				// A new run of the layer on another thread of the resource sees
				// the same state.
				wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
				if err != nil {
					t.Fatal(err)
				}
				bound, err := wm.Init(t.Context(), layer.Env{ThreadID: "reader", ResourceID: resource, Store: st})
				if err != nil {
					t.Fatal(err)
				}
				got, ok := bound.(*workingmemory.Layer).State().(map[string]any)
				if !ok || len(got) != len(state) {
					t.Errorf("Init on a new thread: %d keys, stored state has %d", len(got), len(state))
				}
				report(t, spec.Backend+" scratchpad", results, elapsed, lost)
			})
			t.Run("kv", func(t *testing.T) {
				spec := spec
				if spec.Backend == "redis" {
					spec.Namespace += "kv:"
				}
				const resource = "team-kv"
				results, elapsed := runWriters(t, "kv-writer", spec, procs, updates, resource, false)
				st := mustOpen(t, spec)
				kvl, err := kv.NewLayer(kv.LayerConfig{Spec: layer.Spec{Scope: layer.ScopeResource}})
				if err != nil {
					t.Fatal(err)
				}
				stored, err := kvl.Open(t.Context(), layer.Env{ThreadID: "reader", ResourceID: resource, Store: st})
				if err != nil {
					t.Fatalf("stored key-value memory: %v", err)
				}
				state := map[string]any{}
				entries, err := stored.Memory().Entries()
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					var v any
					if err := json.Unmarshal(e.Value, &v); err != nil {
						t.Fatalf("entry %q: %v", e.Key, err)
					}
					state[e.Key] = v
				}
				lost := checkKeys(t, state, procs, updates)
				report(t, spec.Backend+" kv", results, elapsed, lost)
			})
		})
	}
}

// TestLostUpdatesControl runs the scratchpad writers of TestLostUpdates
// over a store that ignores versions: they must lose updates, which shows
// that TestLostUpdates can see a loss.
func TestLostUpdatesControl(t *testing.T) {
	if !heavy() {
		t.Skip("the negative control runs with " + heavyEnv + "=1")
	}
	spec := storeSpec{Backend: "sqlite", Path: t.TempDir() + "/blind.db"}
	const resource = "team-1"
	runWriters(t, "scratchpad-writer", spec, 8, 200, resource, true)
	st := mustOpen(t, spec)
	it, err := st.Get(t.Context(), storage.LayerKey(workingmemory.DefaultStorageID, storage.ResourceScope(resource), "state"))
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(scratchpadState(t, it.Value), &state); err != nil {
		t.Fatal(err)
	}
	if len(state) >= 1600 {
		t.Fatalf("blind writes kept all %d keys: the scenario cannot see lost updates", len(state))
	}
	t.Logf("FIGURE lost-updates control: without compare-and-swap, %d of 1600 updates survive", len(state))
}

// checkKeys checks that state holds exactly the keys the workers sent,
// each with its value, and returns how many are missing.
func checkKeys(t *testing.T, state map[string]any, procs, updates int) int {
	t.Helper()
	lost := 0
	for p := range procs {
		for i := range updates {
			k := scratchpadKey(p, i)
			v, ok := state[k]
			if !ok {
				lost++
				continue
			}
			if n, ok := v.(float64); !ok || int(n) != i {
				t.Errorf("key %s = %v, want %d", k, v, i)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d updates lost", lost, procs*updates)
	}
	if len(state) != procs*updates {
		keys := make([]string, 0, len(state))
		for k := range state {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		t.Errorf("state has %d keys, want %d (first: %.10q)", len(state), procs*updates, keys)
	}
	return lost
}

func report(t *testing.T, what string, results []writerResult, elapsed time.Duration, lost int) {
	t.Helper()
	var updates, gaveUp int
	var conflicts int64
	for _, r := range results {
		updates += r.Updates
		conflicts += r.Conflicts
		gaveUp += r.GaveUp
	}
	t.Logf("FIGURE lost-updates %s: %d processes, %d updates in %v = %.0f updates/s, %d lost, %d CAS conflicts, %d updates given up by the layer and resent",
		what, len(results), updates, elapsed.Round(time.Millisecond), float64(updates)/elapsed.Seconds(), lost, conflicts, gaveUp)
}
