package kv

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/storage"
)

// DefaultLayerID is the ID of a [Layer] whose config sets none: the
// prefix of its block's tag (<kv_memory>).
const DefaultLayerID = "kv_memory"

// DefaultStorageID is the Spec.StorageID of the layer whose ID is
// DefaultLayerID: its ID before the naming scheme, under which its state
// stays stored (see layer.Spec.StorageID).
const DefaultStorageID = "kv-memory"

// DefaultLayerSlot is the slot of a [Layer] whose config sets none.
const DefaultLayerSlot = 120

// DefaultMaxRetries is how many compare-and-swap attempts a [Layer]
// makes to persist its changes when LayerConfig.MaxRetries is zero.
const DefaultMaxRetries = 16

// LayerConfig configures a [Layer]. The zero LayerConfig is valid.
type LayerConfig struct {
	// Spec is what every layer declares (see layer.Spec):
	//   - ID: ID is the layer ID. Empty means DefaultLayerID, "kv_memory". It names the block Recall fences the rendered text in (the ID with '-' replaced by '_', as the other layers do: <kv_memory> by default) and the layer's storage keys (unless StorageID is set: DefaultStorageID for DefaultLayerID).
	//   - StorageID: StorageID names the layer's stored data (see layer.Spec.StorageID). Empty means DefaultStorageID when ID is DefaultLayerID, the ID otherwise.
	//   - Slot: Slot orders the layer in the prompt. Zero means 120.
	//   - Scope: Scope says whose memory each run gets: one per thread (the default), per resource (shared by the resource's threads), one global memory, or one per run (execution: never persisted).
	layer.Spec

	// Memory configures each run's key-value memory (limits, OnChange,
	// clock). Its limits hold per scope key. A nil Logger is the run's
	// (layer.Env.Logger); an empty AgentID the run's execution ID.
	Memory Config
	// MaxRetries bounds the compare-and-swap attempts of one persist.
	// Zero means DefaultMaxRetries.
	MaxRetries int
	// Render, when set, turns the run's memory into prompt text before
	// every model call ("" recalls nothing). Nil recalls nothing: the
	// key-value memory is for code and tools, not the model.
	Render func(mem *Scope) string
	// ChildName names the child scope a spawned agent gets. Nil names it
	// after the child's execution ID.
	ChildName func(child layer.Env) string
	// MergeOnReturn merges a finished child's entries into the parent
	// scope (overwriting) before the child scope is disposed of. By
	// default the child's entries are dropped with its scope.
	MergeOnReturn bool
}

// Layer puts a key-value memory ([Scope]) into a layer stack, one per
// scope key: the layer returned by [NewLayer] is a template, and each
// run gets its own layer from [Layer.Init], holding the memory of the run's
// thread (or resource, or the global one, as LayerConfig.Scope says),
// loaded from the store. A template has no memory: Memory returns nil,
// and Flush, Snapshot, Restore, Clear and OnSpawn fail with an error
// wrapping [layer.ErrTemplate] (and matching [ErrInvalidConfig]). One run never sees another scope's entries, and
// its Snapshot, Restore and Clear touch only its own scope.
//
// # Persistence
//
// A bound layer records which keys of its memory change (Set, Remove, Clear,
// a child's merge on return, Restore) and writes the scope's entries, in
// the [Scope.Snapshot] format, under storage.LayerKey(id, scopeKey, "state")
// with compare-and-swap: at the end of every step (the Store hook, which
// runs before the step's checkpoint), when a child returns, on Restore,
// Clear and Close, and whenever [Layer.Flush] is called. A write is
// acknowledged — it survives a crash of the process — once one of these
// returns nil; a tool that needs its write durable before it answers
// calls Flush. When another run of the same scope wrote meanwhile, the
// layer reads the stored entries, keeps its own changed keys on top of
// them (the last writer of a key wins, every other key is kept) and tries
// again, so concurrent runs lose no update. A failed persist keeps the
// changes pending for the next one and is returned (the stack reports
// it with the layer ID and hook). Execution scope is never persisted.
//
// # Child agents
//
// OnSpawn gives a child agent a child scope of the run's memory: reads fall
// back to the parent's entries, writes stay in the child, and the child
// scope is not persisted. OnReturn disposes of it, after merging its
// entries into the parent (then persisted) with
// LayerConfig.MergeOnReturn.
//
// # Reaching the run's memory
//
// Code that runs inside a run (an agentloop tool made with
// agentloop.NewContextTool, for instance) gets the run's [layer.Stack] and
// finds the run's memory with [From]. Code outside a run opens a scope's
// memory with [Layer.Open] and closes it to persist.
//
// A bound layer's methods are safe for concurrent use.
type Layer struct {
	cfg  LayerConfig
	spec layer.Spec
	tag  string // the fence tag: the ID with '-' replaced by '_'

	mem     *Scope        // nil in the template
	store   storage.Store // nil: not persisted
	key     string        // the state's storage key
	mu      sync.Mutex    // serialises persists; guards version
	version int64         // the stored version mem's unchanged entries match
}

// unbound returns the error of method called on a template, or nil on a
// bound layer: it wraps layer.ErrTemplate and matches ErrInvalidConfig.
func (l *Layer) unbound(method string) error {
	if l.mem != nil {
		return nil
	}
	return templateError{fmt.Errorf("kv: %s on the template of layer %q: call Init first: %w", method, l.spec.ID, layer.ErrTemplate)}
}

// templateError is a template's error, wrapping layer.ErrTemplate, that
// matches ErrInvalidConfig too.
type templateError struct{ error }

func (e templateError) Unwrap() error      { return e.error }
func (templateError) Is(target error) bool { return target == ErrInvalidConfig }

// NewLayer returns a key-value memory layer: a template that
// [Layer.Init] binds to each run. It does no I/O.
func NewLayer(cfg LayerConfig) (*Layer, error) {
	cfg.ID = cmp.Or(cfg.ID, DefaultLayerID)
	if cfg.ID == DefaultLayerID {
		cfg.StorageID = cmp.Or(cfg.StorageID, DefaultStorageID)
	}
	cfg.Slot = cmp.Or(cfg.Slot, DefaultLayerSlot)
	cfg.Scope = cmp.Or(cfg.Scope, layer.ScopeThread)
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	spec := cfg.Spec
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &Layer{cfg: cfg, spec: spec, tag: fence.Tag(cfg.ID)}, nil
}

// From returns the key-value memory of the run that stack belongs to:
// the memory of its layer with the given ID ("" means DefaultLayerID). It
// fails when the stack has no such layer (or it is disabled) or the
// layer is not a Layer.
func From(stack *layer.Stack, id string) (*Scope, error) {
	id = cmp.Or(id, DefaultLayerID)
	l, ok := layer.Find[*Layer](stack, id)
	if !ok || l.mem == nil {
		return nil, fmt.Errorf("kv: this run has no key-value memory layer %q", id)
	}
	return l.mem, nil
}

// Memory returns the run's key-value memory (a child scope in a spawned
// agent), or nil for a template.
func (l *Layer) Memory() *Scope { return l.mem }

// Spec implements layer.Layer.
func (l *Layer) Spec() layer.Spec { return l.spec }

// Init implements layer.Initializer: [Layer.Open] for the run's env.
func (l *Layer) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	return l.Open(ctx, env)
}

// Open returns a layer bound to env's scope key (see layer.Env.ScopeKey):
// a fresh memory holding the entries stored for that scope, or none. In
// execution scope, or with no env.Store, nothing is loaded or persisted.
// A stored state written by a newer version of this package fails with an
// error wrapping [ErrVersion] and stays stored as it is. A stored state
// that cannot be read (not a snapshot, a bad key, over the limits) is set
// aside, as the scratchpad and entity memory do: it is
// copied to LayerKey(id, scopeKey, "quarantine/<unix-nanos>") (see
// storage.Quarantine), reported as a warning through env.Logger, and the
// run starts with an empty memory. The caller closes the layer (or
// Flushes it) to persist its changes.
func (l *Layer) Open(ctx context.Context, env layer.Env) (*Layer, error) {
	scope := l.spec.Scope
	cfg := l.cfg.Memory
	cfg.Logger = cmp.Or(cfg.Logger, env.Logger)
	cfg.AgentID = cmp.Or(cfg.AgentID, env.ExecutionID)
	if cfg.Redact == nil && env.Redact != nil {
		id := l.spec.ID
		cfg.Redact = func(v string) string { return env.Redact(id, v) }
	}
	n := &Layer{cfg: l.cfg, spec: l.spec, tag: l.tag, mem: New(cfg)}
	if scope == layer.ScopeExecution || env.Store == nil {
		return n, nil
	}
	n.store = env.Store
	scopeKey := env.ScopeKey(scope)
	n.key = storage.LayerKey(l.spec.StorageName(), scopeKey, "state")
	it, err := n.store.Get(ctx, n.key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		n.version = storage.NoVersion
	case err != nil:
		return nil, fmt.Errorf("kv: init: %w", err)
	default:
		if err := n.load(ctx, it, env, cfg); err != nil {
			return nil, err
		}
	}
	n.mem.dirty = map[string]struct{}{}
	return n, nil
}

// load restores the stored state it into the layer's fresh memory. A
// state that cannot be read is quarantined (and reported through
// env.Logger), leaving the memory empty (New(cfg)); one of a newer
// version is an error.
func (l *Layer) load(ctx context.Context, it storage.Item, env layer.Env, cfg Config) error {
	l.version = it.Version
	bad := l.mem.restore(it.Value, true)
	if bad == nil {
		return nil
	}
	if errors.Is(bad, ErrVersion) {
		return fmt.Errorf("kv: init: stored state %s: %w", storage.Quote(l.key), bad)
	}
	qkey, err := storage.Quarantine(ctx, l.store, it, l.spec.StorageName(), env.ScopeKey(l.spec.Scope), l.mem.tree.cfg.Now())
	if err != nil {
		return fmt.Errorf("kv: init: stored state %s cannot be read (%w), and setting it aside failed: %w", storage.Quote(l.key), bad, err)
	}
	cmp.Or(env.Logger, slog.Default()).LogAttrs(ctx, slog.LevelWarn, "kv: stored state quarantined; starting with an empty memory",
		slog.String("layer", l.spec.ID), slog.String("key", l.key),
		slog.String("quarantine", qkey), slog.Any("error", bad))
	l.mem = New(cfg)
	l.version = storage.NoVersion
	return nil
}

// Flush persists the changes made to the run's memory since the last
// persist (see "Persistence" in the type's documentation). It returns nil
// at once when nothing changed or the layer is not persisted.
func (l *Layer) Flush(ctx context.Context) error {
	if err := l.unbound("Flush"); err != nil {
		return err
	}
	return l.flush(ctx)
}

// flush is Flush; on a template, which persists nothing, it returns nil.
func (l *Layer) flush(ctx context.Context) error {
	if l.store == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for attempt := range l.cfg.MaxRetries {
		if attempt > 0 {
			// After a lost race, wait a jittered, growing delay so that
			// contending writers spread out instead of colliding again.
			if err := storage.WaitRetry(ctx, attempt); err != nil {
				return fmt.Errorf("kv: persist: %w", err)
			}
		}
		if done, err := l.persist(ctx); done || err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: persist gave up after %d attempts: %w", ErrConflict, l.cfg.MaxRetries, storage.ErrConflict)
}

// persist stores the changes once. It reports false when another writer
// stored first: what it stored is then taken into the memory (keeping
// this run's changes), and the changes must be stored again.
func (l *Layer) persist(ctx context.Context) (bool, error) {
	changed, snap, err := l.mem.takeChanges()
	if err != nil || len(changed) == 0 {
		return true, err
	}
	v, err := l.store.Put(ctx, l.key, snap, l.version)
	if err == nil {
		l.version = v
		return true, nil
	}
	l.mem.keepChanges(changed)
	if !errors.Is(err, storage.ErrConflict) {
		return true, fmt.Errorf("kv: persist: %w", err)
	}
	return false, l.reload(ctx)
}

// reload takes what another writer stored into the memory (keeping the keys
// this run changed) after a conflict.
func (l *Layer) reload(ctx context.Context) error {
	it, err := l.store.Get(ctx, l.key)
	if errors.Is(err, storage.ErrNotFound) {
		l.mem.adopt(scopeSnapshot{})
		l.version = storage.NoVersion
		return nil
	}
	if err != nil {
		return fmt.Errorf("kv: reload: %w", err)
	}
	snap, _, _, err := l.mem.parseSnapshot(it.Value)
	if err != nil {
		return fmt.Errorf("kv: reload: stored state %s: %w", storage.Quote(l.key), err)
	}
	l.mem.adopt(snap.scopeSnapshot)
	l.version = it.Version
	return nil
}

// Recall implements layer.Layer: Render's text, fenced in a block named
// after the layer ID (<kv_memory> for the default ID),
// or nothing.
func (l *Layer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	if l.cfg.Render == nil || l.mem == nil {
		return nil, nil
	}
	text := l.cfg.Render(l.mem)
	if text == "" {
		return nil, nil
	}
	block := fence.Wrap(l.tag, text)
	return []layer.Item{{Text: block, Tokens: q.Count(block)}}, nil
}

// Store implements layer.Storer: it persists the step's changes
// ([Layer.Flush]).
func (l *Layer) Store(ctx context.Context, t layer.Turn) error { return l.flush(ctx) }

// Close implements layer.Closer: it persists what is left
// ([Layer.Flush]).
func (l *Layer) Close(ctx context.Context) error { return l.flush(ctx) }

// OnSpawn implements layer.Spawner: the child gets a child scope of this
// run's memory, named by LayerConfig.ChildName (default: the child's
// execution ID), belonging to the child (its AgentID is the child's
// execution ID), not persisted. Every spawn gets a new scope, even when
// ChildName gives two children one name.
func (l *Layer) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	if err := l.unbound("OnSpawn"); err != nil {
		return nil, err
	}
	name := child.ExecutionID
	if l.cfg.ChildName != nil {
		name = l.cfg.ChildName(child)
	}
	c, err := l.mem.ChildFor(name, child.ExecutionID)
	if err != nil {
		return nil, fmt.Errorf("kv: spawn: %w", err)
	}
	return &Layer{cfg: l.cfg, spec: l.spec, tag: l.tag, mem: c}, nil
}

// OnReturn implements layer.Returner: the child's scope is merged into
// this one when LayerConfig.MergeOnReturn is set (overwriting) and
// persisted, then disposed of.
func (l *Layer) OnReturn(ctx context.Context, child layer.Layer) error {
	cl, ok := layer.As[*Layer](child)
	if !ok || l.mem == nil || cl.mem == nil || cl.mem.Parent() != l.mem {
		return nil
	}
	if l.cfg.MergeOnReturn {
		if _, err := cl.mem.MergeToParent(true); err != nil {
			return fmt.Errorf("kv: return: %w", err)
		}
	}
	if err := cl.mem.Dispose(); err != nil {
		return err
	}
	return l.Flush(ctx)
}

// Snapshot implements layer.Snapshotter: the entries of the run's own
// scope, in the [Scope.Snapshot] format. Child scopes belong to running child
// agents and are not part of a checkpoint.
func (l *Layer) Snapshot(ctx context.Context) (json.RawMessage, error) {
	if err := l.unbound("Snapshot"); err != nil {
		return nil, err
	}
	return l.mem.marshal(false)
}

// Restore implements layer.Snapshotter: it replaces the entries of the
// run's own scope (child scopes are kept) with a snapshot's and persists
// them. Data it cannot read is rejected and nothing changes. Entries
// another run of the same scope added since this run loaded are kept.
func (l *Layer) Restore(ctx context.Context, data json.RawMessage) error {
	if err := l.unbound("Restore"); err != nil {
		return err
	}
	if err := l.mem.restore(data, true); err != nil {
		return err
	}
	return l.Flush(ctx)
}

// Clear implements layer.Clearer: it clears the run's own scope, in
// memory and in storage.
func (l *Layer) Clear(ctx context.Context) error {
	if err := l.unbound("Clear"); err != nil {
		return err
	}
	if _, err := l.mem.Clear(); err != nil {
		return err
	}
	return l.Flush(ctx)
}

// Metrics returns the layer's figures (see layer.MetricsReporter;
// agentloop exports them as OpenTelemetry metrics): "entries", "bytes"
// and "scopes", what the run's scope and its child scopes hold now;
// "fallback_lookups_total", reads answered by an ancestor scope;
// "expired_total", expired entries removed; and "writes_total", entries
// set, removed or cleared (agentloop's audit records each step's). The
// counts cover the run's scope and the child scopes of the same agent,
// disposed ones included, not those of child agents, whose own layers
// count them. Names ending in "_total" only grow. A template reports
// nothing.
func (l *Layer) Metrics() map[string]int64 {
	if l.mem == nil {
		return nil
	}
	st, _ := l.mem.Stats() // a disposed scope holds nothing
	fallbacks, expired, writes := l.mem.counts()
	return map[string]int64{"entries": int64(st.Entries), "bytes": int64(st.Bytes), "scopes": int64(st.Scopes),
		"fallback_lookups_total": fallbacks, "expired_total": expired, "writes_total": writes}
}

// Interface guards.
var (
	_ layer.Layer           = (*Layer)(nil)
	_ layer.Initializer     = (*Layer)(nil)
	_ layer.Storer          = (*Layer)(nil)
	_ layer.Closer          = (*Layer)(nil)
	_ layer.Spawner         = (*Layer)(nil)
	_ layer.Returner        = (*Layer)(nil)
	_ layer.Snapshotter     = (*Layer)(nil)
	_ layer.Clearer         = (*Layer)(nil)
	_ layer.MetricsReporter = (*Layer)(nil)
)
