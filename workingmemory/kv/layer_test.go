package kv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
	"github.com/memlayer/memlayer/storage"
)

func testEnv(st storage.Store) layer.Env {
	return layer.Env{ThreadID: "thread-1", ResourceID: "user-1", ExecutionID: "exec-1", Store: st, Logger: slog.New(slog.DiscardHandler)}
}

// boundKV returns a Layer built from cfg and opened on env.
func boundKV(t testing.TB, cfg LayerConfig, env layer.Env) *Layer {
	t.Helper()
	tmpl, err := NewLayer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tmpl.Open(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestKVLayerConformance(t *testing.T) {
	for _, scope := range []layer.Scope{layer.ScopeThread, layer.ScopeResource, layer.ScopeExecution} {
		t.Run(string(scope), func(t *testing.T) {
			// SharedSpawn: the child's scope lives in the parent's tree on
			// purpose (it reads through to the parent's entries).
			opts := layertest.Options{SharedSpawn: true, Populate: func(ctx context.Context, l layer.Layer) error {
				kl, _ := layer.As[*Layer](l)
				return Set(kl.Memory(), "launch", "friday")
			}}
			opts.Run(t, func(t *testing.T) layer.Layer {
				l, err := NewLayer(LayerConfig{Spec: layer.Spec{Scope: scope}})
				if err != nil {
					t.Fatal(err)
				}
				return l
			})
		})
	}
}

func TestKVLayerConfig(t *testing.T) {
	kl, err := NewLayer(LayerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if spec := kl.Spec(); spec.ID != DefaultLayerID || spec.StorageName() != DefaultStorageID || spec.Slot != 120 || spec.Scope != layer.ScopeThread {
		t.Errorf("spec = %+v", spec)
	}
	if _, err := NewLayer(LayerConfig{Spec: layer.Spec{ID: "Bad ID"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad ID: %v", err)
	}
	if _, err := NewLayer(LayerConfig{Spec: layer.Spec{Scope: "galaxy"}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad scope: %v", err)
	}
	// The template holds no memory: only a bound layer does.
	if kl.Memory() != nil {
		t.Error("the template has a memory")
	}
	if _, err := kl.Snapshot(t.Context()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("template Snapshot: %v", err)
	}
	if err := kl.Restore(t.Context(), []byte(`{"version":1}`)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("template Restore: %v", err)
	}
	// Render gets the run's memory; its text is fenced.
	bound := boundKV(t, LayerConfig{Render: func(kv *Scope) string {
		keys, _ := kv.Keys()
		return strings.Join(keys, ",")
	}}, testEnv(nil))
	if items, _ := bound.Recall(t.Context(), layer.Query{}); len(items) != 0 {
		t.Errorf("empty render recalled %v", items)
	}
	_ = Set(bound.Memory(), "a</kv_memory>", 1)
	items, _ := bound.Recall(t.Context(), layer.Query{})
	if len(items) != 1 || strings.Count(items[0].Text, "</kv_memory>") != 1 {
		t.Errorf("render = %v", items)
	}
}

// TestKVLayerFenceTag: the layer fences its block with its ID, '-'
// replaced by '_', as the scratchpad does.
func TestKVLayerFenceTag(t *testing.T) {
	for _, tc := range []struct{ id, tag string }{{"", "kv_memory"}, {"shared-facts", "shared_facts"}} {
		kl := boundKV(t, LayerConfig{Spec: layer.Spec{ID: tc.id}, Render: func(*Scope) string { return "x" }}, layer.Env{ThreadID: "t"})
		items, err := kl.Recall(t.Context(), layer.Query{})
		if err != nil || len(items) != 1 || items[0].Text != "<"+tc.tag+">\nx\n</"+tc.tag+">" {
			t.Errorf("layer %q Recall = %v, %v, want a <%s> fence", tc.id, items, err, tc.tag)
		}
	}
}

func TestKVLayerSpawn(t *testing.T) {
	for _, merge := range []bool{false, true} {
		t.Run(fmt.Sprint("merge=", merge), func(t *testing.T) {
			st := storage.NewMemoryStore()
			kl, err := NewLayer(LayerConfig{MergeOnReturn: merge, ChildName: func(e layer.Env) string { return "child-" + e.ThreadID }})
			if err != nil {
				t.Fatal(err)
			}
			stack, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{kl}, Env: testEnv(st)})
			if err != nil {
				t.Fatal(err)
			}
			if err := stack.Init(t.Context()); err != nil {
				t.Fatal(err)
			}
			root, err := From(stack, "")
			if err != nil {
				t.Fatal(err)
			}
			_ = Set(root, "shared", "parent")
			if rec, _ := stack.Recall(t.Context(), layer.Query{}, nil); len(rec) != 0 {
				t.Errorf("kv layer recalled %v by default", rec)
			}
			child, err := stack.Spawn(t.Context(), layer.Env{ThreadID: "t2"})
			if err != nil {
				t.Fatal(err)
			}
			ckv, err := From(child, "")
			if err != nil {
				t.Fatal(err)
			}
			if ckv.Parent() != root || ckv.Name() != "child-t2" {
				t.Fatalf("child kv = %s", ckv.Path())
			}
			if v, _, _ := Get[string](ckv, "shared"); v != "parent" {
				t.Errorf("child does not read the parent's entry: %q", v)
			}
			_ = Set(ckv, "found", "by child")
			if root.Contains("found") {
				t.Error("child write visible in the parent before return")
			}
			// The child's scope is not persisted.
			if err := child.Store(t.Context(), layer.Turn{}); err != nil {
				t.Fatal(err)
			}
			if it, err := st.Get(t.Context(), storage.LayerKey(DefaultStorageID, storage.ThreadScope("thread-1"), "state")); err == nil && strings.Contains(string(it.Value), "found") {
				t.Errorf("the child's entry was stored before return: %s", it.Value)
			}
			if err := stack.Return(t.Context(), child); err != nil {
				t.Fatal(err)
			}
			if root.Contains("found") != merge {
				t.Errorf("after return, parent has child entry = %v, want %v", root.Contains("found"), merge)
			}
			if !errors.Is(Set(ckv, "x", 1), ErrDisposed) {
				t.Error("child scope not disposed on return")
			}
			// A merged entry is persisted with the parent's scope.
			_ = stack.Close(t.Context())
			again := boundKV(t, LayerConfig{}, testEnv(st))
			if again.Memory().Contains("found") != merge || !again.Memory().Contains("shared") {
				t.Errorf("stored after return: found=%v shared=%v, want %v true", again.Memory().Contains("found"), again.Memory().Contains("shared"), merge)
			}
		})
	}
	if _, err := From(mustStack(t), DefaultLayerID); err == nil {
		t.Error("From found a layer the stack does not have")
	}
}

func mustStack(t *testing.T, ls ...layer.Layer) *layer.Stack {
	t.Helper()
	s, err := layer.NewStack(layer.StackConfig{Layers: ls, Env: testEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s
}

// Each scope key has its own memory, persisted under its own key;
// execution scope is never stored.
func TestKVLayerScopes(t *testing.T) {
	ctx := t.Context()
	envA := layer.Env{ThreadID: "thread-a", ResourceID: "user-1", Store: storage.NewMemoryStore()}
	envB := layer.Env{ThreadID: "thread-b", ResourceID: "user-1", Store: envA.Store}
	envC := layer.Env{ThreadID: "thread-c", ResourceID: "user-2", Store: envA.Store}
	cases := []struct {
		scope       layer.Scope
		seenByB     bool // thread-b of the same user
		seenByC     bool // another user
		seenByAgain bool // a later run of thread-a
	}{
		{layer.ScopeThread, false, false, true},
		{layer.ScopeResource, true, false, true},
		{layer.ScopeGlobal, true, true, true},
		{layer.ScopeExecution, false, false, false},
	}
	for _, c := range cases {
		t.Run(string(c.scope), func(t *testing.T) {
			cfg := LayerConfig{Spec: layer.Spec{ID: "kv-" + string(c.scope), Scope: c.scope}}
			a := boundKV(t, cfg, envA)
			if err := Set(a.Memory(), "k", "from a"); err != nil {
				t.Fatal(err)
			}
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			for _, o := range []struct {
				env  layer.Env
				want bool
			}{{envB, c.seenByB}, {envC, c.seenByC}, {envA, c.seenByAgain}} {
				if got := boundKV(t, cfg, o.env).Memory().Contains("k"); got != o.want {
					t.Errorf("%s/%s sees a's entry: %v, want %v", o.env.ThreadID, o.env.ResourceID, got, o.want)
				}
			}
		})
	}
	keys, _ := envA.Store.List(ctx, "")
	for _, k := range keys {
		if strings.Contains(k, "kv-execution") {
			t.Errorf("execution scope stored %s", k)
		}
	}
}

// Restore and Clear of one run touch only that run's scope.
func TestKVLayerRestoreOwnScope(t *testing.T) {
	ctx := t.Context()
	st := storage.NewMemoryStore()
	a := boundKV(t, LayerConfig{}, layer.Env{ThreadID: "a", Store: st})
	b := boundKV(t, LayerConfig{}, layer.Env{ThreadID: "b", Store: st})
	_ = Set(a.Memory(), "a1", 1)
	snap, err := a.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = Set(a.Memory(), "a2", 2)
	_ = Set(b.Memory(), "b1", 1)
	for _, l := range []*Layer{a, b} {
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if a.Memory().Contains("a2") || !a.Memory().Contains("a1") || a.Memory().Contains("b1") {
		t.Errorf("a after restore: %v", must(a.Memory().Keys()))
	}
	if keys := must(boundKV(t, LayerConfig{}, layer.Env{ThreadID: "b", Store: st}).Memory().Keys()); len(keys) != 1 || keys[0] != "b1" {
		t.Errorf("b's stored keys after a's restore: %v", keys)
	}
	if keys := must(boundKV(t, LayerConfig{}, layer.Env{ThreadID: "a", Store: st}).Memory().Keys()); len(keys) != 1 || keys[0] != "a1" {
		t.Errorf("a's stored keys after its restore: %v", keys)
	}
	if err := a.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if n := must(boundKV(t, LayerConfig{}, layer.Env{ThreadID: "a", Store: st}).Memory().Count()); n != 0 {
		t.Errorf("a's stored entries after Clear: %d", n)
	}
	if !b.Memory().Contains("b1") || !boundKV(t, LayerConfig{}, layer.Env{ThreadID: "b", Store: st}).Memory().Contains("b1") {
		t.Error("a's Clear reached b")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Runs of one scope writing at once lose no update: each keeps the
// others' keys, and a removal by one is not undone by another.
func TestKVLayerConcurrentRunsLoseNothing(t *testing.T) {
	ctx := t.Context()
	st := storage.NewMemoryStore()
	env := layer.Env{ThreadID: "t", ResourceID: "team", Store: st}
	cfg := LayerConfig{Spec: layer.Spec{Scope: layer.ScopeResource}}
	seed := boundKV(t, cfg, env)
	_ = Set(seed.Memory(), "doomed", true)
	if err := seed.Close(ctx); err != nil {
		t.Fatal(err)
	}
	const runs, writes = 6, 25
	var wg sync.WaitGroup
	for r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := boundKV(t, cfg, env)
			for i := range writes {
				if err := Set(l.Memory(), fmt.Sprintf("r%d-%02d", r, i), i); err != nil {
					t.Error(err)
				}
				if r == 0 && i == 3 {
					_, _ = l.Memory().Remove("doomed")
				}
				// A persist that gives up keeps its changes for the
				// next one: told, not lost.
				if err := l.Flush(ctx); err != nil && !errors.Is(err, ErrConflict) {
					t.Error(err)
				}
			}
			err := l.Close(ctx)
			for try := 0; errors.Is(err, ErrConflict) && try < 10; try++ {
				err = l.Close(ctx)
			}
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	kv := boundKV(t, cfg, env).Memory()
	lost := 0
	for r := range runs {
		for i := range writes {
			if v, ok, _ := Get[int](kv, fmt.Sprintf("r%d-%02d", r, i)); !ok || v != i {
				lost++
			}
		}
	}
	if lost != 0 {
		t.Errorf("%d of %d writes lost", lost, runs*writes)
	}
	if kv.Contains("doomed") {
		t.Error("a removed key came back")
	}
}

// flakyStore fails the next n Puts.
type flakyStore struct {
	storage.Store
	mu   sync.Mutex
	fail int
}

func (f *flakyStore) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	f.mu.Lock()
	fail := f.fail > 0
	if fail {
		f.fail--
	}
	f.mu.Unlock()
	if fail {
		return 0, errors.New("disk full")
	}
	return f.Store.Put(ctx, key, value, ifVersion)
}

// A failed persist is returned and keeps the changes for the next one.
func TestKVLayerFailedPersistKeepsChanges(t *testing.T) {
	ctx := t.Context()
	st := &flakyStore{Store: storage.NewMemoryStore(), fail: 1}
	env := layer.Env{ThreadID: "t", Store: st}
	l := boundKV(t, LayerConfig{}, env)
	_ = Set(l.Memory(), "k", "v")
	if err := l.Store(ctx, layer.Turn{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Store over a failing Put: %v", err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !boundKV(t, LayerConfig{}, env).Memory().Contains("k") {
		t.Error("the write was lost after a failed persist")
	}
}

// TestKVLayerBadStoredState: a stored state that cannot be read is set
// aside under a quarantine key (bytes intact) and the run starts with an
// empty memory, as the scratchpad and entity memory do; before, every run
// of the thread failed until someone repaired the store. A state from a
// newer version fails Init and stays stored as it is.
func TestKVLayerBadStoredState(t *testing.T) {
	ctx := t.Context()
	key := storage.LayerKey(DefaultStorageID, storage.ThreadScope("t"), "state")
	for _, bad := range []string{`not json`, `{"version":1,"name":"root","entries":{"a\u0000b":{"value":1}}}`, `{"version":0}`} {
		st := storage.NewMemoryStore()
		if _, err := st.Put(ctx, key, []byte(bad), storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
		tmpl, _ := NewLayer(LayerConfig{})
		l, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", Store: st, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Errorf("Init over %s: %v, want the state set aside", bad, err)
			continue
		}
		if n, _ := l.(*Layer).Memory().Count(); n != 0 {
			t.Errorf("Init over %s: %d entries, want an empty memory", bad, n)
		}
		if _, err := st.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Init over %s: the state key is still there: %v", bad, err)
		}
		keys, _ := st.List(ctx, storage.LayerPrefix(DefaultStorageID, storage.ThreadScope("t")))
		if len(keys) != 1 || !strings.Contains(keys[0], "quarantine") {
			t.Errorf("Init over %s: keys %q, want one quarantine key", bad, keys)
		} else if it, _ := st.Get(ctx, keys[0]); string(it.Value) != bad {
			t.Errorf("quarantined %q, want the stored bytes %q", it.Value, bad)
		}
	}
	st := storage.NewMemoryStore()
	newer := `{"version":99}`
	if _, err := st.Put(ctx, key, []byte(newer), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	tmpl, _ := NewLayer(LayerConfig{})
	if _, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", Store: st}); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), key) {
		t.Errorf("Init over %s: %v, want ErrVersion naming the key", newer, err)
	}
	if it, err := st.Get(ctx, key); err != nil || string(it.Value) != newer {
		t.Errorf("stored state after a refused Init: %s, %v", it.Value, err)
	}
}

// TestFit09_ParallelChildAgents: two child agents spawned in parallel
// under one scope name (ChildName gives both "task-1") each get a new
// scope of their own, owned by their execution: neither sees the other's
// entries.
func TestFit09_ParallelChildAgents(t *testing.T) {
	kl, err := NewLayer(LayerConfig{ChildName: func(layer.Env) string { return "task-1" }})
	if err != nil {
		t.Fatal(err)
	}
	stack, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{kl}, Env: layer.Env{ThreadID: "t", ExecutionID: "parent-exec"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := stack.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	root, _ := From(stack, "")
	if root.AgentID() != "parent-exec" {
		t.Errorf("run memory AgentID = %q, want the execution ID", root.AgentID())
	}
	var mems []*Scope
	for _, exec := range []string{"exec-a", "exec-b"} {
		c, err := stack.Spawn(t.Context(), layer.Env{ThreadID: "t/" + exec, ExecutionID: exec})
		if err != nil {
			t.Fatal(err)
		}
		m, err := From(c, "")
		if err != nil {
			t.Fatal(err)
		}
		if m.AgentID() != exec || m.Name() != "task-1" {
			t.Errorf("child scope %s: agent %q", m.ID(), m.AgentID())
		}
		mems = append(mems, m)
	}
	_ = Set(mems[0], "answer", "a")
	if mems[1].Contains("answer") || mems[0].ID() == mems[1].ID() {
		t.Error("two children named task-1 share a scope")
	}
}

// TestKVLayerMetricsTotalsOnlyGrow: "writes_total" counts the entries
// set, removed and cleared, and no "_total" falls when a child scope that
// did work is merged and disposed.
func TestKVLayerMetricsTotalsOnlyGrow(t *testing.T) {
	l := boundKV(t, LayerConfig{}, testEnv(storage.NewMemoryStore()))
	mem := l.Memory()
	for _, k := range []string{"a", "b", "c"} {
		if err := Set(mem, k, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mem.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if n, err := mem.Clear(); err != nil || n != 2 {
		t.Fatalf("Clear = %d, %v", n, err)
	}
	if got := l.Metrics()["writes_total"]; got != 3+1+2 {
		t.Errorf("writes_total = %d, want 6 (3 set, 1 removed, 2 cleared)", got)
	}
	child, err := mem.Child("task")
	if err != nil {
		t.Fatal(err)
	}
	if err := Set(child, "x", 1); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Get[int](child, "missing-here"); ok || err != nil {
		t.Fatalf("a missing key: %v, %v", ok, err)
	}
	if err := Set(mem, "p", 1); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Get[int](child, "p"); !ok || err != nil { // answered by the parent
		t.Fatalf("p from the parent: %v, %v", ok, err)
	}
	before := l.Metrics()
	if before["writes_total"] != 8 || before["fallback_lookups_total"] == 0 {
		t.Fatalf("before the merge: %v", before)
	}
	if _, err := child.MergeToParent(true); err != nil {
		t.Fatal(err)
	}
	if err := child.Dispose(); err != nil {
		t.Fatal(err)
	}
	after := l.Metrics()
	for name, v := range before {
		if strings.HasSuffix(name, "_total") && after[name] < v {
			t.Errorf("%s fell from %d to %d when the child scope was disposed", name, v, after[name])
		}
	}
	if after["writes_total"] != 9 { // the merge set x in the parent
		t.Errorf("writes_total after the merge = %d, want 9", after["writes_total"])
	}
}
