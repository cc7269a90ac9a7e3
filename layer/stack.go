package layer

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// StackConfig configures a [Stack]. Every field but Layers is optional.
type StackConfig struct {
	// Layers are the layers of the stack, in registration order (which
	// orders Init and breaks slot ties). Nil entries, invalid specs and
	// duplicate IDs make NewStack fail.
	Layers []Layer
	// Env describes the run. ThreadID should be set; ExecutionID is
	// generated when empty; a nil Store becomes an in-memory store.
	Env Env
	// Timeout bounds each hook call of a layer whose Spec.Timeout is
	// zero. Zero means each hook's default (see [Spec.Timeout]).
	Timeout time.Duration
	// OnHook receives a HookCall for every hook call, successful or not.
	// It is called synchronously by the Stack method that ran the hook,
	// after the hook returned or was abandoned, so it must be fast and
	// safe for concurrent use. It may call the Stack's read-only methods
	// (Layers, Tools).
	OnHook func(HookCall)
	// ValidateArgs, when set, validates tool arguments against a
	// function's parameter schema before the function runs. Without it,
	// CallTool only checks that the arguments are a JSON object.
	ValidateArgs func(schema json.RawMessage, args []byte) error
}

// HookCall describes one hook call: the layer's ID, the hook's name, how long
// the call took and its error.
type HookCall struct {
	Layer string
	// Hook names the call: "init", "recall", "store", "onSpawn",
	// "onReturn", "close", "tool", "snapshot", "restore" or "clear".
	Hook     string
	Duration time.Duration
	// Err is nil on success.
	Err error
}

// Recalled is the output of one layer's Recall: the layer's ID and its
// items. [Stack.Recall] returns them in slot order.
type Recalled struct {
	ID    string
	Items []Item
}

// Stack is the runtime for one agent run: it holds the run's layers in
// slot order and calls their hooks at the right time, each under its
// timeout, reporting failures (through Env.Logger and OnHook) with
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

	initMu sync.Mutex // serialises Init and Close
	mu     sync.Mutex // guards the fields below
	inited bool
	closed bool
	tools  []tool
	// byName maps each name a tool answers to (the name offered, its
	// "<layer-id>/<fn>" form and its aliases) to its index in tools. The
	// forms never collide: only the second has a '/', and an alias that
	// is already a name is ignored.
	byName map[string]int
}

type entry struct {
	spec     Spec
	timeout  time.Duration // Spec.Timeout, else StackConfig.Timeout; zero means each hook's default
	tmpl     Layer         // as registered
	live     Layer         // bound to this run after Init
	disabled bool
	// shared is set in a child stack for a layer it shares with its
	// parent (the same value): the parent owns it, so the child neither
	// closes it nor hands it back with OnReturn.
	shared bool
	sem    chan struct{} // serialises hooks of this layer; shared with the parent when shared
	// stuck counts this layer's abandoned hooks still running, across
	// stacks (see maxAbandonedHooks).
	stuck *atomic.Int32
}

// NewStack validates the layers and returns a stack ready for Init. It
// does no I/O.
func NewStack(cfg StackConfig) (*Stack, error) {
	s := &Stack{cfg: cfg, env: cfg.Env, byID: make(map[string]*entry, len(cfg.Layers))}
	if s.env.ExecutionID == "" {
		s.env.ExecutionID = newID()
	}
	if s.env.Store == nil {
		s.env.Store = storage.NewMemoryStore()
	}
	s.log = cmp.Or(s.env.Logger, slog.Default())
	s.env.Logger = s.log
	es, err := newEntries(cfg.Layers, cfg.Timeout, nil)
	if err != nil {
		return nil, err
	}
	s.add(es...)
	s.order()
	return s, nil
}

// newEntries validates layers, to be registered in a stack whose
// StackConfig.Timeout is timeout and whose other layers have the IDs in
// taken, and returns their entries, not bound to a run yet. A nil layer,
// an invalid spec or a repeated ID fails with [ErrInvalidSpec].
func newEntries(layers []Layer, timeout time.Duration, taken map[string]*entry) ([]*entry, error) {
	es := make([]*entry, 0, len(layers))
	for i, l := range layers {
		if l == nil {
			return nil, fmt.Errorf("layer: layer %d is nil: %w", i, ErrInvalidSpec)
		}
		spec := l.Spec()
		if err := spec.Validate(); err != nil {
			return nil, err
		}
		if id, dup := repeatedID(spec, es, taken); dup {
			return nil, fmt.Errorf("layer: duplicate layer id %q: %w", id, ErrInvalidSpec)
		}
		e := &entry{spec: spec, timeout: cmp.Or(spec.Timeout, max(timeout, 0)), tmpl: l, sem: make(chan struct{}, 1), stuck: stuckCount(l, spec.ID)}
		es = append(es, e)
	}
	return es, nil
}

// repeatedID returns the ID or storage name of spec that a layer of es
// or taken already has as its ID or storage name ([Spec.StorageName]),
// and whether there is one: two layers must not share stored data.
func repeatedID(spec Spec, es []*entry, taken map[string]*entry) (string, bool) {
	names := []string{spec.ID, spec.StorageName()}
	for _, prev := range taken {
		if n := sharedName(names, prev.spec); n != "" {
			return n, true
		}
	}
	for _, prev := range es {
		if n := sharedName(names, prev.spec); n != "" {
			return n, true
		}
	}
	return "", false
}

// sharedName returns the first of names that is prev's ID or storage
// name, or "".
func sharedName(names []string, prev Spec) string {
	for _, n := range names {
		if n == prev.ID || n == prev.StorageName() {
			return n
		}
	}
	return ""
}

// Init runs every layer's Init once, in registration order. A failing Init
// aborts: the layers already initialised are closed and the error (an
// [*Error]) is returned — unless the layer's spec sets DisableOnInitError,
// in which case the layer is disabled, the failure reported, and Init goes
// on. Calling Init again is a no-op.
func (s *Stack) Init(ctx context.Context) error {
	s.initMu.Lock()
	defer s.initMu.Unlock()
	s.mu.Lock()
	closed, inited := s.closed, s.inited
	s.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if inited {
		return nil
	}
	for i, e := range s.reg {
		if err := s.initEntry(ctx, e, s.env); err != nil {
			// Close what was initialised even when ctx is what failed.
			_ = s.closeEntries(context.WithoutCancel(ctx), s.reg[:i])
			return err
		}
	}
	s.mu.Lock()
	s.buildTools()
	s.inited = true
	s.mu.Unlock()
	return nil
}

// initEntry binds e's layer to the run of env: an [Initializer]'s Init,
// under e's Init timeout (a layer it returns too late is closed), else
// the registered layer itself. When Init fails, initEntry disables the
// layer if its spec says so, or else marks the stack closed and returns
// the error.
func (s *Stack) initEntry(ctx context.Context, e *entry, env Env) error {
	bound := e.tmpl
	var err error
	if init, ok := As[Initializer](e.tmpl); ok {
		err = s.callLate(ctx, e, hookInit, func(ctx context.Context) error {
			// Records stored under untyped scope keys move first.
			if _, err := migrateLegacy(ctx, env.Store, e.spec.StorageName(), env, e.spec.Scope); err != nil {
				return err
			}
			l, err := init.Init(ctx, env)
			if err == nil && l == nil {
				err = errors.New("Init returned a nil layer")
			}
			bound = l
			return err
		}, func() { closeLate(bound, e.timeoutOf(hookClose)) })
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		e.live = bound
	case e.spec.DisableOnInitError:
		e.disabled = true
	default:
		s.closed = true
		return err
	}
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

// layer returns the live layer with the given ID.
func (s *Stack) layer(id string) (Layer, bool) {
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
		return fmt.Errorf("%w: closed", ErrClosed)
	case !s.inited:
		return fmt.Errorf("%w: Init has not run", ErrClosed)
	}
	return nil
}

// Recall calls every enabled layer's Recall in slot order and returns the
// non-empty results in that order. budgets gives each layer's allocated
// tokens by ID (usually prompt.Allocation.Layers); a layer missing from it
// gets its Budget.Max, or [Unbounded] when it has none, and a layer given
// a negative budget is left out of this Recall (its memory reaches the
// prompt some other way, such as scored assembly). A failing or slow
// layer is reported and contributes nothing; the others go on.
//
// Before the layers recall, Recall sets q.Situation (unless the caller
// did): q.Text followed by the parts of every enabled [Situator], in slot
// order, one per line.
func (s *Stack) Recall(ctx context.Context, q Query, budgets map[string]int) ([]Recalled, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	if q.Situation == "" {
		q.Situation = s.Situation(ctx, q)
	}
	b := hookBatch[Layer](s, hookRecall, runRecall, false, func(id string) bool { bud, ok := budgets[id]; return !ok || bud >= 0 })
	if b == nil {
		return nil, nil
	}
	for i := range b.jobs {
		j := &b.jobs[i]
		j.query = q
		j.query.Budget = budgetOf(budgets, j.e.spec)
	}
	s.runBatch(ctx, b)
	return b.recalled()
}

// budgetOf returns a layer's budget for a Recall: what budgets gives it,
// else its Budget.Max, else Unbounded.
func budgetOf(budgets map[string]int, spec Spec) int {
	if bud, ok := budgets[spec.ID]; ok {
		return bud
	}
	return cmp.Or(spec.Budget.Max, Unbounded)
}

// recalled returns the non-empty results of a batch of Recall jobs, in
// slot order, and their errors joined.
func (b *batch) recalled() ([]Recalled, error) {
	var out []Recalled
	var errs []error
	for i := range b.jobs {
		j := &b.jobs[i]
		if j.err != nil {
			errs = append(errs, j.err)
			continue
		}
		if len(j.items) > 0 {
			if out == nil {
				out = make([]Recalled, 0, len(b.jobs))
			}
			out = append(out, Recalled{ID: j.e.spec.ID, Items: j.items})
		}
	}
	return out, errors.Join(errs...)
}

func runRecall(ctx context.Context, j *job) error {
	var err error
	j.items, err = j.e.live.Recall(ctx, j.query)
	return err
}

func runStore(ctx context.Context, j *job) error {
	st, _ := As[Storer](j.e.live)
	return st.Store(ctx, *j.turn)
}

// Store calls every enabled Storer's Store concurrently, each on its own
// layer, and waits for all of them. Failures are reported and joined into
// the returned error; one layer's failure does not stop the others.
func (s *Stack) Store(ctx context.Context, t Turn) error {
	if err := s.ready(); err != nil {
		return err
	}
	b := hookBatch[Storer](s, hookStore, runStore, true, nil)
	if b == nil {
		return nil
	}
	for i := range b.jobs {
		b.jobs[i].turn = &t
	}
	s.runBatch(ctx, b)
	return b.joinErrs()
}

// Spawn derives the stack of a child agent. For each enabled layer, in
// registration order: a [Spawner] decides (a nil layer or an error leaves
// the layer out of the child; an error is reported); a layer that is not a
// Spawner but whose registered form is an [Initializer] is initialised
// afresh for the child's env (a failure leaves it out and is reported);
// any other layer is shared as is. The child stack is already
// initialised; the parent is not modified. In childEnv a nil Store
// defaults to the parent's, a nil Logger or Redact to the parent's, and
// an empty ExecutionID to a new one.
//
// A layer the child shares with the parent (the same value, as for a
// stateless layer or a Spawner that returns its receiver) stays owned by
// the parent: its hooks are serialised across both stacks, the child's
// Close does not close it and the parent's Return does not hand it back
// to itself. Every other child layer is owned by the child and closed by
// the child's Close.
//
// extra are layers of the child's own, which the parent does not have:
// after the inherited layers, each is initialised like a layer of
// [Stack.Init] with the child's env (an [Initializer]'s Init; its spec's
// DisableOnInitError disables it on failure, any other failure closes the
// child's layers and fails Spawn). They are owned and closed by the
// child, and Return has nothing of theirs to hand back. A nil extra
// layer, an invalid spec, or an ID of the parent's layers or of another
// extra layer fails Spawn before any hook runs.
func (s *Stack) Spawn(ctx context.Context, childEnv Env, extra ...Layer) (*Stack, error) {
	if err := s.ready(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("layer: spawn: %w", err)
	}
	extras, err := newEntries(extra, s.cfg.Timeout, s.byID)
	if err != nil {
		return nil, fmt.Errorf("layer: spawn: extra layers: %w", err)
	}
	childEnv = s.inheritEnv(childEnv)
	cfg := s.cfg
	cfg.Env, cfg.Layers = childEnv, nil
	child := &Stack{cfg: cfg, env: childEnv, log: childEnv.Logger, byID: make(map[string]*entry), inited: true}
	s.deriveInto(ctx, child, childEnv)
	if err := child.addExtras(ctx, extras, childEnv); err != nil {
		return nil, err
	}
	child.order()
	child.buildTools()
	return child, nil
}

// deriveInto adds to child, whose env is env, what each enabled layer of
// s derives for it (see deriveLayer).
func (s *Stack) deriveInto(ctx context.Context, child *Stack, env Env) {
	for _, e := range s.reg {
		if e.disabled {
			continue
		}
		if cl, ok := s.deriveLayer(ctx, e, env); ok {
			child.add(e.childEntry(cl))
		}
	}
}

// addExtras initialises the extra layers of a child stack s, whose env
// is env, and adds them. A failure closes the child's layers.
func (s *Stack) addExtras(ctx context.Context, extras []*entry, env Env) error {
	for _, e := range extras {
		if err := s.initEntry(ctx, e, env); err != nil {
			_ = s.closeEntries(context.WithoutCancel(ctx), s.reg)
			return fmt.Errorf("layer: spawn: %w", err)
		}
		s.add(e)
	}
	return nil
}

// inheritEnv fills in the zero fields of a child's env from the parent's:
// Store, Logger and Redact are the parent's, ExecutionID is new, and a
// child on a thread of its own has the parent's root thread (or the
// parent's thread) as RootThreadID.
func (s *Stack) inheritEnv(env Env) Env {
	env.Store = cmp.Or(env.Store, s.env.Store)
	env.Logger = cmp.Or(env.Logger, s.log)
	if env.Redact == nil {
		env.Redact = s.env.Redact
	}
	switch {
	case env.RootThreadID != "":
	case env.ThreadID == s.env.ThreadID:
		env.RootThreadID = s.env.RootThreadID
	default:
		env.RootThreadID = cmp.Or(s.env.RootThreadID, s.env.ThreadID)
	}
	if env.ExecutionID == "" {
		env.ExecutionID = newID()
	}
	return env
}

// deriveLayer makes the child's form of e's layer: OnSpawn for a
// [Spawner], else a fresh Init of the registered form for an
// [Initializer], else the parent's layer itself (shared). ok is false
// when the layer is left out of the child: its hook failed (reported by
// callLate) or returned a nil layer. A derived layer that arrives after
// its hook timed out is closed, unless it is the parent's own.
func (s *Stack) deriveLayer(ctx context.Context, e *entry, childEnv Env) (cl Layer, ok bool) {
	var hook string
	var derive func(ctx context.Context) (Layer, error)
	if sp, ok := As[Spawner](e.live); ok {
		hook = hookSpawn
		derive = func(ctx context.Context) (Layer, error) { return sp.OnSpawn(ctx, childEnv) }
	} else if init, ok := As[Initializer](e.tmpl); ok {
		hook = hookInit
		derive = func(ctx context.Context) (Layer, error) { return init.Init(ctx, childEnv) }
	} else {
		return e.live, e.live != nil
	}
	live := e.live
	err := s.callLate(ctx, e, hook, func(ctx context.Context) error {
		var err error
		cl, err = derive(ctx)
		return err
	}, func() {
		if !sameLayer(cl, live) {
			closeLate(cl, e.timeoutOf(hookClose))
		}
	})
	if err != nil {
		// cl is not read: a hook that timed out may still be writing it.
		return nil, false
	}
	return cl, cl != nil
}

// childEntry registers cl, the child's form of e's layer, for the child
// stack. A layer that is the parent's own value is shared: it keeps the
// parent's semaphore, so its hooks are serialised across both stacks,
// and the child does not close it.
func (e *entry) childEntry(cl Layer) *entry {
	ce := &entry{spec: e.spec, timeout: e.timeout, tmpl: e.tmpl, live: cl, sem: make(chan struct{}, 1), stuck: e.stuck}
	if sameLayer(cl, e.live) {
		ce.shared, ce.sem = true, e.sem
	}
	return ce
}

// add registers es, after the stack's other layers.
func (s *Stack) add(es ...*entry) {
	for _, e := range es {
		s.reg = append(s.reg, e)
		s.byID[e.spec.ID] = e
	}
}

// order sets the stack's slot order from its registration order.
func (s *Stack) order() {
	s.entries = slices.Clone(s.reg)
	// A stable sort: ties keep registration order.
	slices.SortStableFunc(s.entries, func(a, b *entry) int { return cmp.Compare(a.spec.Slot, b.spec.Slot) })
}

// Return hands a finished child's layers back to the parent: every enabled
// parent layer that is a [Returner] and has a counterpart in child gets
// OnReturn, in slot order. Failures are reported and joined; a failed
// OnReturn leaves that parent layer as it was (the layer's contract).
func (s *Stack) Return(ctx context.Context, child *Stack) error {
	if err := s.ready(); err != nil {
		return err
	}
	if child == nil {
		return nil
	}
	var errs []error
	for _, e := range s.entries {
		r, ce, ok := e.returnTo(child)
		if !ok {
			continue
		}
		if err := s.call(ctx, e, hookReturn, func(ctx context.Context) error { return r.OnReturn(ctx, ce.live) }); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// returnTo returns the Returner the parent's entry e holds and its
// counterpart in child; ok is false when e is disabled or not a
// Returner, or child has no live layer of its own for it.
func (e *entry) returnTo(child *Stack) (r Returner, ce *entry, ok bool) {
	if e.disabled {
		return nil, nil, false
	}
	if r, ok = As[Returner](e.live); !ok {
		return nil, nil, false
	}
	ce, ok = child.byID[e.spec.ID]
	if !ok || ce.shared || ce.live == nil {
		return nil, nil, false
	}
	return r, ce, true
}

// Close closes every initialised layer in reverse registration order. It
// is idempotent: later calls return nil. Failures are reported and joined.
// Every Closer is called even when ctx is already cancelled (a run that
// ends by cancellation must still release and flush): the hooks get ctx's
// values but not its cancellation, and each is bounded by its Close
// timeout. Close waits for a hook still running on a layer (up to that
// timeout) before closing it; Recall, Store and CallTool called after
// Close return ErrClosed.
func (s *Stack) Close(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	s.initMu.Lock()
	defer s.initMu.Unlock()
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
		if e.disabled || e.live == nil || e.shared {
			continue
		}
		fn := closerOf(e.live)
		if fn == nil {
			continue
		}
		if err := s.call(ctx, e, hookClose, fn); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closerOf returns l's Close, as a Closer or an io.Closer; nil when l
// has none.
func closerOf(l Layer) func(context.Context) error {
	if c, ok := As[Closer](l); ok {
		return c.Close
	}
	if c, ok := As[io.Closer](l); ok {
		return func(context.Context) error { return c.Close() }
	}
	return nil
}

func (s *Stack) report(ctx context.Context, id, hook string, d time.Duration, err error) {
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "memlayer: layer hook failed",
			slog.String("layer", id), slog.String("hook", hook), slog.Any("error", err))
	}
	if s.cfg.OnHook != nil {
		s.cfg.OnHook(HookCall{Layer: id, Hook: hook, Duration: d, Err: err})
	}
}

// timeoutOf returns the timeout of a call of hook on e's layer: the
// layer's own (see [Spec.Timeout]), else the hook's default.
func (e *entry) timeoutOf(hook string) time.Duration {
	if e.timeout > 0 {
		return e.timeout
	}
	switch hook {
	case hookInit, hookSpawn, hookReturn:
		return 10 * time.Second
	case hookRecall, hookClose, hookSituation:
		return 5 * time.Second
	default: // Store, tool calls, snapshots, restores, clears, stats
		return 30 * time.Second
	}
}

// sameLayer reports whether a and b are the same layer value. Values of
// types that cannot be compared are never the same.
func sameLayer(a, b Layer) (same bool) {
	if a == nil || b == nil {
		return false
	}
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) || !ta.Comparable() {
		return false
	}
	defer func() {
		if recover() != nil { // a comparable struct holding an incomparable interface value
			same = false
		}
	}()
	return a == b
}

// As finds the first layer in l's wrapping chain that implements T: l
// itself first, then, while the layer has a method Unwrap() Layer (as a
// layer that wraps another does, in the manner of errors.Unwrap), what it
// wraps.
func As[T any](l Layer) (T, bool) {
	for l != nil {
		if t, ok := l.(T); ok {
			return t, true
		}
		u, ok := l.(interface{ Unwrap() Layer })
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
