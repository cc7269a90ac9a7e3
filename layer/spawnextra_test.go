package layer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// failInit is an Initializer whose Init fails.
type failInit struct{ spec layer.Spec }

func (f *failInit) Spec() layer.Spec { return f.spec }
func (f *failInit) Init(context.Context, layer.Env) (layer.Layer, error) {
	return nil, errors.New("no backend")
}
func (f *failInit) Recall(context.Context, layer.Query) ([]layer.Item, error) { return nil, nil }

// TestFit07_SpawnExtraLayers: Stack.Spawn's extra layers are the child's
// own: initialised with the child's env, absent from the parent, closed by
// the child. A nil layer, an invalid spec or an ID the parent has fails
// before any hook; a failing Init fails the spawn and closes the child's
// layers, unless the spec says DisableOnInitError.
func TestFit07_SpawnExtraLayers(t *testing.T) {
	ctx := t.Context()
	spec := func(id string) layer.Spec {
		return layer.Spec{ID: id, Slot: 10, Scope: layer.ScopeThread, Budget: layer.Budget{Max: 100}}
	}
	parentOwn := &sharedCloser{spec: spec("own")}
	parent, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{parentOwn}, Env: layer.Env{ThreadID: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Init(ctx); err != nil {
		t.Fatal(err)
	}
	extra := &envInit{spec: spec("extra"), envs: make(chan layer.Env, 4)}
	child, err := parent.Spawn(ctx, layer.Env{ThreadID: "c"}, extra)
	if err != nil {
		t.Fatal(err)
	}
	if env := <-extra.envs; env.ThreadID != "c" {
		t.Errorf("extra layer's Init env = %+v, want the child's", env)
	}
	if _, ok := layer.Find[layer.Layer](child, "extra"); !ok {
		t.Error("the child has no extra layer")
	}
	if _, ok := layer.Find[layer.Layer](parent, "extra"); ok {
		t.Error("the parent has the child's extra layer")
	}
	closer := &sharedCloser{spec: spec("closer")}
	child2, err := parent.Spawn(ctx, layer.Env{ThreadID: "c2"}, closer)
	if err != nil {
		t.Fatal(err)
	}
	if err := child2.Close(ctx); err != nil || closer.closes.Load() != 1 {
		t.Errorf("child Close: %v, extra layer closed %d times", err, closer.closes.Load())
	}
	if parentOwn.closes.Load() != 0 {
		t.Error("the child closed the parent's layer")
	}

	for name, bad := range map[string][]layer.Layer{
		"nil":          {nil},
		"invalid spec": {&sharedCloser{spec: spec("Not Kebab")}},
		"parent's ID":  {&sharedCloser{spec: spec("own")}},
		"twice":        {&sharedCloser{spec: spec("x")}, &sharedCloser{spec: spec("x")}},
	} {
		if _, err := parent.Spawn(ctx, layer.Env{ThreadID: "c"}, bad...); err == nil {
			t.Errorf("%s: Spawn accepted it", name)
		}
	}
	before := &sharedCloser{spec: spec("before")}
	if _, err := parent.Spawn(ctx, layer.Env{ThreadID: "c"}, before, &failInit{spec: spec("fails")}); err == nil {
		t.Error("a failing extra Init did not fail the spawn")
	}
	if before.closes.Load() != 1 {
		t.Errorf("after a failed spawn, the extra layer before it was closed %d times, want 1", before.closes.Load())
	}
	soft := spec("soft")
	soft.DisableOnInitError = true
	c3, err := parent.Spawn(ctx, layer.Env{ThreadID: "c"}, &failInit{spec: soft})
	if err != nil {
		t.Fatalf("DisableOnInitError extra layer: %v", err)
	}
	if _, ok := layer.Find[layer.Layer](c3, "soft"); ok {
		t.Error("a disabled extra layer is live")
	}
}
