package layer_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
)

// Issue 10: one duration per layer bounds each of its hooks. Spec.Timeout
// wins over StackConfig.Timeout, which bounds every layer without one;
// each call is reported with its hook's name and duration.
func TestPlain20_OneTimeoutPerLayer(t *testing.T) {
	// The hooks ignore their context, so only the stack's timeout ends
	// the calls.
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hang := func(context.Context) error { <-release; return nil }
	own := &hooked{spec: layer.Spec{ID: "own", Slot: 1, Timeout: 20 * time.Millisecond}, j: &journal{},
		recall: func(ctx context.Context, _ layer.Query) ([]layer.Item, error) { return nil, hang(ctx) },
		store:  func(ctx context.Context, _ layer.Turn) error { return hang(ctx) },
		close:  hang,
	}
	dflt := &hooked{spec: layer.Spec{ID: "default", Slot: 2}, j: &journal{},
		recall: func(ctx context.Context, _ layer.Query) ([]layer.Item, error) { return nil, hang(ctx) },
	}
	ev := &events{}
	s := mustStack(t, layer.StackConfig{Layers: []layer.Layer{own, dflt}, Timeout: 40 * time.Millisecond, OnHook: ev.observe})
	if err := s.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := s.Recall(t.Context(), layer.Query{}, nil)
	if !errors.Is(err, layer.ErrTimeout) || !strings.Contains(err.Error(), "own: recall") || !strings.Contains(err.Error(), "default: recall") {
		t.Fatalf("Recall = %v, want both layers' recalls timed out", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Recall took %v", d)
	}
	if err := s.Store(t.Context(), layer.Turn{}); !errors.Is(err, layer.ErrTimeout) {
		t.Errorf("Store = %v, want own's store timed out", err)
	}
	if err := s.Close(t.Context()); !errors.Is(err, layer.ErrTimeout) {
		t.Errorf("Close = %v, want own's close timed out", err)
	}
	want := map[string]time.Duration{
		"own:recall": 20 * time.Millisecond, "default:recall": 40 * time.Millisecond,
		"own:store": 20 * time.Millisecond, "own:close": 20 * time.Millisecond,
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, e := range ev.all {
		bound, ok := want[e.Layer+":"+e.Hook]
		if !ok {
			continue
		}
		delete(want, e.Layer+":"+e.Hook)
		if e.Duration < bound || e.Duration > bound+time.Second || !errors.Is(e.Err, layer.ErrTimeout) {
			t.Errorf("event %s:%s took %v (err %v), want ErrTimeout after about %v", e.Layer, e.Hook, e.Duration, e.Err, bound)
		}
	}
	if len(want) > 0 {
		t.Errorf("no event for %v", want)
	}
}

// Issue 10: token budgets are ints. A layer with no cap recalls with
// layer.Unbounded, a capped one with its Max, an allocated one with its
// allocation; Spec.Validate refuses a negative or inverted budget with an
// error that says which bound is wrong.
func TestPlain21_IntegerBudgets(t *testing.T) {
	if layer.Unbounded != math.MaxInt {
		t.Errorf("Unbounded = %d, want math.MaxInt", layer.Unbounded)
	}
	got := map[string]int{}
	var mu sync.Mutex
	mk := func(id string, b layer.Budget) layer.Layer {
		return layer.Func(layer.Spec{ID: id, Budget: b}, func(_ context.Context, q layer.Query) ([]layer.Item, error) {
			mu.Lock()
			defer mu.Unlock()
			got[id] = q.Budget
			return nil, nil
		})
	}
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		mk("zero", layer.Budget{}), mk("open", layer.Budget{Min: 5, Max: layer.Unbounded}),
		mk("capped", layer.Budget{Max: 300}), mk("given", layer.Budget{Max: 300}),
	}})
	if _, err := s.Recall(t.Context(), layer.Query{}, map[string]int{"given": 7}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"zero": layer.Unbounded, "open": layer.Unbounded, "capped": 300, "given": 7}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s recalled with budget %d, want %d", id, got[id], w)
		}
	}
	for _, tt := range []struct {
		b    layer.Budget
		want string
	}{
		{layer.Budget{Min: -1}, "budget Min is -1, want >= 0"},
		{layer.Budget{Max: -3}, "budget Max is -3, want >= 0 (0 or layer.Unbounded for no cap)"},
		{layer.Budget{Min: 9, Max: 1}, "budget Min 9 exceeds Max 1"},
	} {
		err := layer.Spec{ID: "a", Budget: tt.b}.Validate()
		if !errors.Is(err, layer.ErrInvalidSpec) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidSpec saying %q", tt.b, err, tt.want)
		}
	}
}

// Issue 10: a duplicate ID is an invalid spec (no error of its own), and
// the error names the ID.
func TestPlain22_DuplicateIDIsInvalidSpec(t *testing.T) {
	_, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{
		layer.Func(layer.Spec{ID: "notes"}, nil), layer.Func(layer.Spec{ID: "notes", Slot: 2}, nil),
	}})
	if !errors.Is(err, layer.ErrInvalidSpec) || !strings.Contains(err.Error(), `duplicate layer id "notes"`) {
		t.Fatalf("NewStack = %v, want ErrInvalidSpec naming the duplicate", err)
	}
}

// Issue 10: code reads a layer's state through Find and the layer's own
// methods, at any time, concurrently with the layer's hooks (the race
// detector checks the layer's locking).
func TestPlain23_StateThroughFind(t *testing.T) {
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{newCounter("alpha", 0)}})
	c, ok := layer.Find[*counter](s, "alpha")
	if !ok {
		t.Fatalf("Find = %v, %v; want the counter", c, ok)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 50 {
			_, _ = s.CallTool(t.Context(), "alpha/increment", `{"amount":1}`)
		}
	})
	for range 50 {
		if v := c.value(); v < 0 || v > 50 {
			t.Fatalf("value = %d mid-way, want 0..50", v)
		}
	}
	wg.Wait()
	v, err := counterValue(s, "alpha")
	if err != nil || v != 50 {
		t.Errorf("value = %v, %v; want 50", v, err)
	}
}

// Issue 10: the stack is the one place that orders layers by slot (the
// prompt compiler keeps the order it is given), with extreme slots too.
func TestPlain24_StackOrdersExtremeSlots(t *testing.T) {
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		layer.Text(layer.Spec{ID: "last", Slot: math.MaxInt}, "LAST"),
		layer.Text(layer.Spec{ID: "first", Slot: math.MinInt}, "FIRST"),
		layer.Text(layer.Spec{ID: "middle"}, "MIDDLE"),
	}})
	rs, err := s.Recall(t.Context(), layer.Query{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "recall order", ids(rs), []string{"first", "middle", "last"})
}

// Issue 10: a sequential batch runs its hooks on one goroutine; when
// the caller abandons a hook that ignores its context, the later layers
// still recall, on a new goroutine, in slot order, and a second Recall
// behaves the same while the first stuck hook is still running.
func TestPlain72_SequentialBatchGoesOnAfterAnAbandonedHook(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	item := func(text string) func(context.Context, layer.Query) ([]layer.Item, error) {
		return func(context.Context, layer.Query) ([]layer.Item, error) { return []layer.Item{{Text: text}}, nil }
	}
	stuck := &hooked{spec: layer.Spec{ID: "stuck", Slot: 1, Timeout: 20 * time.Millisecond}, j: &journal{},
		recall: func(context.Context, layer.Query) ([]layer.Item, error) { <-release; return nil, nil }}
	b := &hooked{spec: layer.Spec{ID: "b", Slot: 2}, j: &journal{}, recall: item("b")}
	c := &hooked{spec: layer.Spec{ID: "c", Slot: 3}, j: &journal{}, recall: item("c")}
	s := mustStack(t, layer.StackConfig{Layers: []layer.Layer{stuck, b, c}})
	if err := s.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		got, err := s.Recall(t.Context(), layer.Query{}, nil)
		if !errors.Is(err, layer.ErrTimeout) || !strings.Contains(err.Error(), "stuck: recall") {
			t.Errorf("round %d: Recall error = %v, want the stuck layer's timeout", round, err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.ID+"="+r.Items[0].Text)
		}
		if strings.Join(ids, ",") != "b=b,c=c" {
			t.Errorf("round %d: recalled %v, want b and c in slot order", round, ids)
		}
	}
}

// Issue 12 (scored assembly): a layer given a negative budget is left
// out of Recall; the others recall as before.
func TestPlain73_NegativeBudgetLeavesALayerOut(t *testing.T) {
	called := map[string]int{}
	var mu sync.Mutex
	recall := func(id string) func(context.Context, layer.Query) ([]layer.Item, error) {
		return func(context.Context, layer.Query) ([]layer.Item, error) {
			mu.Lock()
			called[id]++
			mu.Unlock()
			return []layer.Item{{Text: id}}, nil
		}
	}
	a := &hooked{spec: layer.Spec{ID: "a", Slot: 1}, j: &journal{}, recall: recall("a")}
	b := &hooked{spec: layer.Spec{ID: "b", Slot: 2}, j: &journal{}, recall: recall("b")}
	s := mustStack(t, layer.StackConfig{Layers: []layer.Layer{a, b}})
	if err := s.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := s.Recall(t.Context(), layer.Query{}, map[string]int{"a": -1, "b": 10})
	if err != nil || len(got) != 1 || got[0].ID != "b" || called["a"] != 0 {
		t.Errorf("Recall = %+v, %v (a called %d times); want b alone", got, err, called["a"])
	}
}
