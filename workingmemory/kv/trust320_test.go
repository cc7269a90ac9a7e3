package kv

import (
	"sync"
	"testing"
)

// TestTrust320_DisposedCount: a scope-disposed event carries how many
// entries the disposal removed from that scope, for each scope disposed,
// like a cleared event does. Before, it carried 0.
func TestTrust320_DisposedCount(t *testing.T) {
	var mu sync.Mutex
	counts := map[string]int{}
	clock := &fakeClock{}
	root := New(Config{Now: clock.Now, OnChange: func(e Change) {
		if e.Kind == ChangeScopeDisposed {
			mu.Lock()
			counts[e.Scope] = e.Count
			mu.Unlock()
		}
	}})
	a, _ := root.Child("a")
	ab, _ := a.Child("b") // nests in a
	empty, _ := root.Child("empty")
	for _, k := range []string{"x", "y", "z"} {
		_ = Set(a, k, 1)
	}
	_ = Set(ab, "x", 2) // the same key as its parent's
	_ = Set(root, "x", 0)
	if err := a.Dispose(); err != nil {
		t.Fatal(err)
	}
	if err := empty.Dispose(); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"root/a": 3, "root/a/b": 1, "root/empty": 0}
	mu.Lock()
	defer mu.Unlock()
	for scope, n := range want {
		if got, ok := counts[scope]; !ok || got != n {
			t.Errorf("disposed %s: count %d (event %v), want %d", scope, got, ok, n)
		}
	}
	if n, _ := root.LocalCount(); n != 1 {
		t.Errorf("root holds %d entries after its children were disposed, want 1", n)
	}
}
