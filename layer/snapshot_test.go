package layer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

func counterStack(t *testing.T) (*layer.Stack, func(id string) int) {
	t.Helper()
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		newCounter("alpha", 1), newCounter("beta", 2), layer.Text(layer.Spec{ID: "text"}, "x"),
	}})
	value := func(id string) int {
		t.Helper()
		l, ok := liveLayer(s, id)
		if !ok {
			t.Fatalf("no layer %s", id)
		}
		return l.(*counter).value()
	}
	return s, value
}

func TestSnapshotRestoreRoundTrip(t *testing.T) {
	s, value := counterStack(t)
	ctx := t.Context()
	_, _ = s.CallTool(ctx, "alpha/increment", `{"amount":3}`)
	_, _ = s.CallTool(ctx, "beta/increment", `{"amount":7}`)
	snap, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 1 || len(snap.Layers) != 2 {
		t.Fatalf("snapshot = %+v", snap)
	}
	// The snapshot survives JSON.
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	var back layer.Snapshot
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if err := s.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if value("alpha") != 0 || value("beta") != 0 {
		t.Fatalf("Clear left %d, %d", value("alpha"), value("beta"))
	}
	if err := s.Restore(ctx, back); err != nil {
		t.Fatal(err)
	}
	if value("alpha") != 3 || value("beta") != 7 {
		t.Errorf("restored %d, %d; want 3, 7", value("alpha"), value("beta"))
	}
	// Another stack of the same agent restores it too.
	s2, value2 := counterStack(t)
	if err := s2.Restore(ctx, back); err != nil {
		t.Fatal(err)
	}
	if value2("alpha") != 3 || value2("beta") != 7 {
		t.Errorf("second stack restored %d, %d", value2("alpha"), value2("beta"))
	}
}

// Restore refuses unusable snapshots without changing anything, and rolls
// back the layers already restored when one layer rejects its part.
func TestRestoreRefuses(t *testing.T) {
	good := map[string]json.RawMessage{"alpha": json.RawMessage(`{"n":100}`), "beta": json.RawMessage(`{"n":200}`)}
	tests := []struct {
		name string
		snap layer.Snapshot
	}{
		{"zero snapshot", layer.Snapshot{}},
		{"newer version", layer.Snapshot{Version: 2, Layers: good}},
		{"negative version", layer.Snapshot{Version: -1, Layers: good}},
		{"unknown layer", layer.Snapshot{Version: 1, Layers: map[string]json.RawMessage{"alpha": good["alpha"], "ghost": json.RawMessage(`{}`)}}},
		{"layer without snapshots", layer.Snapshot{Version: 1, Layers: map[string]json.RawMessage{"alpha": good["alpha"], "text": json.RawMessage(`{}`)}}},
		{"one layer rejects (alpha restored first, rolled back)", layer.Snapshot{Version: 1, Layers: map[string]json.RawMessage{"alpha": good["alpha"], "beta": json.RawMessage(`{"n":-4}`)}}},
		{"garbage for a layer", layer.Snapshot{Version: 1, Layers: map[string]json.RawMessage{"alpha": good["alpha"], "beta": json.RawMessage(`not json`)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, value := counterStack(t)
			_, _ = s.CallTool(t.Context(), "alpha/increment", `{"amount":1}`)
			_, _ = s.CallTool(t.Context(), "beta/increment", `{"amount":2}`)
			err := s.Restore(t.Context(), tt.snap)
			if !errors.Is(err, layer.ErrSnapshot) {
				t.Fatalf("Restore = %v, want ErrSnapshot", err)
			}
			if a, b := value("alpha"), value("beta"); a != 1 || b != 2 {
				t.Errorf("state after refused Restore = %d, %d; want 1, 2", a, b)
			}
		})
	}
	// A snapshot without a name restores into a named stack.
	s, value := counterStack(t)
	if err := s.Restore(t.Context(), layer.Snapshot{Version: 1, Layers: good}); err != nil || value("alpha") != 100 {
		t.Errorf("unnamed snapshot: %v, alpha %d", err, value("alpha"))
	}
}

func TestSnapshotBeforeInit(t *testing.T) {
	s := mustStack(t, layer.StackConfig{Layers: []layer.Layer{newCounter("a", 0)}})
	if _, err := s.Snapshot(t.Context()); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("Snapshot before Init = %v", err)
	}
	if err := s.Restore(t.Context(), layer.Snapshot{Version: 1}); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("Restore before Init = %v", err)
	}
	if err := s.Clear(t.Context()); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("Clear before Init = %v", err)
	}
}

type failingClear struct{ layer.Layer }

func (failingClear) Clear(context.Context) error { return errors.New("read-only") }

func TestClear(t *testing.T) {
	ev := &events{}
	c := newCounter("alpha", 0)
	store := storage.NewMemoryStore()
	s := initStack(t, layer.StackConfig{OnHook: ev.observe, Env: layer.Env{Store: store}, Layers: []layer.Layer{
		c, failingClear{layer.Text(layer.Spec{ID: "ro"}, "x")},
	}})
	_, _ = s.CallTool(t.Context(), "alpha/increment", `{"amount":12}`)
	err := s.Clear(t.Context())
	var le *layer.Error
	if !errors.As(err, &le) || le.Layer != "ro" || le.Hook != "clear" {
		t.Fatalf("Clear = %v, want the ro layer's failure", err)
	}
	if got, _ := s.CallTool(t.Context(), "alpha/peek", ""); got != "0" {
		t.Errorf("alpha after Clear = %s, want 0 (one failure must not stop the others)", got)
	}
	// Cleared state is persisted.
	it, err := store.Get(t.Context(), "layers/alpha/thread:thread-1/state")
	if err != nil || string(it.Value) != "0" {
		t.Errorf("stored state = %q, %v", it.Value, err)
	}
	equal(t, "reported", ev.failures(), []string{"ro:clear"})
}

// L9: thread-scoped state persists across runs on one store.
func TestStatePersistsAcrossRuns(t *testing.T) {
	store := storage.NewMemoryStore()
	first := initStack(t, layer.StackConfig{Env: layer.Env{Store: store}, Layers: []layer.Layer{newCounter("alpha", 0)}})
	if err := first.Store(t.Context(), layer.Turn{}); err != nil {
		t.Fatal(err)
	}
	_ = first.Close(t.Context())
	second := initStack(t, layer.StackConfig{Env: layer.Env{Store: store}, Layers: []layer.Layer{newCounter("alpha", 0)}})
	if got, _ := second.CallTool(t.Context(), "alpha/peek", ""); got != "1" {
		t.Errorf("second run sees %s, want 1", got)
	}
	other := initStack(t, layer.StackConfig{Env: layer.Env{ThreadID: "thread-2", Store: store}, Layers: []layer.Layer{newCounter("alpha", 0)}})
	if got, _ := other.CallTool(t.Context(), "alpha/peek", ""); got != "0" {
		t.Errorf("another thread sees %s, want 0", got)
	}
}

// cancelRestore is a Snapshotter whose Restore cancels the caller's
// context and fails.
type cancelRestore struct {
	layer.Layer
	cancel context.CancelFunc
}

func (c cancelRestore) Snapshot(context.Context) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}

func (c cancelRestore) Restore(ctx context.Context, _ json.RawMessage) error {
	c.cancel()
	return errors.New("interrupted")
}

// The rollback of a failed Restore runs even when the context is what
// ended it.
func TestRestoreRollbackUnderCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		newCounter("alpha", 0),
		cancelRestore{Layer: layer.Func(layer.Spec{ID: "beta"}, nil), cancel: cancel},
	}})
	_, _ = s.CallTool(t.Context(), "alpha/increment", `{"amount":1}`)
	err := s.Restore(ctx, layer.Snapshot{Version: 1, Layers: map[string]json.RawMessage{"alpha": json.RawMessage(`{"n":100}`), "beta": json.RawMessage(`{}`)}})
	if !errors.Is(err, layer.ErrSnapshot) {
		t.Fatalf("Restore = %v, want ErrSnapshot", err)
	}
	if got, _ := s.CallTool(t.Context(), "alpha/peek", ""); got != "1" {
		t.Errorf("alpha = %s after a failed Restore, want 1 (rolled back)", got)
	}
}

// Issue 10: Snapshot with IDs runs the Snapshot hooks of those layers
// only (agentloop snapshots only the layers a checkpoint restores).
func TestPlain71_SnapshotOnlyNamedLayers(t *testing.T) {
	s, _ := counterStack(t)
	snap, err := s.Snapshot(t.Context(), "beta")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Layers["beta"]; !ok || len(snap.Layers) != 1 {
		t.Errorf("Snapshot(beta) = %v, want beta's alone", snap.Layers)
	}
	if snap, err := s.Snapshot(t.Context(), "ghost"); err != nil || len(snap.Layers) != 0 || snap.Version != 1 {
		t.Errorf("Snapshot(ghost) = %+v, %v; want an empty version-1 snapshot", snap, err)
	}
	if snap, err := s.Snapshot(t.Context()); err != nil || len(snap.Layers) != 2 {
		t.Errorf("Snapshot() = %v, %v; want both counters", snap.Layers, err)
	}
}
