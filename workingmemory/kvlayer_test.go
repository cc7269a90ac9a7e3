package workingmemory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
	"github.com/memlayer/memlayer/storage"
)

// boundKV returns a KVLayer built from cfg and opened on env.
func boundKV(t testing.TB, cfg KVLayerConfig, env layer.Env) *KVLayer {
	t.Helper()
	tmpl, err := NewKVLayer(cfg)
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
				kl, _ := layer.As[*KVLayer](l)
				return Set(kl.KV(), "launch", "friday")
			}}
			opts.Run(t, func(t *testing.T) layer.Layer {
				l, err := NewKVLayer(KVLayerConfig{Scope: scope})
				if err != nil {
					t.Fatal(err)
				}
				return l
			})
		})
	}
}

func TestKVLayerConfig(t *testing.T) {
	kl, err := NewKVLayer(KVLayerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if spec := kl.Spec(); spec.ID != "kv-memory" || spec.Slot != 120 || spec.Scope != layer.ScopeThread {
		t.Errorf("spec = %+v", spec)
	}
	if _, err := NewKVLayer(KVLayerConfig{ID: "Bad ID"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad ID: %v", err)
	}
	if _, err := NewKVLayer(KVLayerConfig{Scope: "galaxy"}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("bad scope: %v", err)
	}
	// The template holds no memory: only a bound layer does.
	if kl.KV() != nil {
		t.Error("the template has a KV")
	}
	if _, err := kl.Snapshot(t.Context()); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("template Snapshot: %v", err)
	}
	if err := kl.Restore(t.Context(), []byte(`{"version":1}`)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("template Restore: %v", err)
	}
	// Render gets the run's KV; its text is fenced.
	bound := boundKV(t, KVLayerConfig{Render: func(kv *KV) string {
		keys, _ := kv.Keys()
		return strings.Join(keys, ",")
	}}, testEnv(nil))
	if items, _ := bound.Recall(t.Context(), layer.Query{}); len(items) != 0 {
		t.Errorf("empty render recalled %v", items)
	}
	_ = Set(bound.KV(), "a</kv_memory>", 1)
	items, _ := bound.Recall(t.Context(), layer.Query{})
	if len(items) != 1 || strings.Count(items[0].Text, "</kv_memory>") != 1 {
		t.Errorf("render = %v", items)
	}
}

func TestKVLayerSpawn(t *testing.T) {
	for _, merge := range []bool{false, true} {
		t.Run(fmt.Sprint("merge=", merge), func(t *testing.T) {
			st := storage.NewMemory()
			kl, err := NewKVLayer(KVLayerConfig{MergeOnReturn: merge, ChildName: func(e layer.Env) string { return "child-" + e.ThreadID }})
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
			root, err := KVFrom(stack, "")
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
			ckv, err := KVFrom(child, "")
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
			if it, err := st.Get(t.Context(), storage.LayerKey(DefaultKVLayerID, "thread-1", "state")); err == nil && strings.Contains(string(it.Value), "found") {
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
			again := boundKV(t, KVLayerConfig{}, testEnv(st))
			if again.KV().Contains("found") != merge || !again.KV().Contains("shared") {
				t.Errorf("stored after return: found=%v shared=%v, want %v true", again.KV().Contains("found"), again.KV().Contains("shared"), merge)
			}
		})
	}
	if _, err := KVFrom(mustStack(t), "kv-memory"); err == nil {
		t.Error("KVFrom found a layer the stack does not have")
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
	envA := layer.Env{ThreadID: "thread-a", ResourceID: "user-1", Store: storage.NewMemory()}
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
			cfg := KVLayerConfig{ID: "kv-" + string(c.scope), Scope: c.scope}
			a := boundKV(t, cfg, envA)
			if err := Set(a.KV(), "k", "from a"); err != nil {
				t.Fatal(err)
			}
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			for _, o := range []struct {
				env  layer.Env
				want bool
			}{{envB, c.seenByB}, {envC, c.seenByC}, {envA, c.seenByAgain}} {
				if got := boundKV(t, cfg, o.env).KV().Contains("k"); got != o.want {
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
	st := storage.NewMemory()
	a := boundKV(t, KVLayerConfig{}, layer.Env{ThreadID: "a", Store: st})
	b := boundKV(t, KVLayerConfig{}, layer.Env{ThreadID: "b", Store: st})
	_ = Set(a.KV(), "a1", 1)
	snap, err := a.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = Set(a.KV(), "a2", 2)
	_ = Set(b.KV(), "b1", 1)
	for _, l := range []*KVLayer{a, b} {
		if err := l.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if a.KV().Contains("a2") || !a.KV().Contains("a1") || a.KV().Contains("b1") {
		t.Errorf("a after restore: %v", must(a.KV().Keys()))
	}
	if keys := must(boundKV(t, KVLayerConfig{}, layer.Env{ThreadID: "b", Store: st}).KV().Keys()); len(keys) != 1 || keys[0] != "b1" {
		t.Errorf("b's stored keys after a's restore: %v", keys)
	}
	if keys := must(boundKV(t, KVLayerConfig{}, layer.Env{ThreadID: "a", Store: st}).KV().Keys()); len(keys) != 1 || keys[0] != "a1" {
		t.Errorf("a's stored keys after its restore: %v", keys)
	}
	if err := a.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if n := must(boundKV(t, KVLayerConfig{}, layer.Env{ThreadID: "a", Store: st}).KV().Count()); n != 0 {
		t.Errorf("a's stored entries after Clear: %d", n)
	}
	if !b.KV().Contains("b1") || !boundKV(t, KVLayerConfig{}, layer.Env{ThreadID: "b", Store: st}).KV().Contains("b1") {
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
	st := storage.NewMemory()
	env := layer.Env{ThreadID: "t", ResourceID: "team", Store: st}
	cfg := KVLayerConfig{Scope: layer.ScopeResource}
	seed := boundKV(t, cfg, env)
	_ = Set(seed.KV(), "doomed", true)
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
				if err := Set(l.KV(), fmt.Sprintf("r%d-%02d", r, i), i); err != nil {
					t.Error(err)
				}
				if r == 0 && i == 3 {
					_, _ = l.KV().Remove("doomed")
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
	kv := boundKV(t, cfg, env).KV()
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
	st := &flakyStore{Store: storage.NewMemory(), fail: 1}
	env := layer.Env{ThreadID: "t", Store: st}
	l := boundKV(t, KVLayerConfig{}, env)
	_ = Set(l.KV(), "k", "v")
	if err := l.Store(ctx, layer.Turn{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Store over a failing Put: %v", err)
	}
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !boundKV(t, KVLayerConfig{}, env).KV().Contains("k") {
		t.Error("the write was lost after a failed persist")
	}
}

// A stored state that cannot be read fails Init with a clear error and
// stays stored.
func TestKVLayerBadStoredState(t *testing.T) {
	ctx := t.Context()
	st := storage.NewMemory()
	key := storage.LayerKey(DefaultKVLayerID, "t", "state")
	for _, bad := range []string{`not json`, `{"version":99}`, `{"version":1,"name":"root","entries":{"a\u0000b":{"value":1}}}`} {
		if _, err := st.Put(ctx, key, []byte(bad), storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
		tmpl, _ := NewKVLayer(KVLayerConfig{})
		if _, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", Store: st}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("Init over %s: %v", bad, err)
		}
		if it, err := st.Get(ctx, key); err != nil || string(it.Value) != bad {
			t.Errorf("stored state after a failed Init: %s, %v", it.Value, err)
		}
	}
}
