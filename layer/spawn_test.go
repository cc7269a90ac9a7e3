package layer_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// spawner returns what its spawn func says.
type spawner struct {
	spec  layer.Spec
	spawn func(ctx context.Context, child layer.Env) (layer.Layer, error)
}

func (s *spawner) Spec() layer.Spec { return s.spec }
func (s *spawner) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	return []layer.Item{{Text: s.spec.ID}}, nil
}
func (s *spawner) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	return s.spawn(ctx, child)
}

// envInit is an Initializer that is not a Spawner: it records the env of
// every Init and recalls the thread it was bound to.
type envInit struct {
	spec   layer.Spec
	thread string
	envs   chan layer.Env
}

func (e *envInit) Spec() layer.Spec { return e.spec }
func (e *envInit) Init(_ context.Context, env layer.Env) (layer.Layer, error) {
	e.envs <- env
	return &envInit{spec: e.spec, thread: env.ThreadID}, nil
}
func (e *envInit) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	return []layer.Item{{Text: e.thread}}, nil
}

// sharedCloser is a stateless layer (no Init, no OnSpawn) that counts
// Close calls.
type sharedCloser struct {
	spec   layer.Spec
	closes atomic.Int32
}

func (s *sharedCloser) Spec() layer.Spec                                          { return s.spec }
func (s *sharedCloser) Recall(context.Context, layer.Query) ([]layer.Item, error) { return nil, nil }
func (s *sharedCloser) Close() error                                              { s.closes.Add(1); return nil }

// L14: OnSpawn's result is the child's layer; nil or an error leaves the
// layer out; a non-Spawner Initializer is initialised for the child's
// env; a stateless layer is shared. The parent is not changed.
func TestSpawn(t *testing.T) {
	ev := &events{}
	cnt := newCounter("counter", 10)
	ei := &envInit{spec: layer.Spec{ID: "env-init", Slot: 20}, envs: make(chan layer.Env, 4)}
	shared := &sharedCloser{spec: layer.Spec{ID: "shared", Slot: 30}}
	stateless := layer.Text(layer.Spec{ID: "text", Slot: 40}, "static")
	none := &spawner{spec: layer.Spec{ID: "none", Slot: 50}, spawn: func(context.Context, layer.Env) (layer.Layer, error) { return nil, nil }}
	fails := &spawner{spec: layer.Spec{ID: "fails", Slot: 60}, spawn: func(context.Context, layer.Env) (layer.Layer, error) { return nil, errors.New("no child for you") }}
	panics := &spawner{spec: layer.Spec{ID: "panics", Slot: 70}, spawn: func(context.Context, layer.Env) (layer.Layer, error) { panic("spawn panic") }}
	var gotChildEnv layer.Env
	custom := &spawner{spec: layer.Spec{ID: "custom", Slot: 80}, spawn: func(_ context.Context, env layer.Env) (layer.Layer, error) {
		gotChildEnv = env
		return layer.Text(layer.Spec{ID: "custom", Slot: 80}, "from spawn"), nil
	}}
	s := initStack(t, layer.StackConfig{
		OnHook: ev.observe,
		Env:    layer.Env{ThreadID: "parent-thread", ResourceID: "user-1"},
		Layers: []layer.Layer{cnt, ei, shared, stateless, none, fails, panics, custom},
	})
	parentEnv := <-ei.envs
	if parentEnv.ThreadID != "parent-thread" || parentEnv.Store == nil {
		t.Fatalf("parent Init env = %+v", parentEnv)
	}
	if err := s.Store(t.Context(), layer.Turn{}); err != nil {
		t.Fatal(err)
	}
	before, err := s.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}

	child, err := s.Spawn(t.Context(), layer.Env{ThreadID: "child-thread"})
	if err != nil {
		t.Fatal(err)
	}
	env := <-ei.envs
	if env.ThreadID != "child-thread" || env.Store != parentEnv.Store || env.ExecutionID == "" || env.ExecutionID == parentEnv.ExecutionID {
		t.Errorf("child Init env = %+v, want child thread, depth 1, parent's store, new execution", env)
	}
	if gotChildEnv.ThreadID != "child-thread" {
		t.Errorf("OnSpawn env = %+v", gotChildEnv)
	}
	var got []string
	for _, sp := range specsOf(child) {
		got = append(got, sp.ID)
	}
	equal(t, "child layers", got, []string{"counter", "env-init", "shared", "text", "custom"})
	equal(t, "reported", ev.failures(), []string{"fails:onSpawn", "panics:onSpawn"})

	out, err := child.Recall(t.Context(), layer.Query{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range out {
		texts = append(texts, r.Items[0].Text)
	}
	equal(t, "child recall", texts, []string{"counter=1", "child-thread", "static", "from spawn"})

	// The child's state is its own: storing in the child leaves the
	// parent as it was.
	if err := child.Store(t.Context(), layer.Turn{}); err != nil {
		t.Fatal(err)
	}
	after, err := s.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if string(after.Layers["counter"]) != string(before.Layers["counter"]) {
		t.Errorf("parent counter changed by the child: %s → %s", before.Layers["counter"], after.Layers["counter"])
	}
	parentOut, _ := s.Recall(t.Context(), layer.Query{}, nil)
	if parentOut[1].Items[0].Text != "parent-thread" {
		t.Errorf("parent env-init recalls %q after spawn", parentOut[1].Items[0].Text)
	}

	// The child's Close does not close what it shares with the parent.
	if err := child.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := shared.closes.Load(); n != 0 {
		t.Errorf("child Close closed the shared layer %d times", n)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := shared.closes.Load(); n != 1 {
		t.Errorf("parent Close closed the shared layer %d times, want 1", n)
	}
	if _, err := s.Spawn(t.Context(), layer.Env{}); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("Spawn after Close = %v, want ErrClosed", err)
	}
}

// A child's layer tools act on the child's state, not the parent's.
func TestChildToolsActOnChild(t *testing.T) {
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{newCounter("counter", 0)}})
	if _, err := s.CallTool(t.Context(), "counter/increment", `{"amount":5}`); err != nil {
		t.Fatal(err)
	}
	child, err := s.Spawn(t.Context(), layer.Env{ThreadID: "child"})
	if err != nil {
		t.Fatal(err)
	}
	defer child.Close(t.Context())
	got, err := child.CallTool(t.Context(), "counter_increment", `{"amount":3}`)
	if err != nil || got != "8" {
		t.Fatalf("child increment = %q, %v; want 8", got, err)
	}
	if got, _ := s.CallTool(t.Context(), "counter/peek", ""); got != "5" {
		t.Errorf("parent counter = %s after the child's tool call, want 5", got)
	}
	if got, _ := child.CallTool(t.Context(), "counter/peek", ""); got != "8" {
		t.Errorf("child counter = %s, want 8", got)
	}
	v, err := counterValue(child, "counter")
	if err != nil || v != 8 {
		t.Errorf("child value = %v, %v; want 8", v, err)
	}
}

// L15: Return hands the child's state back through OnReturn.
func TestReturn(t *testing.T) {
	ev := &events{}
	s := initStack(t, layer.StackConfig{OnHook: ev.observe, Layers: []layer.Layer{newCounter("counter", 0), layer.Text(layer.Spec{ID: "text"}, "x")}})
	child, err := s.Spawn(t.Context(), layer.Env{ThreadID: "child"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := child.CallTool(t.Context(), "counter/increment", `{"amount":5}`); err != nil {
		t.Fatal(err)
	}
	_ = child.Close(t.Context())
	if err := s.Return(t.Context(), child); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.CallTool(t.Context(), "counter/peek", ""); got != "5" {
		t.Errorf("parent after Return = %s, want 5", got)
	}
	if err := s.Return(t.Context(), nil); err != nil {
		t.Errorf("Return(nil) = %v", err)
	}
	// A child without the layer: nothing happens.
	empty := initStack(t, layer.StackConfig{})
	if err := s.Return(t.Context(), empty); err != nil {
		t.Errorf("Return(empty) = %v", err)
	}
	if got, _ := s.CallTool(t.Context(), "counter/peek", ""); got != "5" {
		t.Errorf("parent after empty Return = %s, want 5", got)
	}
	if len(ev.failures()) != 0 {
		t.Errorf("failures: %v", ev.failures())
	}
}

// rejecter refuses every child in OnReturn.
type rejecter struct{ *counter }

func (r rejecter) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	l, err := r.counter.Init(ctx, env)
	if err != nil {
		return nil, err
	}
	return rejecter{l.(*counter)}, nil
}

func (r rejecter) OnSpawn(ctx context.Context, env layer.Env) (layer.Layer, error) {
	l, err := r.counter.OnSpawn(ctx, env)
	if err != nil {
		return nil, err
	}
	return rejecter{l.(*counter)}, nil
}

func (r rejecter) OnReturn(context.Context, layer.Layer) error {
	return errors.New("policy: keep parent")
}

func TestReturnFailureLeavesParent(t *testing.T) {
	ev := &events{}
	s := initStack(t, layer.StackConfig{OnHook: ev.observe, Layers: []layer.Layer{rejecter{newCounter("strict", 0)}}})
	child, err := s.Spawn(t.Context(), layer.Env{ThreadID: "child"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := child.CallTool(t.Context(), "strict/increment", `{"amount":2}`); err != nil {
		t.Fatal(err)
	}
	err = s.Return(t.Context(), child)
	var le *layer.Error
	if !errors.As(err, &le) || le.Layer != "strict" || le.Hook != "onReturn" || !strings.Contains(err.Error(), "keep parent") {
		t.Fatalf("Return = %v, want *Error{strict, onReturn}", err)
	}
	equal(t, "reported", ev.failures(), []string{"strict:onReturn"})
	if got, _ := s.CallTool(t.Context(), "strict/peek", ""); got != "0" {
		t.Errorf("parent after failed Return = %s, want 0", got)
	}
}

// selfSpawner shares itself with children on purpose and counts Closes.
type selfSpawner struct {
	sharedCloser
}

func (s *selfSpawner) OnSpawn(context.Context, layer.Env) (layer.Layer, error) { return s, nil }

// A Spawner that returns its receiver shares the layer: the child does not
// close it, and grandchildren work the same way.
func TestSpawnSharedThroughGenerations(t *testing.T) {
	ss := &selfSpawner{sharedCloser{spec: layer.Spec{ID: "self"}}}
	parent := initStack(t, layer.StackConfig{Layers: []layer.Layer{ss, newCounter("counter", 1)}})
	child, err := parent.Spawn(t.Context(), layer.Env{ThreadID: "child"})
	if err != nil {
		t.Fatal(err)
	}
	grandchild, err := child.Spawn(t.Context(), layer.Env{ThreadID: "grandchild"})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := liveLayer(grandchild, "self"); !ok || l != layer.Layer(ss) {
		t.Errorf("grandchild self layer = %v, %v; want the shared one", l, ok)
	}
	if _, err := grandchild.CallTool(t.Context(), "counter/increment", `{"amount":4}`); err != nil {
		t.Fatal(err)
	}
	if err := child.Return(t.Context(), grandchild); err != nil {
		t.Fatal(err)
	}
	if got, _ := child.CallTool(t.Context(), "counter/peek", ""); got != "4" {
		t.Errorf("child after Return = %s, want 4", got)
	}
	if got, _ := parent.CallTool(t.Context(), "counter/peek", ""); got != "0" {
		t.Errorf("parent = %s, want 0", got)
	}
	_ = grandchild.Close(t.Context())
	_ = child.Close(t.Context())
	if n := ss.closes.Load(); n != 0 {
		t.Errorf("children closed the shared layer %d times", n)
	}
	_ = parent.Close(t.Context())
	if n := ss.closes.Load(); n != 1 {
		t.Errorf("shared layer closed %d times, want 1", n)
	}
}

func TestSpawnCancelled(t *testing.T) {
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{newCounter("counter", 0)}})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if child, err := s.Spawn(ctx, layer.Env{ThreadID: "child"}); !errors.Is(err, context.Canceled) || child != nil {
		t.Fatalf("Spawn = %v, %v; want context.Canceled", child, err)
	}
}
