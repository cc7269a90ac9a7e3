package layer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// Default hook timeouts, used when neither the layer's Spec nor the
// StackConfig sets one.
var DefaultTimeouts = Timeouts{
	Init:   10 * time.Second,
	Recall: 5 * time.Second,
	Store:  30 * time.Second,
	Spawn:  10 * time.Second,
	Return: 10 * time.Second,
	Close:  5 * time.Second,
}

// StackConfig configures a [Stack]. Every field but Layers is optional.
type StackConfig struct {
	// Layers are the layers of the stack, in registration order (which
	// orders Init and breaks slot ties). Nil entries, invalid specs and
	// duplicate IDs make NewStack fail.
	Layers []Layer
	// Env describes the run. ThreadID should be set; ExecutionID is
	// generated when empty; a nil Store becomes an in-memory store.
	Env Env
	// Timeouts are the default per-hook timeouts. Zero fields take
	// DefaultTimeouts.
	Timeouts Timeouts
	// Observer receives an Event for every hook call. It is called
	// synchronously from the goroutine that ran the hook, so it must be
	// fast and safe for concurrent use.
	Observer func(Event)
	// ValidateArgs, when set, validates tool arguments against a
	// function's parameter schema before the function runs. Without it,
	// CallTool only checks that the arguments are a JSON object.
	ValidateArgs func(schema json.RawMessage, args []byte) error
	// Name identifies the agent the stack belongs to. Snapshots carry it,
	// and Restore refuses a snapshot taken under another name.
	Name string
}

// Event describes one hook call.
type Event struct {
	Layer    string
	Hook     string
	Duration time.Duration
	// Err is nil on success.
	Err error
}

// Recalled is the output of one layer's Recall.
type Recalled struct {
	ID    string
	Slot  int
	Items []Item
}

// Stack is the runtime for one agent run: it holds the run's layers in
// slot order and calls their hooks at the right time, each under its
// timeout, reporting failures (through Env.Logger and the Observer) with
// the layer's ID and the hook's name.
//
// Call order: NewStack → Init → (Recall, Store, CallTool)* → Spawn/Return
// as needed → Close. Methods are safe for concurrent use; hooks of a
// single layer never run concurrently with each other.
type Stack struct {
	cfg     StackConfig
	env     Env
	log     *slog.Logger
	entries []*entry // slot order, ties in registration order
	reg     []*entry // registration order
	byID    map[string]*entry

	mu     sync.Mutex
	inited bool
	closed bool
	tools  []Tool
	byWire map[string]*Tool
}

type entry struct {
	spec     Spec
	tmpl     Layer // as registered
	live     Layer // bound to this run after Init
	disabled bool
	sem      chan struct{} // serialises hooks of this layer
}

// NewStack validates the layers and returns a stack ready for Init. It
// does no I/O.
func NewStack(cfg StackConfig) (*Stack, error) {
	s := &Stack{cfg: cfg, env: cfg.Env, byID: make(map[string]*entry, len(cfg.Layers))}
	if s.env.ExecutionID == "" {
		s.env.ExecutionID = newID()
	}
	if s.env.Store == nil {
		s.env.Store = storage.NewMemory()
	}
	s.log = s.env.Logger
	if s.log == nil {
		s.log = slog.Default()
	}
	s.env.Logger = s.log
	for i, l := range cfg.Layers {
		if l == nil {
			return nil, fmt.Errorf("layer: layer %d is nil: %w", i, ErrInvalidSpec)
		}
		spec := l.Spec()
		if err := spec.Validate(); err != nil {
			return nil, err
		}
		if _, dup := s.byID[spec.ID]; dup {
			return nil, fmt.Errorf("layer: %q registered twice: %w", spec.ID, ErrDuplicateID)
		}
		e := &entry{spec: spec, tmpl: l, sem: make(chan struct{}, 1)}
		s.byID[spec.ID] = e
		s.reg = append(s.reg, e)
	}
	s.entries = slices.Clone(s.reg)
	slices.SortStableFunc(s.entries, func(a, b *entry) int { return a.spec.Slot - b.spec.Slot })
	return s, nil
}

// Env returns the run's environment, with defaults filled in.
func (s *Stack) Env() Env { return s.env }

// Init runs every layer's Init once, in registration order. A failing Init
// aborts: the layers already initialised are closed and the error (an
// [*Error]) is returned — unless the layer's spec sets DisableOnInitError,
// in which case the layer is disabled, the failure reported, and Init goes
// on. Calling Init again is a no-op.
func (s *Stack) Init(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.inited {
		return nil
	}
	for i, e := range s.reg {
		init, ok := As[Initializer](e.tmpl)
		if !ok {
			e.live = e.tmpl
			continue
		}
		var bound Layer
		err := s.call(ctx, e, HookInit, func(ctx context.Context) error {
			l, err := init.Init(ctx, s.env)
			if err == nil && l == nil {
				err = errors.New("Init returned a nil layer")
			}
			bound = l
			return err
		})
		if err != nil {
			if e.spec.DisableOnInitError {
				e.disabled = true
				continue
			}
			s.closeEntries(ctx, s.reg[:i])
			s.closed = true
			return err
		}
		e.live = bound
	}
	s.inited = true
	s.buildTools()
	return nil
}

// Layers returns the run's live layers in slot order, without disabled
// ones. Before Init it returns nil.
func (s *Stack) Layers() []Layer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.inited {
		return nil
	}
	out := make([]Layer, 0, len(s.entries))
	for _, e := range s.entries {
		if !e.disabled {
			out = append(out, e.live)
		}
	}
	return out
}

// Specs returns the specs of the enabled layers in slot order.
func (s *Stack) Specs() []Spec {
	out := make([]Spec, 0, len(s.entries))
	for _, e := range s.entries {
		if !e.disabled {
			out = append(out, e.spec)
		}
	}
	return out
}

// Layer returns the live layer with the given ID.
func (s *Stack) Layer(id string) (Layer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byID[id]
	if !ok || e.disabled || e.live == nil {
		return nil, false
	}
	return e.live, true
}

func (s *Stack) ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case !s.inited:
		return ErrNotInitialized
	}
	return nil
}

// Recall calls every enabled layer's Recall in slot order and returns the
// non-empty results in that order. budgets gives each layer's allocated
// tokens by ID; a layer missing from it gets its Budget.Max (+Inf when
// unbounded). A failing or slow layer is reported and contributes nothing;
// the others go on.
func (s *Stack) Recall(ctx context.Context, q Query, budgets map[string]float64) ([]Recalled, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	var out []Recalled
	var errs []error
	for _, e := range s.entries {
		if e.disabled {
			continue
		}
		lq := q
		if b, ok := budgets[e.spec.ID]; ok {
			lq.Budget = b
		} else if e.spec.Budget.Unbounded() {
			lq.Budget = math.Inf(1)
		} else {
			lq.Budget = e.spec.Budget.Max
		}
		var items []Item
		err := s.call(ctx, e, HookRecall, func(ctx context.Context) error {
			var err error
			items, err = e.live.Recall(ctx, lq)
			return err
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(items) > 0 {
			out = append(out, Recalled{ID: e.spec.ID, Slot: e.spec.Slot, Items: items})
		}
	}
	return out, errors.Join(errs...)
}

// Store calls every enabled Storer's Store concurrently, each on its own
// layer, and waits for all of them. Failures are reported and joined into
// the returned error; one layer's failure does not stop the others.
func (s *Stack) Store(ctx context.Context, t Turn) error {
	if err := s.ready(); err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, e := range s.entries {
		if e.disabled {
			continue
		}
		st, ok := As[Storer](e.live)
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.call(ctx, e, HookStore, func(ctx context.Context) error { return st.Store(ctx, t) }); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Spawn derives the stack of a child agent. For each enabled layer, in
// registration order: a [Spawner] decides (a nil layer or an error leaves
// the layer out of the child; an error is reported); a layer that is not a
// Spawner but whose registered form is an [Initializer] is initialised
// afresh for the child's env; any other layer is shared as is. The child
// stack is already initialised; the parent is not modified. childEnv.Depth
// defaults to the parent's depth + 1 and a nil Store to the parent's.
func (s *Stack) Spawn(ctx context.Context, childEnv Env) (*Stack, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	if childEnv.Depth == 0 {
		childEnv.Depth = s.env.Depth + 1
	}
	if childEnv.Store == nil {
		childEnv.Store = s.env.Store
	}
	if childEnv.Logger == nil {
		childEnv.Logger = s.log
	}
	if childEnv.ExecutionID == "" {
		childEnv.ExecutionID = newID()
	}
	cfg := s.cfg
	cfg.Env = childEnv
	cfg.Layers = nil
	child := &Stack{cfg: cfg, env: childEnv, log: childEnv.Logger, byID: make(map[string]*entry), inited: true}
	for _, e := range s.reg {
		if e.disabled {
			continue
		}
		var cl Layer
		if sp, ok := As[Spawner](e.live); ok {
			if err := s.call(ctx, e, HookSpawn, func(ctx context.Context) error {
				var err error
				cl, err = sp.OnSpawn(ctx, childEnv)
				return err
			}); err != nil {
				continue
			}
		} else if init, ok := As[Initializer](e.tmpl); ok {
			if err := s.call(ctx, e, HookInit, func(ctx context.Context) error {
				var err error
				cl, err = init.Init(ctx, childEnv)
				return err
			}); err != nil {
				continue
			}
		} else {
			cl = e.live
		}
		if cl == nil {
			continue
		}
		ce := &entry{spec: e.spec, tmpl: e.tmpl, live: cl, sem: make(chan struct{}, 1)}
		child.reg = append(child.reg, ce)
		child.byID[e.spec.ID] = ce
	}
	child.entries = slices.Clone(child.reg)
	slices.SortStableFunc(child.entries, func(a, b *entry) int { return a.spec.Slot - b.spec.Slot })
	child.buildTools()
	return child, nil
}

// Return hands a finished child's layers back to the parent: every enabled
// parent layer that is a [Returner] and has a counterpart in child gets
// OnReturn, in slot order. Failures are reported and joined; a failed
// OnReturn leaves that parent layer as it was (the layer's contract).
func (s *Stack) Return(ctx context.Context, child *Stack) error {
	if err := s.ready(); err != nil {
		return err
	}
	var errs []error
	for _, e := range s.entries {
		if e.disabled {
			continue
		}
		r, ok := As[Returner](e.live)
		if !ok {
			continue
		}
		ce, ok := child.byID[e.spec.ID]
		if !ok {
			continue
		}
		if err := s.call(ctx, e, HookReturn, func(ctx context.Context) error { return r.OnReturn(ctx, ce.live) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close closes every initialised layer in reverse registration order. It
// is idempotent: later calls return nil. Failures are reported and joined.
func (s *Stack) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	inited := s.inited
	s.mu.Unlock()
	if !inited {
		return nil
	}
	return s.closeEntries(ctx, s.reg)
}

func (s *Stack) closeEntries(ctx context.Context, es []*entry) error {
	var errs []error
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		if e.disabled || e.live == nil {
			continue
		}
		var fn func(context.Context) error
		if c, ok := As[Closer](e.live); ok {
			fn = c.Close
		} else if c, ok := As[io.Closer](e.live); ok {
			fn = func(context.Context) error { return c.Close() }
		} else {
			continue
		}
		if err := s.call(ctx, e, HookClose, fn); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// call runs one hook of one layer: it waits for the layer to be free,
// bounds the hook by its timeout, turns a panic into an error, and reports
// the outcome. A hook that outlives its timeout keeps the layer busy until
// it returns, so later hooks of that layer time out too instead of
// running concurrently with it; other layers are not affected.
func (s *Stack) call(ctx context.Context, e *entry, hook string, fn func(context.Context) error) error {
	timeout := s.timeout(e, hook)
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	select {
	case e.sem <- struct{}{}:
		done := make(chan error, 1)
		go func() {
			defer func() { <-e.sem }()
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Errorf("%w: %v", ErrPanic, r)
				}
			}()
			done <- fn(hctx)
		}()
		select {
		case err = <-done:
		case <-hctx.Done():
			err = hookCtxErr(ctx, timeout)
		}
	case <-hctx.Done():
		err = hookCtxErr(ctx, timeout)
	}
	if err != nil {
		var le *Error
		if !errors.As(err, &le) || le.Layer != e.spec.ID {
			err = &Error{Layer: e.spec.ID, Hook: hook, Err: err}
		}
	}
	s.report(ctx, e.spec.ID, hook, time.Since(start), err)
	return err
}

func hookCtxErr(parent context.Context, timeout time.Duration) error {
	if err := parent.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w after %v", ErrTimeout, timeout)
}

func (s *Stack) report(ctx context.Context, id, hook string, d time.Duration, err error) {
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "memlayer: layer hook failed",
			slog.String("layer", id), slog.String("hook", hook), slog.Any("error", err))
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer(Event{Layer: id, Hook: hook, Duration: d, Err: err})
	}
}

func (s *Stack) timeout(e *entry, hook string) time.Duration {
	pick := func(f func(Timeouts) time.Duration) time.Duration {
		for _, t := range []Timeouts{e.spec.Timeouts, s.cfg.Timeouts, DefaultTimeouts} {
			if d := f(t); d > 0 {
				return d
			}
		}
		return time.Minute
	}
	switch hook {
	case HookInit:
		return pick(func(t Timeouts) time.Duration { return t.Init })
	case HookRecall:
		return pick(func(t Timeouts) time.Duration { return t.Recall })
	case HookSpawn:
		return pick(func(t Timeouts) time.Duration { return t.Spawn })
	case HookReturn:
		return pick(func(t Timeouts) time.Duration { return t.Return })
	case HookClose:
		return pick(func(t Timeouts) time.Duration { return t.Close })
	default: // store and tool calls
		return pick(func(t Timeouts) time.Duration { return t.Store })
	}
}

// As finds the first layer in l's [Unwrapper] chain (l itself first) that
// implements T.
func As[T any](l Layer) (T, bool) {
	for l != nil {
		if t, ok := l.(T); ok {
			return t, true
		}
		u, ok := l.(Unwrapper)
		if !ok {
			break
		}
		l = u.Unwrap()
	}
	var zero T
	return zero, false
}

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
