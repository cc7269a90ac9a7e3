package workingmemory

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/storage"
)

// Layer is the scratchpad: what the model keeps about its goal, plan,
// findings and blockers across steps, turns, restarts and child agents.
// See the package documentation for the merge rules.
//
// A Layer returned by [New] is a template, and [Layer.Init] derives from
// it one Layer per run, bound to the run's store and scope. A template
// belongs to no run: Update, UpdateOnce, Keep, the update tool's call,
// Snapshot, Restore, Clear and [StateAs] fail with an error wrapping
// [layer.ErrTemplate], and State returns nil. All methods
// are safe for concurrent use: updates are serialised per Layer and
// persisted with compare-and-swap, so several Layers (in one process or
// many) updating the same scope lose nothing; reads (Recall, State,
// Snapshot) never wait for an update.
type Layer struct {
	c      *compiled
	store  storage.Store // nil: not persisted
	scope  string        // the scope key, for quarantine keys
	thread string        // the run's thread ID, for legacy call write IDs
	logger *slog.Logger

	mu  sync.Mutex // serialises updates of this Layer
	cur atomic.Pointer[state]

	// base is the state a child's Layer started from (set by OnSpawn;
	// nil otherwise): what OnReturn diffs the child's state against.
	base *state

	// template is set on the Layer New returns, never on a derived one.
	template bool
}

// compiled is what New prepares once and every derived Layer shares
// (read-only).
type compiled struct {
	cfg    Config
	spec   layer.Spec
	tag    string  // the fence tag, from the ID (see fence.Tag)
	schema *schema // nil: no schema
	// tmplState is the template's state (unstored, version 0). States
	// are immutable, so every Layer starting from the template shares it.
	tmplState *state
	merger    merger
	params    json.RawMessage
	desc      string
}

// New returns a scratchpad layer. It compiles the schema once (reading
// SchemaFile if set) and checks the template against it; it does no
// storage I/O.
func New(cfg Config) (*Layer, error) {
	cfg = cfg.withDefaults()
	if !slices.Contains([]ReturnPolicy{ReturnDiscard, ReturnMerge, ReturnReplace}, cfg.OnReturn) {
		return nil, fmt.Errorf("%w: unknown return policy %q", ErrInvalidConfig, cfg.OnReturn)
	}
	spec := cfg.Spec
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	sch, err := compileSchema(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Template == nil && goStateType(cfg.Schema) != nil {
		cfg.Template = cfg.Schema // a Go state type's value is the initial state
	}
	c := &compiled{cfg: cfg, spec: spec, tag: fence.Tag(cfg.ID), schema: sch, merger: merger{nullReplaces: cfg.NullReplaces}}
	tmpl, err := c.template()
	if err != nil {
		return nil, err
	}
	c.params, c.desc = c.tool()
	l := &Layer{c: c, template: true}
	if c.tmplState, err = l.install(tmpl, 0, nil, false); err != nil {
		return nil, fmt.Errorf("%w: template: %w", ErrInvalidConfig, err)
	}
	return l, nil
}

// unbound returns the error of method called on a template, or nil on a
// bound layer.
func (l *Layer) unbound(method string) error {
	if l.template {
		return fmt.Errorf("workingmemory: %s on the template of layer %q: call Init first: %w", method, l.c.spec.ID, layer.ErrTemplate)
	}
	return nil
}

// withDefaults returns cfg with its zero fields set to their defaults.
func (cfg Config) withDefaults() Config {
	cfg.ID = cmp.Or(cfg.ID, DefaultID)
	if cfg.ID == DefaultID {
		cfg.StorageID = cmp.Or(cfg.StorageID, DefaultStorageID)
	}
	cfg.Slot = cmp.Or(cfg.Slot, layer.SlotWorkingMemory)
	cfg.Scope = cmp.Or(cfg.Scope, layer.ScopeThread)
	cfg.Budget = cmp.Or(cfg.Budget, DefaultBudget)
	cfg.MaxBytes = positiveOr(cfg.MaxBytes, DefaultMaxBytes)
	cfg.MaxDepth = positiveOr(cfg.MaxDepth, DefaultMaxDepth)
	cfg.MaxRetries = positiveOr(cfg.MaxRetries, DefaultMaxRetries)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// positiveOr returns n when it is positive, else def: cmp.Or for limits
// where a negative value also means "the default".
func positiveOr(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// template normalises Config.Template into the initial state.
func (c *compiled) template() (any, error) {
	t := c.cfg.Template
	var v any
	var err error
	switch t := t.(type) {
	case nil:
		if c.schema != nil {
			return &jsonx.Object{}, nil
		}
		return "", nil
	case string:
		if c.schema == nil {
			return t, nil
		}
		v, err = decodeJSON([]byte(t), c.cfg.MaxDepth)
	default:
		v, err = normalize(t, c.cfg.MaxDepth)
	}
	if err == nil {
		v, err = c.checkState(v, "the template")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: template: %w", ErrInvalidConfig, err)
	}
	return v, nil
}

// checkState cleans a whole state that comes from outside an update (the
// template, a stored state, a snapshot) and checks it: text (only without
// a schema) or an object that passes the schema. what names v in a
// schema error ("the template").
func (c *compiled) checkState(v any, what string) (any, error) {
	v, _ = cleanValue(v)
	switch v.(type) {
	case *jsonx.Object:
	case string:
		if c.schema != nil {
			return nil, errors.New("the state is text, the schema wants an object")
		}
	default:
		return nil, fmt.Errorf("the state is %s, want text or an object", kindOf(v))
	}
	if c.schema != nil {
		if err := c.schema.validate(v); err != nil {
			if se, ok := err.(*SchemaError); ok {
				se.what = what
			}
			return nil, err
		}
	}
	return v, nil
}

// install encodes v (which passed the schema), checks the size limit and
// makes it the current state, with its write log. With cold, the state
// keeps only the encoding (see state).
func (l *Layer) install(v any, version int64, log *writeLog, cold bool) (*state, error) {
	s := newState(v, version)
	s.log = log
	if len(s.enc) > l.c.cfg.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(s.enc), l.c.cfg.MaxBytes)
	}
	if cold {
		// Only the encoding, an exact copy: the encoder's buffer has
		// spare capacity.
		s = &state{version: version, enc: slices.Clone(s.enc), entries: s.entries, log: log}
	}
	l.cur.Store(s)
	return s, nil
}

// derive returns a Layer sharing l's compiled config, with its own state.
func (l *Layer) derive(store storage.Store, scopeKey, thread string, logger *slog.Logger) *Layer {
	return &Layer{c: l.c, store: store, scope: scopeKey, thread: thread, logger: logger}
}

// stateKey returns the storage key of the state. (It is not kept in the
// Layer: an idle scratchpad should cost little more than its JSON.)
func (l *Layer) stateKey() string {
	return storage.LayerKey(l.c.spec.StorageName(), l.scope, "state")
}

// Spec implements layer.Layer.
func (l *Layer) Spec() layer.Spec { return l.c.spec }

// Init implements layer.Initializer: it returns a Layer bound to the run,
// holding the state stored under storage.LayerKey(id, scopeKey, "state")
// (execution scope: never stored), or the template when nothing is
// stored. A stored state that fails the schema is converted by
// Config.Migrate when set, and the result stored in its place
// ([WarningMigrated]). A stored state that cannot be read, is not text or
// an object, or fails the schema and cannot be migrated is moved to a
// quarantine key (LayerKey(id, scopeKey, "quarantine/<unix-nanos>"),
// [WarningQuarantined]) and the run starts from the template. Both are
// logged at warning level through env.Logger.
func (l *Layer) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	logger := cmp.Or(env.Logger, slog.Default())
	scope := l.c.spec.Scope
	scopeKey := env.ScopeKey(scope)
	var store storage.Store
	if scope != layer.ScopeExecution {
		store = env.Store
	}
	n := l.derive(store, scopeKey, env.ThreadID, logger)
	if store == nil {
		n.cur.Store(l.c.tmplState)
		return n, nil
	}
	for range l.c.cfg.MaxRetries {
		it, err := store.Get(ctx, n.stateKey())
		if errors.Is(err, storage.ErrNotFound) {
			n.cur.Store(l.c.tmplState)
			return n, nil
		}
		if err != nil {
			return nil, fmt.Errorf("workingmemory: init: %w", err)
		}
		done, err := n.load(ctx, it)
		if err != nil {
			return nil, err
		}
		if done {
			return n, nil
		}
	}
	return nil, fmt.Errorf("workingmemory: init: %w", ErrConflict)
}

// load makes the stored record it the current state. A state that fails
// the schema is migrated (Config.Migrate) and stored again, or else
// quarantined, the template taking its place. It reports false when
// someone wrote meanwhile: the record must be read again.
func (l *Layer) load(ctx context.Context, it storage.Item) (bool, error) {
	v, log, bad := l.decodeRecord(it.Value)
	if bad == nil {
		if bad = l.installStored(v, it.Version, log); bad == nil {
			return true, nil
		}
		if l.c.cfg.Migrate != nil {
			mv, err := l.c.migrate(v)
			if err == nil {
				return l.putMigrated(ctx, it, mv, log, bad)
			}
			bad = fmt.Errorf("%w; %w", bad, err)
		}
	}
	err := l.quarantine(ctx, it, bad)
	if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
		return false, nil // someone wrote meanwhile: read again
	}
	if err != nil {
		return false, fmt.Errorf("workingmemory: init: quarantine: %w", err)
	}
	l.cur.Store(l.c.tmplState)
	return true, nil
}

// installStored checks a stored state against the schema and makes it
// the current one.
func (l *Layer) installStored(v any, version int64, log *writeLog) error {
	cv, err := l.c.checkState(v, "the stored state")
	if err == nil {
		_, err = l.install(cv, version, log, true)
	}
	return err
}

// decodeRecord reads a stored record: the state and its write log.
func (l *Layer) decodeRecord(b []byte) (any, *writeLog, error) {
	v, err := decodeJSON(b, l.c.cfg.MaxDepth)
	if err != nil {
		return nil, nil, err
	}
	v, log := splitRecord(v)
	return v, log, nil
}

// migrate runs Config.Migrate on a stored state that failed the schema
// and checks its result. A panic in Migrate is its error.
func (c *compiled) migrate(old any) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("workingmemory: migration panicked: %v", r)
		}
	}()
	v, err = c.cfg.Migrate(jsonx.ToGo(old))
	if err != nil {
		return nil, fmt.Errorf("workingmemory: migration failed: %w", err)
	}
	if s, ok := v.(string); ok && c.schema == nil {
		return s, nil // text stays text (normalize would read it as JSON)
	}
	if v, err = normalize(v, c.cfg.MaxDepth); err == nil {
		v, err = c.checkState(v, "the migrated state")
	}
	if err != nil {
		return nil, fmt.Errorf("workingmemory: migration result: %w", err)
	}
	return v, nil
}

// putMigrated stores the migrated state v in place of the stored item
// it (whose state failed the schema with cause), with compare-and-swap,
// and makes it the current state. It returns false when another writer
// replaced the item meanwhile.
func (l *Layer) putMigrated(ctx context.Context, it storage.Item, v any, log *writeLog, cause error) (bool, error) {
	s, err := l.install(v, it.Version, log, false)
	if err != nil {
		// (Too large: checked before anything is stored.)
		return false, fmt.Errorf("workingmemory: init: migration result: %w", err)
	}
	version, err := l.store.Put(ctx, it.Key, s.record(), it.Version)
	if errors.Is(err, storage.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("workingmemory: init: store the migrated state: %w", err)
	}
	s.version = version
	l.report(ctx, Warning{Kind: WarningMigrated, Layer: l.c.spec.ID, Scope: l.scope, Key: it.Key, Err: cause},
		"workingmemory: stored state failed the schema and was migrated at load",
		slog.String("layer", l.c.spec.ID), slog.String("key", it.Key), slog.Any("error", cause))
	return true, nil
}

// quarantine moves an unreadable stored state aside: it is copied to a
// quarantine key, then deleted from the state key if still unchanged.
func (l *Layer) quarantine(ctx context.Context, it storage.Item, cause error) error {
	qkey, err := storage.Quarantine(ctx, l.store, it, l.c.spec.StorageName(), l.scope, l.c.cfg.Now())
	if err != nil {
		return err
	}
	l.report(ctx, Warning{Kind: WarningQuarantined, Layer: l.c.spec.ID, Scope: l.scope, Key: qkey, Err: cause},
		"workingmemory: stored state quarantined at load; starting from the template",
		slog.String("layer", l.c.spec.ID), slog.String("key", l.stateKey()),
		slog.String("quarantine", qkey), slog.Any("error", cause))
	return nil
}

// Recall implements layer.Layer: a non-empty state (text, or an object
// rendered as indented JSON) fenced in a block named after the layer ID
// (<working_memory> for the default ID, see [fence.Tag]) that its content
// cannot close. Zero and false are values, not emptiness. The
// block is rendered once per state and cached, and so is the last block
// fitted to a budget (by the default token estimate).
//
// A block larger than q.Budget (counted with [layer.Query.Count]) is not
// dropped, since the prompt compiler would then leave the model with no
// scratchpad at all: an object is first rendered as compact JSON; then
// the oldest items of its lists are folded, in the block only, into one
// summary item per list that keeps their IDs, names and status (see the
// package doc, "Over budget"); and what still does not fit is cut,
// ending with a line that says how much is missing and asks the model to
// prune the scratchpad. A zero Budget (a Query built by hand) means no
// budget was given.
func (l *Layer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	s := l.cur.Load()
	if s == nil || s.empty() {
		return nil, nil
	}
	block := s.rendered(l.c.tag)
	tokens := s.blockTokens // the default estimate, counted once per state
	if q.Counter != nil || s.blockTag != l.c.tag {
		tokens = q.Count(block)
	}
	if q.Budget > 0 && tokens > q.Budget {
		block, tokens = l.fitCached(s, q)
		if block == "" {
			return nil, nil
		}
	}
	return []layer.Item{{Text: block, Tokens: tokens}}, nil
}

// fitCached returns the block of s fitted to q.Budget and its tokens:
// the one cached with s when q counts with the default estimate, else
// fitted now (and cached for that estimate).
func (l *Layer) fitCached(s *state, q layer.Query) (string, int) {
	if q.Counter != nil {
		block := l.fit(s, q)
		return block, q.Count(block)
	}
	f, ok := s.fitted(l.c.tag, q.Budget)
	if !ok {
		f = fitted{tag: l.c.tag, budget: q.Budget, block: l.fit(s, q)}
		f.tokens = q.Count(f.block)
		s.keepFit(f)
	}
	return f.block, f.tokens
}

// fit renders s within q.Budget tokens: compact JSON for an object, then
// its lists folded (see folder), then, if that is still too large, its
// first bytes and a notice of the cut. It returns "" when not even the
// notice fits.
//
// The cut is measured on the fenced block itself (the fence defangs tag
// openers, which makes the block longer than the text): a binary search
// finds the longest prefix whose block fits.
func (l *Layer) fit(s *state, q layer.Query) string {
	text := string(s.enc)
	if t, ok := s.tree().(string); ok {
		text = t
	}
	whole := q.Count(fence.Wrap(l.c.tag, text))
	if whole <= q.Budget {
		return fence.Wrap(l.c.tag, text)
	}
	if f := newFolder(l, s.tree()); f != nil {
		folded, ok := f.fold(q)
		if ok {
			return fence.Wrap(l.c.tag, folded)
		}
		text, whole = folded, q.Count(fence.Wrap(l.c.tag, folded))
	}
	return l.cut(text, whole, q)
}

// cut returns the block of the longest prefix of text that fits
// q.Budget with a notice of the cut, whole being the tokens of text's
// whole block; "" when not even the notice fits.
func (l *Layer) cut(text string, whole int, q layer.Query) string {
	fits := func(block string) bool { return q.Count(block) <= q.Budget }
	action := "remove what is no longer needed with the " + layer.ToolName(l.c.spec.ID, "update") + " tool"
	if l.c.cfg.ReadOnly {
		action = "it is read-only"
	}
	cut := func(keep int) string {
		for keep > 0 && !utf8.RuneStart(text[keep]) {
			keep--
		}
		notice := fmt.Sprintf("\n[truncated: this scratchpad is %d bytes, %d are shown; %s]", len(text), keep, action)
		return fence.Wrap(l.c.tag, text[:keep]+notice)
	}
	// hi starts at the prefix the whole block's density predicts (below
	// len(text), as the whole does not fit) and doubles until its block
	// does not fit; n is then the shortest prefix below hi whose block
	// does not fit. A counter need not grow with every byte, so the
	// result is checked.
	hi := int(float64(len(text))*float64(q.Budget)/float64(whole)) + 1
	for hi < len(text) && fits(cut(hi)) {
		hi = min(2*hi, len(text))
	}
	hi = min(hi, len(text))
	n := sort.Search(hi, func(keep int) bool { return !fits(cut(keep)) })
	if n == 0 {
		return ""
	}
	if block := cut(n - 1); fits(block) {
		return block
	}
	return ""
}

// Tag returns the name of the block Recall fences the state in: the
// layer ID with '-' replaced by '_' ([fence.Tag]).
func (l *Layer) Tag() string {
	return l.c.tag
}

// State returns a deep copy of the current state: a string, or a
// map[string]any whose numbers are json.Number. A template has no run's
// state: it returns nil ([StateAs] reports [layer.ErrTemplate]).
func (l *Layer) State() any {
	if l.template {
		return nil
	}
	return jsonx.ToGo(l.cur.Load().tree())
}

// Update merges patch, a JSON object, into the state: the same path the
// update tool takes. The merged state must pass the schema and the size
// limit, or the update is rejected ([ErrSchema] with a [*SchemaError],
// [ErrTooLarge]) and the state is unchanged, in memory and in storage. A
// compare-and-swap conflict re-reads the stored state and merges again,
// re-validating, up to Config.MaxRetries times. ReadOnly blocks it with
// [ErrReadOnly]. A cancelled ctx stops it before it applies anything
// (a store write in flight completes or fails as a whole).
//
// When the store reports the write as failed (a deadline, a lost
// connection: SQLite and Redis may have applied it all the same), Update
// reads the state back, for up to five seconds past ctx, to find out
// whether the write landed, and reports the truth: nil when it landed,
// an error saying "not applied" (wrapping the store's) when it did not,
// and [ErrMaybeApplied] when the state cannot be read back.
func (l *Layer) Update(ctx context.Context, patch json.RawMessage) error {
	if err := l.unbound("Update"); err != nil {
		return err
	}
	return l.UpdateOnce(ctx, "", patch)
}

// Keeps implements layer.Keeper: the scratchpad keeps transient
// reasoning.
func (l *Layer) Keeps() string { return layer.KeepsScratchpad }

// Keep implements layer.Keeper: it merges w's text into the state under
// w's kind.
func (l *Layer) Keep(ctx context.Context, w layer.Write) (layer.Kept, error) {
	if err := l.unbound("Keep"); err != nil {
		return layer.Kept{}, err
	}
	id := l.c.spec.ID
	patch, _ := json.Marshal(map[string]string{w.Kind: w.Text})
	if err := l.Update(ctx, patch); err != nil {
		return layer.Kept{}, fmt.Errorf("routed to the scratchpad %s: %w", id, err)
	}
	return layer.Kept{Reply: fmt.Sprintf("kept on the scratchpad (%s) under %q, not as a durable fact: %s", id, w.Kind, w.Reason)}, nil
}

// UpdateOnce is [Layer.Update] applied at most once per key: an update
// whose key is among the last 16 writes recorded with the stored state
// is not applied again, and nil is returned. Use a key that names the
// update's origin (a tool call ID with its thread), so that a retried
// call is harmless while a new call with the same arguments is a new
// update. The legacy updateWorkingMemory path keys each update by its
// thread, call ID and arguments. An empty key means a fresh one, as in
// Update.
func (l *Layer) UpdateOnce(ctx context.Context, key string, patch json.RawMessage) error {
	if err := l.unbound("UpdateOnce"); err != nil {
		return err
	}
	if l.c.cfg.ReadOnly {
		return ErrReadOnly
	}
	upd, err := l.decodeUpdate(patch)
	if err != nil {
		return err
	}
	return l.apply(ctx, writeID(key), func(cur any) (any, error) { return l.c.merger.mergeState(cur, upd) })
}

// writeID returns the ID of a write: derived from key, or random for an
// empty key.
func writeID(key string) string {
	if key == "" {
		var b [writeIDLen / 2]byte
		_, _ = rand.Read(b[:]) // never fails (crypto/rand)
		return hex.EncodeToString(b[:])
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:writeIDLen/2])
}

func (l *Layer) decodeUpdate(patch []byte) (*jsonx.Object, error) {
	if len(patch) > l.c.cfg.MaxBytes {
		return nil, fmt.Errorf("%w: update of %d bytes, the state limit is %d", ErrTooLarge, len(patch), l.c.cfg.MaxBytes)
	}
	v, err := decodeJSON(patch, l.c.cfg.MaxDepth)
	if err != nil {
		if errors.Is(err, ErrTooDeep) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidUpdate, err)
	}
	upd, ok := v.(*jsonx.Object)
	if !ok {
		return nil, fmt.Errorf("%w: want a JSON object of the fields to change, got %s", ErrInvalidUpdate, kindOf(v))
	}
	return upd, nil
}

// apply computes the next state from the current one with next, checks
// it, and persists it with compare-and-swap, retrying on conflict. id
// identifies the write ("" makes a fresh one): it is recorded in the
// stored state's write log, and a write whose id is already there is not
// applied again.
func (l *Layer) apply(ctx context.Context, id string, next func(cur any) (any, error)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id == "" {
		id = writeID("")
	}
	for attempt := range l.c.cfg.MaxRetries {
		// After a lost race, wait a jittered, growing delay so that
		// contending writers spread out instead of colliding again.
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return fmt.Errorf("workingmemory: update not applied: %w", err)
		}
		cur := l.cur.Load()
		if cur.log.has(id) {
			return nil // applied already
		}
		ns, err := l.nextState(cur, id, next)
		if err != nil {
			return err
		}
		if retry, err := l.persist(ctx, id, cur, ns); !retry {
			return err
		}
	}
	return fmt.Errorf("%w: gave up after %d attempts: %w", ErrConflict, l.c.cfg.MaxRetries, storage.ErrConflict)
}

// nextState computes the state that follows cur with next, checks it
// against the schema and the size limit, and records the write id in its
// log.
func (l *Layer) nextState(cur *state, id string, next func(cur any) (any, error)) (*state, error) {
	v, err := next(cur.tree())
	if err != nil {
		return nil, err
	}
	if l.c.schema != nil {
		if err := l.c.schema.validate(v); err != nil {
			return nil, err
		}
	}
	ns := newState(v, cur.version)
	if len(ns.enc) > l.c.cfg.MaxBytes {
		return nil, fmt.Errorf("%w: the merged state is %d bytes, the limit is %d; remove something first", ErrTooLarge, len(ns.enc), l.c.cfg.MaxBytes)
	}
	ns.log = cur.log.add(id)
	return ns, nil
}

// persist stores ns in place of cur (compare-and-swap) and makes it the
// current state. It reports true when another writer stored first: the
// stored state is then the current one, and the write must be tried
// again. A failed store is settled (see [Layer.settle]).
func (l *Layer) persist(ctx context.Context, id string, cur, ns *state) (bool, error) {
	if l.store != nil {
		var err error
		ns.version, err = l.store.Put(ctx, l.stateKey(), ns.record(), cur.version)
		if errors.Is(err, storage.ErrConflict) {
			_, err := l.reload(ctx)
			return err == nil, err
		}
		if err != nil {
			return false, l.settle(ctx, id, ns.log.count(), err)
		}
	}
	l.cur.Store(ns)
	return false, nil
}

// settleTimeout bounds the read-back of a write reported as failed.
const settleTimeout = 5 * time.Second

// settle finds out whether the write id (number seq in the write log),
// which the store reported as failed with putErr, landed all the same: a
// deadline or a lost reply can strike after the store applied it. It
// reads the stored state back (for up to settleTimeout, even if ctx is
// done) and returns nil when the write is in its log, an error saying
// "not applied" when it is not, and ErrMaybeApplied when the state cannot
// be read or more than logSize writes followed. A write the store applied
// but could not make durable (storage.ErrNotDurable: Redis's WaitReplicas
// unmet) is ErrMaybeApplied without reading back: the read would find it
// on the master that may yet lose it.
func (l *Layer) settle(ctx context.Context, id string, seq int64, putErr error) error {
	if errors.Is(putErr, storage.ErrNotDurable) {
		return fmt.Errorf("%w: persist: %w", ErrMaybeApplied, putErr)
	}
	if neverSent(putErr) {
		// (Reading back would only add failed dials, which go-redis's
		// pool counts against the server.)
		return fmt.Errorf("workingmemory: update not applied: persist: %w", putErr)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	s, err := l.reload(rctx)
	switch {
	case err != nil:
		return fmt.Errorf("%w: persist: %w; reading the state back: %w", ErrMaybeApplied, putErr, err)
	case s.log.has(id):
		return nil
	case s.log.count()-seq >= logSize:
		return fmt.Errorf("%w: persist: %w; %d writes followed, too many to tell", ErrMaybeApplied, putErr, s.log.count()-seq)
	}
	return fmt.Errorf("workingmemory: update not applied: persist: %w", putErr)
}

// neverSent reports whether a write that failed with err never reached
// the store: the store was closed, the key refused, or no connection
// could be opened.
func neverSent(err error) bool {
	var dial *net.OpError
	return errors.Is(err, storage.ErrClosed) || errors.Is(err, storage.ErrInvalidKey) ||
		errors.As(err, &dial) && dial.Op == "dial"
}

// reload reads the stored state (after a conflict, or to settle a
// failed write) and makes it the current one. A state another writer
// stored is taken as is (an update re-validates all of it).
func (l *Layer) reload(ctx context.Context) (*state, error) {
	it, err := l.store.Get(ctx, l.stateKey())
	if errors.Is(err, storage.ErrNotFound) {
		l.cur.Store(l.c.tmplState)
		return l.c.tmplState, nil
	}
	if err != nil {
		return nil, fmt.Errorf("workingmemory: reload: %w", err)
	}
	v, log, err := l.decodeRecord(it.Value)
	if err != nil {
		return nil, fmt.Errorf("workingmemory: reload: stored state: %w", err)
	}
	v, _ = cleanValue(v)
	s := newState(v, it.Version)
	s.log = log
	l.cur.Store(s)
	return s, nil
}

// Store implements layer.Storer: the legacy path. The first
// updateWorkingMemory call in the response whose arguments are a JSON
// object is applied like [Layer.Update]. An update rejected for any
// reason — the merged state failing the schema ([ErrSchema], a
// [*SchemaError]) or over the limits ([ErrTooLarge], [ErrTooDeep],
// whether found while decoding the arguments or after the merge) — is
// returned, naming the call, and changes nothing; a stack reports it
// with the layer ID and hook, through its logger and OnHook. Arguments
// that are not a JSON object (not JSON, truncated, an array) are not an
// update: the call is skipped, with a warning through the logger (the
// one of layer.Env, else slog.Default()) carrying its [ErrInvalidUpdate],
// and the next legacy call of the response is considered. Read-only
// scratchpads ignore the legacy call. A call that has a result in the
// turn was run as the update tool (through its alias) and is not applied
// again.
func (l *Layer) Store(ctx context.Context, t layer.Turn) error {
	if l.c.cfg.ReadOnly {
		return nil
	}
	for _, c := range t.ToolCalls {
		if c.Name != LegacyFunction || ranAsTool(t.Results, c.ID) {
			continue
		}
		upd, err := l.decodeUpdate([]byte(c.Arguments))
		id := writeID(l.thread + "\x00" + c.ID + "\x00" + c.Arguments)
		if errors.Is(err, ErrInvalidUpdate) {
			l.log().LogAttrs(ctx, slog.LevelWarn, "workingmemory: legacy "+LegacyFunction+" call ignored: its arguments are not a JSON object",
				slog.String("layer", l.c.spec.ID), slog.String("call", c.ID), slog.Any("error", err))
			continue
		}
		if err == nil {
			err = l.apply(ctx, id, func(cur any) (any, error) { return l.c.merger.mergeState(cur, upd) })
		}
		if err != nil {
			return fmt.Errorf("workingmemory: %s call %s: %w", LegacyFunction, storage.Quote(c.ID), err)
		}
		return nil
	}
	return nil
}

// ranAsTool reports whether results hold the result of call id.
func ranAsTool(results []layer.ToolResult, id string) bool {
	return id != "" && slices.ContainsFunc(results, func(r layer.ToolResult) bool { return r.ID == id })
}

// log returns the layer's logger: the run's, or slog.Default() for a
// Layer that was not bound to a run.
func (l *Layer) log() *slog.Logger {
	if l.logger == nil {
		return slog.Default()
	}
	return l.logger
}

// OnSpawn implements layer.Spawner. A resource- or global-scoped
// scratchpad gives the child a copy of the current state (states are
// immutable, so the child's writes never reach the parent); a thread- or
// execution-scoped one gives the child a fresh scratchpad (the
// template). The child's scratchpad is not persisted: its changes come
// back only through OnReturn. Its update tool acts on the child's state.
func (l *Layer) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	logger := child.Logger
	if logger == nil {
		logger = l.logger
	}
	n := l.derive(nil, child.ScopeKey(l.c.spec.Scope), child.ThreadID, logger)
	switch l.c.spec.Scope {
	case layer.ScopeResource, layer.ScopeGlobal:
		// States are immutable: sharing one is a deep clone in effect.
		// (Its version is unused: the child is not persisted.)
		n.base = l.cur.Load()
	default:
		n.base = l.c.tmplState
	}
	n.cur.Store(n.base)
	return n, nil
}

// OnReturn implements layer.Returner under Config.OnReturn: discard
// (default), merge the child's changes into this scratchpad, or replace
// this one's state with the child's. A merged or replaced state is
// validated and persisted like an update (a compare-and-swap conflict
// re-reads the stored state and merges again); on error this scratchpad
// is unchanged.
//
// Merge is three-way: what the child changed since OnSpawn (keys set,
// changed or deleted, at any depth of nested objects) is applied to this
// scratchpad's latest stored state, so what the parent, or another thread
// of the same resource, wrote meanwhile is kept. A key both changed takes
// the child's value and is reported as a [WarningReturnConflict]. When the
// child's state or this one is text, the child's state is merged whole
// as an update (its text kept under PreviousKey).
func (l *Layer) OnReturn(ctx context.Context, child layer.Layer) error {
	cl, ok := layer.As[*Layer](child)
	if !ok || l.c.cfg.OnReturn == ReturnDiscard {
		return nil
	}
	cv := cl.cur.Load().tree()
	if l.c.cfg.OnReturn == ReturnReplace {
		return l.apply(ctx, "", func(any) (any, error) { return cv, nil })
	}
	bv := cmp.Or(cl.base, l.c.tmplState).tree()
	if equalJSON(bv, cv) {
		return nil // the child changed nothing
	}
	conflicts, err := l.mergeReturned(ctx, bv, cv)
	if err != nil {
		return err
	}
	if len(conflicts) > 0 {
		e := Warning{Kind: WarningReturnConflict, Layer: l.c.spec.ID, Scope: l.scope, Paths: conflicts}
		l.report(ctx, e, "workingmemory: a returning child overwrote keys that had changed since it was spawned",
			slog.String("layer", e.Layer), slog.String("scope", e.Scope), slog.String("event", string(e.Kind)), slog.Any("paths", e.Paths))
	}
	return nil
}

// mergeReturned applies what a returning child changed (from bv, its
// state at spawn, to cv) to this scratchpad's state: a three-way rebase
// when all three are objects, else cv merged whole as an update. It
// returns the paths both sides changed.
func (l *Layer) mergeReturned(ctx context.Context, bv, cv any) ([]string, error) {
	patch, cok := cv.(*jsonx.Object)
	if !cok {
		patch = &jsonx.Object{Members: []jsonx.Member{{Key: PreviousKey, Value: cv}}}
	}
	_, bok := bv.(*jsonx.Object)
	var conflicts []string
	err := l.apply(ctx, "", func(cur any) (any, error) {
		conflicts = conflicts[:0]
		if _, uok := cur.(*jsonx.Object); bok && cok && uok {
			return rebase(bv, cv, cur, nil, &conflicts), nil
		}
		return l.c.merger.mergeState(cur, patch)
	})
	return conflicts, err
}

// report logs msg with attrs at warning level and sends e to
// Config.OnWarning.
func (l *Layer) report(ctx context.Context, e Warning, msg string, attrs ...slog.Attr) {
	l.log().LogAttrs(ctx, slog.LevelWarn, msg, attrs...)
	if l.c.cfg.OnWarning != nil {
		l.c.cfg.OnWarning(e)
	}
}

// Functions implements layer.Provider: unless read-only, the function
// "update" bound to this Layer, which a legacy updateWorkingMemory call
// also reaches (its alias), so a loop that runs tool calls through
// layer.Stack.CallTool gives the model the update's result. Code reads
// the state with [Layer.State].
func (l *Layer) Functions() []layer.Function {
	if l.c.cfg.ReadOnly {
		return nil
	}
	return []layer.Function{{
		Name:        "update",
		Description: l.c.desc,
		Parameters:  l.c.params,
		Aliases:     []string{LegacyFunction},
		Effect:      layer.EffectUpdate,
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			if err := l.unbound("update"); err != nil {
				return "", err
			}
			if err := l.Update(ctx, args); err != nil {
				return "", err
			}
			return "Working memory updated.", nil
		},
	}}
}

// tool returns the update tool's parameter schema and description.
func (c *compiled) tool() (json.RawMessage, string) {
	null := `null means "no change". `
	if c.cfg.NullReplaces {
		null = "null stores null. "
	}
	// Without a schema, any object; patchSchema adds DeleteKey.
	doc := any(map[string]any{"type": "object", "additionalProperties": true})
	result := `Existing free text is kept under "_previous" when you first send fields.`
	if c.schema != nil {
		doc = c.schema.doc
		result = "The result must match the memory's schema; if it does not, nothing changes and the error lists every problem to fix."
	}
	return patchSchema(doc), "Update your working memory (shown in <" + c.tag + ">). Send only the fields that change: " +
		"objects are merged key by key, and keys you leave out are kept. " +
		"A string, number, boolean or array you send replaces the old value whole (send the complete list; [] empties it). " +
		null + `To delete, list paths in "$delete" (in any object, relative to it): {"$delete": ["notes", "tasks/0"]}; deletions happen before the rest of the update is merged. ` +
		result
}

// Snapshot implements layer.Snapshotter: the state as JSON (a string or
// an object).
func (l *Layer) Snapshot(ctx context.Context) (json.RawMessage, error) {
	if err := l.unbound("Snapshot"); err != nil {
		return nil, err
	}
	return slices.Clone(l.cur.Load().enc), nil
}

// Restore implements layer.Snapshotter: it replaces the state with one
// taken by Snapshot, after checking it like a stored state, and persists
// it. Data it cannot use is rejected and nothing changes.
func (l *Layer) Restore(ctx context.Context, data json.RawMessage) error {
	if err := l.unbound("Restore"); err != nil {
		return err
	}
	v, _, err := l.decodeRecord(data)
	if err == nil {
		v, err = l.c.checkState(v, "the snapshot")
	}
	if err != nil {
		return fmt.Errorf("workingmemory: restore: %w", err)
	}
	return l.apply(ctx, "", func(any) (any, error) { return v, nil })
}

// Clear implements layer.Clearer: the state goes back to the template
// (empty without one) and the stored state is deleted.
func (l *Layer) Clear(ctx context.Context) error {
	if err := l.unbound("Clear"); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.store != nil {
		if err := l.store.Delete(ctx, l.stateKey(), storage.AnyVersion); err != nil {
			return fmt.Errorf("workingmemory: clear: %w", err)
		}
	}
	l.cur.Store(l.c.tmplState)
	return nil
}

// Metrics returns the layer's figures (see layer.MetricsReporter;
// agentloop exports them as OpenTelemetry metrics): "entries", the
// number of top-level keys (1 for non-empty text), and "bytes", the
// compact JSON size.
func (l *Layer) Metrics() map[string]int64 {
	s := l.cur.Load()
	return map[string]int64{"entries": int64(s.entries), "bytes": int64(len(s.enc))}
}

// Interface guards.
var (
	_ layer.Layer           = (*Layer)(nil)
	_ layer.Initializer     = (*Layer)(nil)
	_ layer.Storer          = (*Layer)(nil)
	_ layer.Spawner         = (*Layer)(nil)
	_ layer.Returner        = (*Layer)(nil)
	_ layer.Provider        = (*Layer)(nil)
	_ layer.Snapshotter     = (*Layer)(nil)
	_ layer.Clearer         = (*Layer)(nil)
	_ layer.MetricsReporter = (*Layer)(nil)
	_ layer.Keeper          = (*Layer)(nil)
)
