package layer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
)

// journal records hook calls across layers, in call order.
type journal struct {
	mu    sync.Mutex
	calls []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls = append(j.calls, s)
}

func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.calls
	j.calls = nil
	return out
}

// hooked is a layer with Init, Store and Close that records every hook
// in a journal; each hook's behaviour can be replaced.
type hooked struct {
	spec   layer.Spec
	j      *journal
	init   func(ctx context.Context, env layer.Env) error
	recall func(ctx context.Context, q layer.Query) ([]layer.Item, error)
	store  func(ctx context.Context, t layer.Turn) error
	close  func(ctx context.Context) error
}

func (h *hooked) Spec() layer.Spec { return h.spec }

func (h *hooked) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	h.j.add(h.spec.ID + ":init")
	if h.init != nil {
		if err := h.init(ctx, env); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *hooked) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	h.j.add(h.spec.ID + ":recall")
	if h.recall != nil {
		return h.recall(ctx, q)
	}
	return []layer.Item{{Text: h.spec.ID}}, nil
}

func (h *hooked) Store(ctx context.Context, t layer.Turn) error {
	h.j.add(h.spec.ID + ":store")
	if h.store != nil {
		return h.store(ctx, t)
	}
	return nil
}

func (h *hooked) Close(ctx context.Context) error {
	h.j.add(h.spec.ID + ":close")
	if h.close != nil {
		return h.close(ctx)
	}
	return nil
}

// events collects Observer events.
type events struct {
	mu  sync.Mutex
	all []layer.HookCall
}

func (e *events) observe(ev layer.HookCall) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// failures returns "layer:hook" for every failed event.
func (e *events) failures() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		if ev.Err != nil {
			out = append(out, ev.Layer+":"+ev.Hook)
		}
	}
	return out
}

func mustStack(t *testing.T, cfg layer.StackConfig) *layer.Stack {
	t.Helper()
	if cfg.Env.ThreadID == "" {
		cfg.Env.ThreadID = "thread-1"
	}
	if cfg.Env.Logger == nil {
		cfg.Env.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := layer.NewStack(cfg)
	if err != nil {
		t.Fatalf("NewStack: %v", err)
	}
	return s
}

func initStack(t *testing.T, cfg layer.StackConfig) *layer.Stack {
	t.Helper()
	s := mustStack(t, cfg)
	if err := s.Init(t.Context()); err != nil {
		t.Fatalf("Init: %v", err)
	}
	t.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func ids(rs []layer.Recalled) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func equal(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// L1, L2: init in registration order, recall in slot order with stable
// ties, close in reverse registration order, idempotent.
func TestLifecycleOrder(t *testing.T) {
	j := &journal{}
	mk := func(id string, slot int) layer.Layer { return &hooked{spec: layer.Spec{ID: id, Slot: slot}, j: j} }
	s := mustStack(t, layer.StackConfig{Layers: []layer.Layer{mk("high", 300), mk("tie-a", 100), mk("low", 50), mk("tie-b", 100)}})
	if got := s.Layers(); got != nil {
		t.Errorf("Layers before Init = %v, want nil", got)
	}
	if _, err := s.Recall(t.Context(), layer.Query{}, nil); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("Recall before Init = %v, want ErrClosed", err)
	}
	if err := s.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	equal(t, "init order", j.take(), []string{"high:init", "tie-a:init", "low:init", "tie-b:init"})
	if err := s.Init(t.Context()); err != nil {
		t.Fatalf("second Init = %v", err)
	}
	equal(t, "second init", j.take(), nil)

	out, err := s.Recall(t.Context(), layer.Query{Text: "q"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"low", "tie-a", "tie-b", "high"}
	equal(t, "recall results", ids(out), want)
	var calls []string
	for _, id := range want {
		calls = append(calls, id+":recall")
	}
	equal(t, "recall calls", j.take(), calls)
	var specIDs []string
	for _, sp := range specsOf(s) {
		specIDs = append(specIDs, sp.ID)
	}
	equal(t, "Specs", specIDs, want)
	if got := len(s.Layers()); got != 4 {
		t.Errorf("Layers = %d, want 4", got)
	}

	if err := s.Store(t.Context(), layer.Turn{}); err != nil {
		t.Fatal(err)
	}
	stores := j.take()
	slices.Sort(stores)
	equal(t, "store calls", stores, []string{"high:store", "low:store", "tie-a:store", "tie-b:store"})

	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	equal(t, "close order", j.take(), []string{"tie-b:close", "low:close", "tie-a:close", "high:close"})
	if err := s.Close(t.Context()); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	equal(t, "second close", j.take(), nil)
	if _, err := s.Recall(t.Context(), layer.Query{}, nil); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("Recall after Close = %v, want ErrClosed", err)
	}
	if err := s.Store(t.Context(), layer.Turn{}); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("Store after Close = %v, want ErrClosed", err)
	}
	if err := s.Init(t.Context()); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("Init after Close = %v, want ErrClosed", err)
	}
	equal(t, "calls after close", j.take(), nil)
}

func TestRecallBudgets(t *testing.T) {
	got := map[string]int{}
	var mu sync.Mutex
	mk := func(id string, b layer.Budget) layer.Layer {
		return layer.Func(layer.Spec{ID: id, Budget: b}, func(_ context.Context, q layer.Query) ([]layer.Item, error) {
			mu.Lock()
			got[id] = q.Budget
			mu.Unlock()
			return nil, nil
		})
	}
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{mk("capped", layer.Budget{Min: 1, Max: 300}), mk("open", layer.Budget{}), mk("given", layer.Budget{Max: 10})}})
	out, err := s.Recall(t.Context(), layer.Query{}, map[string]int{"given": 7})
	if err != nil || out != nil {
		t.Fatalf("Recall = %v, %v; want no items", out, err)
	}
	if got["capped"] != 300 || got["given"] != 7 || got["open"] != layer.Unbounded {
		t.Errorf("budgets = %v, want capped 300, given 7, open layer.Unbounded", got)
	}
}

// Store runs every layer concurrently: each store waits until all three
// have started, which would deadlock (and time out) if they ran one after
// the other.
func TestStoreConcurrent(t *testing.T) {
	const n = 3
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	j := &journal{}
	var ls []layer.Layer
	for i := range n {
		ls = append(ls, &hooked{spec: layer.Spec{ID: fmt.Sprintf("l%d", i)}, j: j, store: func(ctx context.Context, _ layer.Turn) error {
			arrived.Done()
			select {
			case <-all:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	}
	s := initStack(t, layer.StackConfig{Layers: ls, Timeout: 5 * time.Second})
	start := time.Now()
	if err := s.Store(t.Context(), layer.Turn{}); err != nil {
		t.Fatalf("Store = %v (stores did not run concurrently)", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("Store took %v", d)
	}
}

// L3: a failing init aborts with an *Error naming the layer and closes
// the layers already initialised.
func TestInitFailureAborts(t *testing.T) {
	j := &journal{}
	boom := errors.New("boom")
	ev := &events{}
	s := mustStack(t, layer.StackConfig{
		OnHook: ev.observe,
		Layers: []layer.Layer{
			&hooked{spec: layer.Spec{ID: "first", Slot: 500}, j: j},
			&hooked{spec: layer.Spec{ID: "second"}, j: j},
			&hooked{spec: layer.Spec{ID: "bad"}, j: j, init: func(context.Context, layer.Env) error { return boom }},
			&hooked{spec: layer.Spec{ID: "never"}, j: j},
		},
	})
	err := s.Init(t.Context())
	var le *layer.Error
	if !errors.As(err, &le) || le.Layer != "bad" || le.Hook != "init" || !errors.Is(err, boom) {
		t.Fatalf("Init = %v, want *layer.Error{bad, init, boom}", err)
	}
	if !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "bad") {
		t.Errorf("error text %q lacks layer or cause", err)
	}
	equal(t, "calls", j.take(), []string{"first:init", "second:init", "bad:init", "second:close", "first:close"})
	equal(t, "reported", ev.failures(), []string{"bad:init"})
	if err := s.Close(t.Context()); err != nil {
		t.Errorf("Close after failed Init = %v", err)
	}
	if _, err := s.Recall(t.Context(), layer.Query{}, nil); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("Recall after failed Init = %v, want ErrClosed", err)
	}
	equal(t, "calls after", j.take(), nil)
}

// The layers already initialised are closed even when the run's context
// is what made Init fail.
func TestInitFailureCancelledStillCloses(t *testing.T) {
	j := &journal{}
	ctx, cancel := context.WithCancel(t.Context())
	var closeCtxErr error
	s := mustStack(t, layer.StackConfig{Layers: []layer.Layer{
		&hooked{spec: layer.Spec{ID: "ok"}, j: j, close: func(ctx context.Context) error { closeCtxErr = ctx.Err(); return nil }},
		&hooked{spec: layer.Spec{ID: "cancels"}, j: j, init: func(ctx context.Context, _ layer.Env) error { cancel(); return ctx.Err() }},
	}})
	if err := s.Init(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Init = %v, want context.Canceled", err)
	}
	equal(t, "calls", j.take(), []string{"ok:init", "cancels:init", "ok:close"})
	if closeCtxErr != nil {
		t.Errorf("close ran with a done context: %v", closeCtxErr)
	}
}

// L4: a layer disabled on init error is skipped by every later hook.
func TestDisableOnInitError(t *testing.T) {
	j := &journal{}
	ev := &events{}
	bad := &hooked{spec: layer.Spec{ID: "flaky", DisableOnInitError: true}, j: j, init: func(context.Context, layer.Env) error { return errors.New("no backend") }}
	s := mustStack(t, layer.StackConfig{OnHook: ev.observe, Layers: []layer.Layer{bad, &hooked{spec: layer.Spec{ID: "fine"}, j: j}}})
	if err := s.Init(t.Context()); err != nil {
		t.Fatalf("Init = %v, want nil (layer disabled)", err)
	}
	equal(t, "reported", ev.failures(), []string{"flaky:init"})
	out, err := s.Recall(t.Context(), layer.Query{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "recalled", ids(out), []string{"fine"})
	_ = s.Store(t.Context(), layer.Turn{})
	child, err := s.Spawn(t.Context(), layer.Env{ThreadID: "child"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := liveLayer(child, "flaky"); ok {
		t.Error("disabled layer reached the child")
	}
	_ = child.Close(t.Context())
	if _, ok := liveLayer(s, "flaky"); ok {
		t.Error("Layer(flaky) found a disabled layer")
	}
	if len(specsOf(s)) != 1 || len(s.Layers()) != 1 {
		t.Errorf("Specs/Layers list the disabled layer: %v", specsOf(s))
	}
	_ = s.Close(t.Context())
	for _, c := range j.take() {
		if strings.HasPrefix(c, "flaky:") && c != "flaky:init" {
			t.Errorf("disabled layer got %s", c)
		}
	}
}

// L5: a slow recall times out, is reported with layer and hook, does not
// hold up the other layers, and its late result never shows up.
func TestRecallTimeout(t *testing.T) {
	release := make(chan struct{})
	var calls int
	var sawCancel = make(chan error, 1)
	slow := layer.Func(layer.Spec{ID: "slow", Slot: 1, Timeout: 50 * time.Millisecond},
		func(ctx context.Context, q layer.Query) ([]layer.Item, error) {
			calls++
			if calls == 1 {
				<-ctx.Done()
				sawCancel <- ctx.Err()
				<-release // ignores cancellation for a while longer
				return []layer.Item{{Text: "late"}}, nil
			}
			return []layer.Item{{Text: "fresh"}}, nil
		})
	ev := &events{}
	s := initStack(t, layer.StackConfig{OnHook: ev.observe, Layers: []layer.Layer{
		slow,
		layer.Text(layer.Spec{ID: "before", Slot: 0}, "b"),
		layer.Text(layer.Spec{ID: "after", Slot: 2}, "a"),
	}})
	start := time.Now()
	out, err := s.Recall(t.Context(), layer.Query{}, nil)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Recall took %v", d)
	}
	equal(t, "recalled", ids(out), []string{"before", "after"})
	var le *layer.Error
	if !errors.Is(err, layer.ErrTimeout) || !errors.As(err, &le) || le.Layer != "slow" || le.Hook != "recall" {
		t.Fatalf("Recall error = %v, want ErrTimeout from slow:recall", err)
	}
	equal(t, "reported", ev.failures(), []string{"slow:recall"})
	if err := <-sawCancel; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow hook's ctx.Err() = %v, want DeadlineExceeded", err)
	}
	close(release)
	// The layer is free again once the late hook returns; its late items
	// are never seen.
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err = s.Recall(t.Context(), layer.Query{}, nil)
		if err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("Recall after release = %v", err)
	}
	for _, r := range out {
		for _, it := range r.Items {
			if it.Text == "late" {
				t.Fatal("a timed-out recall's late result showed up")
			}
		}
	}
	equal(t, "recalled after release", ids(out), []string{"before", "slow", "after"})
}

// A hook that outlives its timeout keeps its layer busy: the next hook of
// that layer waits and times out instead of running concurrently with it.
func TestTimedOutHookKeepsLayerBusy(t *testing.T) {
	release := make(chan struct{})
	j := &journal{}
	h := &hooked{spec: layer.Spec{ID: "busy", Timeout: 30 * time.Millisecond}, j: j,
		store: func(context.Context, layer.Turn) error { <-release; return nil }}
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{h}})
	j.take()
	if err := s.Store(t.Context(), layer.Turn{}); !errors.Is(err, layer.ErrTimeout) {
		t.Fatalf("Store = %v, want ErrTimeout", err)
	}
	if _, err := s.Recall(t.Context(), layer.Query{}, nil); !errors.Is(err, layer.ErrTimeout) {
		t.Fatalf("Recall while busy = %v, want ErrTimeout", err)
	}
	equal(t, "calls while busy", j.take(), []string{"busy:store"})
	close(release)
}

// Panics in hooks become ErrPanic errors and the others go on.
func TestPanicBecomesError(t *testing.T) {
	j := &journal{}
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		&hooked{spec: layer.Spec{ID: "panicky"}, j: j,
			recall: func(context.Context, layer.Query) ([]layer.Item, error) { panic("recall exploded") },
			store: func(context.Context, layer.Turn) error {
				var m map[string]int
				m["x"] = 1 //lint:ignore SA5000 a runtime panic on purpose
				return nil
			}},
		layer.Text(layer.Spec{ID: "calm", Slot: 1}, "calm"),
	}})
	out, err := s.Recall(t.Context(), layer.Query{}, nil)
	var le *layer.Error
	if !errors.Is(err, layer.ErrPanic) || !errors.As(err, &le) || le.Layer != "panicky" || !strings.Contains(err.Error(), "recall exploded") {
		t.Fatalf("Recall error = %v, want ErrPanic from panicky", err)
	}
	equal(t, "recalled", ids(out), []string{"calm"})
	if err := s.Store(t.Context(), layer.Turn{}); !errors.Is(err, layer.ErrPanic) {
		t.Fatalf("Store error = %v, want ErrPanic", err)
	}
	// The layer is not left locked by the panic.
	if _, err := s.Recall(t.Context(), layer.Query{}, nil); errors.Is(err, layer.ErrTimeout) {
		t.Fatal("layer stuck after a panic")
	}
}

// L6: a failing recall contributes nothing; an empty one is left out.
func TestRecallFailureAndEmpty(t *testing.T) {
	ev := &events{}
	s := initStack(t, layer.StackConfig{OnHook: ev.observe, Layers: []layer.Layer{
		layer.Func(layer.Spec{ID: "fails"}, func(context.Context, layer.Query) ([]layer.Item, error) {
			return []layer.Item{{Text: "x"}}, errors.New("db down")
		}),
		layer.Func(layer.Spec{ID: "empty"}, nil),
		layer.Text(layer.Spec{ID: "text"}, "hello"),
	}})
	out, err := s.Recall(t.Context(), layer.Query{}, nil)
	if err == nil || !strings.Contains(err.Error(), "db down") {
		t.Fatalf("Recall error = %v", err)
	}
	equal(t, "recalled", ids(out), []string{"text"})
	if out[0].Items[0].Text != "hello" {
		t.Errorf("text item = %+v", out[0].Items)
	}
	equal(t, "reported", ev.failures(), []string{"fails:recall"})
}

// Hooks do not run under a context that is already done.
func TestCancelledContextRunsNothing(t *testing.T) {
	j := &journal{}
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{&hooked{spec: layer.Spec{ID: "a"}, j: j}}})
	j.take()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Recall(ctx, layer.Query{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Recall = %v, want context.Canceled", err)
	}
	if err := s.Store(ctx, layer.Turn{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Store = %v, want context.Canceled", err)
	}
	equal(t, "calls", j.take(), nil)
	// Close still closes under a cancelled context.
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	equal(t, "close calls", j.take(), []string{"a:close"})
}

// Cancelling the caller's context abandons a running hook.
func TestCancelDuringHook(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		layer.Func(layer.Spec{ID: "waits"}, func(ctx context.Context, _ layer.Query) ([]layer.Item, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	}})
	go func() { <-started; cancel() }()
	if _, err := s.Recall(ctx, layer.Query{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recall = %v, want context.Canceled", err)
	}
}

// The hook's context carries the caller's values and a deadline.
func TestHookContext(t *testing.T) {
	type key struct{}
	var gotVal any
	var gotDeadline bool
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		layer.Func(layer.Spec{ID: "ctx"}, func(ctx context.Context, _ layer.Query) ([]layer.Item, error) {
			gotVal = ctx.Value(key{})
			_, gotDeadline = ctx.Deadline()
			// A context derived from the hook's is cancelled with it.
			sub, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			return nil, sub.Err()
		}),
	}})
	if _, err := s.Recall(context.WithValue(t.Context(), key{}, "v"), layer.Query{}, nil); err != nil {
		t.Fatal(err)
	}
	if gotVal != "v" || !gotDeadline {
		t.Errorf("hook ctx value %v, deadline %v", gotVal, gotDeadline)
	}
}

// An Observer may read the stack while Init runs.
func TestObserverMayReadStack(t *testing.T) {
	var s *layer.Stack
	var n int
	s = mustStack(t, layer.StackConfig{
		OnHook: func(layer.HookCall) { n += len(specsOf(s)) + len(s.Tools()) },
		Layers: []layer.Layer{newCounter("c", 0)},
	})
	done := make(chan error, 1)
	go func() { done <- s.Init(t.Context()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Init deadlocked with an Observer that reads the stack")
	}
	_ = s.Close(t.Context())
	if n == 0 {
		t.Error("observer not called")
	}
}

// The stack is safe for concurrent use.
func TestStackConcurrentUse(t *testing.T) {
	c := newCounter("c", 0)
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{c, layer.Text(layer.Spec{ID: "t"}, "x")}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if _, err := s.Recall(t.Context(), layer.Query{}, nil); err != nil {
					t.Error(err)
				}
				if err := s.Store(t.Context(), layer.Turn{}); err != nil {
					t.Error(err)
				}
				if _, err := s.CallTool(t.Context(), "c/peek", ""); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	l, _ := liveLayer(s, "c")
	if got := l.(*counter).value(); got != 160 {
		t.Errorf("count = %d, want 160 (a store was lost)", got)
	}
}

// slowInit binds after release is closed, ignoring its context; the
// layer it binds records its Close.
type slowInit struct {
	release chan struct{}
	closed  chan struct{}
}

func (s *slowInit) Spec() layer.Spec {
	return layer.Spec{ID: "slow-init", Timeout: 30 * time.Millisecond}
}
func (s *slowInit) Recall(context.Context, layer.Query) ([]layer.Item, error) { return nil, nil }
func (s *slowInit) Init(context.Context, layer.Env) (layer.Layer, error) {
	<-s.release
	return &sharedCloserFunc{spec: s.Spec(), close: func() { close(s.closed) }}, nil
}

type sharedCloserFunc struct {
	spec  layer.Spec
	close func()
}

func (s *sharedCloserFunc) Spec() layer.Spec { return s.spec }
func (s *sharedCloserFunc) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	return nil, nil
}
func (s *sharedCloserFunc) Close(context.Context) error { s.close(); return nil }

// An Init that returns after its timeout aborts the run, and the layer it
// bound late is closed rather than leaked.
func TestInitTimeoutClosesLateLayer(t *testing.T) {
	si := &slowInit{release: make(chan struct{}), closed: make(chan struct{})}
	s := mustStack(t, layer.StackConfig{Layers: []layer.Layer{si}})
	err := s.Init(t.Context())
	var le *layer.Error
	if !errors.Is(err, layer.ErrTimeout) || !errors.As(err, &le) || le.Hook != "init" {
		t.Fatalf("Init = %v, want ErrTimeout from init", err)
	}
	close(si.release)
	select {
	case <-si.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the late-bound layer was never closed")
	}
}

// A hook's context is cancelled once the hook returns, as with
// context.WithTimeout, so work it started under that context stops.
func TestHookContextCancelledAfterReturn(t *testing.T) {
	var kept context.Context
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		layer.Func(layer.Spec{ID: "keeps"}, func(ctx context.Context, _ layer.Query) ([]layer.Item, error) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			kept = ctx
			return nil, nil
		}),
	}})
	if _, err := s.Recall(t.Context(), layer.Query{}, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kept.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("hook context still live after the hook returned")
	}
	if !errors.Is(kept.Err(), context.Canceled) {
		t.Errorf("Err = %v, want Canceled", kept.Err())
	}
}

// Slot order holds for extreme slots (no overflow in the comparison).
func TestRecallExtremeSlots(t *testing.T) {
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		layer.Text(layer.Spec{ID: "max", Slot: math.MaxInt}, "x"),
		layer.Text(layer.Spec{ID: "min", Slot: math.MinInt}, "x"),
		layer.Text(layer.Spec{ID: "zero"}, "x"),
	}})
	out, err := s.Recall(t.Context(), layer.Query{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "order", ids(out), []string{"min", "zero", "max"})
}

// Close while other goroutines use the stack: every call either works or
// says ErrClosed, each layer is closed once, and nothing races.
func TestCloseDuringUse(t *testing.T) {
	c := newCounter("c", 0)
	s := mustStack(t, layer.StackConfig{Layers: []layer.Layer{c, layer.Text(layer.Spec{ID: "t"}, "x")}})
	if err := s.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	l, _ := liveLayer(s, "c")
	bound := l.(*counter)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				_, err := s.Recall(t.Context(), layer.Query{}, nil)
				if err != nil && !errors.Is(err, layer.ErrClosed) {
					t.Errorf("Recall: %v", err)
				}
				if err := s.Store(t.Context(), layer.Turn{}); err != nil && !errors.Is(err, layer.ErrClosed) {
					t.Errorf("Store: %v", err)
				}
				if _, err := s.CallTool(t.Context(), "c/peek", ""); err != nil && !errors.Is(err, layer.ErrClosed) {
					t.Errorf("CallTool: %v", err)
				}
				if child, err := s.Spawn(t.Context(), layer.Env{ThreadID: "child"}); err == nil {
					_ = child.Close(t.Context())
				} else if !errors.Is(err, layer.ErrClosed) {
					t.Errorf("Spawn: %v", err)
				}
			}
		})
	}
	time.Sleep(time.Millisecond)
	for range 3 {
		wg.Go(func() {
			if err := s.Close(t.Context()); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	if bound.closes != 1 {
		t.Errorf("the bound layer was closed %d times, want 1", bound.closes)
	}
	if c.closes != 0 {
		t.Errorf("the template was closed %d times, want 0", c.closes)
	}
}

// A hook's deadline is the earlier of its timeout and the caller's.
func TestHookDeadline(t *testing.T) {
	var got time.Time
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{
		layer.Func(layer.Spec{ID: "dl", Timeout: time.Minute}, func(ctx context.Context, _ layer.Query) ([]layer.Item, error) {
			got, _ = ctx.Deadline()
			return nil, nil
		}),
	}})
	for _, tt := range []struct {
		name   string
		parent time.Duration
		want   time.Duration
	}{
		{"caller's is earlier", 10 * time.Second, 10 * time.Second},
		{"hook's is earlier", time.Hour, time.Minute},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), tt.parent)
		start := time.Now()
		if _, err := s.Recall(ctx, layer.Query{}, nil); err != nil {
			t.Fatal(err)
		}
		cancel()
		if d := got.Sub(start); d < tt.want-5*time.Second || d > tt.want+time.Second {
			t.Errorf("%s: deadline in %v, want about %v", tt.name, d, tt.want)
		}
	}
}
