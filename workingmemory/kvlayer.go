package workingmemory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// DefaultKVLayerID is the ID of a [KVLayer] whose config sets none.
const DefaultKVLayerID = "kv-memory"

// DefaultKVLayerSlot is the slot of a [KVLayer] whose config sets none.
const DefaultKVLayerSlot = 120

// DefaultKVMaxRetries is how many compare-and-swap attempts a [KVLayer]
// makes to persist its changes when KVLayerConfig.MaxRetries is zero.
const DefaultKVMaxRetries = 16

// KVLayerConfig configures a [KVLayer]. The zero KVLayerConfig is valid.
type KVLayerConfig struct {
	// ID is the layer ID. Empty means "kv-memory". It names the block
	// Recall fences the rendered text in: the ID with '-' replaced by
	// '_' ([FenceTag]), <kv_memory> by default, and the layer's storage
	// keys.
	ID string
	// Slot orders the layer in the prompt. Zero means 120.
	Slot int
	// Scope says whose memory each run gets: one per thread (the
	// default), per resource (shared by the resource's threads), one
	// global memory, or one per run (execution: never persisted).
	Scope layer.Scope
	// KV configures each run's key-value memory (limits, observer,
	// clock). Its limits hold per scope key. A nil Logger is the run's
	// (layer.Env.Logger).
	KV KVConfig
	// MaxRetries bounds the compare-and-swap attempts of one persist.
	// Zero means DefaultKVMaxRetries.
	MaxRetries int
	// Render, when set, turns the run's memory into prompt text before
	// every model call ("" recalls nothing). Nil recalls nothing: the
	// key-value memory is for code and tools, not the model.
	Render func(kv *KV) string
	// ChildName names the child scope a spawned agent gets. Nil names it
	// after the child's execution ID.
	ChildName func(child layer.Env) string
	// MergeOnReturn merges a finished child's entries into the parent
	// scope (overwriting) before the child scope is disposed of. By
	// default the child's entries are dropped with its scope.
	MergeOnReturn bool
}

// KVLayer puts a key-value memory ([KV]) into a layer stack, one per
// scope key: the layer returned by [NewKVLayer] is a template, and each
// run gets its own layer from [KVLayer.Init], holding the KV of the run's
// thread (or resource, or the global one, as KVLayerConfig.Scope says),
// loaded from the store. One run never sees another scope's entries, and
// its Snapshot, Restore and Clear touch only its own scope.
//
// # Persistence
//
// A bound layer records which keys of its KV change (Set, Remove, Clear,
// a child's merge on return, Restore) and writes the scope's entries, in
// the [KV.Snapshot] format, under storage.LayerKey(id, scopeKey, "state")
// with compare-and-swap: at the end of every step (the Store hook, which
// runs before the step's checkpoint), when a child returns, on Restore,
// Clear and Close, and whenever [KVLayer.Flush] is called. A write is
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
// OnSpawn gives a child agent a child scope of the run's KV: reads fall
// back to the parent's entries, writes stay in the child, and the child
// scope is not persisted. OnReturn disposes of it, after merging its
// entries into the parent (then persisted) with
// KVLayerConfig.MergeOnReturn.
//
// # Reaching the run's memory
//
// Code that runs inside a run (an agentloop tool made with
// agentloop.NewRunTool, for instance) gets the run's [layer.Stack] and
// finds the run's KV with [KVFrom]. Code outside a run opens a scope's
// memory with [KVLayer.Open] and closes it to persist.
//
// A bound layer's methods are safe for concurrent use.
type KVLayer struct {
	cfg  KVLayerConfig
	spec layer.Spec
	tag  string // the fence tag, from the ID (see FenceTag)

	kv      *KV           // nil in the template
	store   storage.Store // nil: not persisted
	key     string        // the state's storage key
	mu      sync.Mutex    // serialises persists; guards version
	version int64         // the stored version kv's unchanged entries match
}

// errNotBound is returned by the state methods of a template.
var errNotBound = fmt.Errorf("%w: kv layer: a template has no memory; use the layer Init or Open returns", ErrInvalidConfig)

// NewKVLayer returns a key-value memory layer: a template that
// [KVLayer.Init] binds to each run. It does no I/O.
func NewKVLayer(cfg KVLayerConfig) (*KVLayer, error) {
	if cfg.ID == "" {
		cfg.ID = DefaultKVLayerID
	}
	if cfg.Slot == 0 {
		cfg.Slot = DefaultKVLayerSlot
	}
	if cfg.Scope == "" {
		cfg.Scope = layer.ScopeThread
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultKVMaxRetries
	}
	spec := layer.Spec{ID: cfg.ID, Slot: cfg.Slot, Scope: cfg.Scope}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &KVLayer{cfg: cfg, spec: spec, tag: FenceTag(cfg.ID)}, nil
}

// KVFrom returns the key-value memory of the run that stack belongs to:
// the KV of its layer with the given ID ("" means DefaultKVLayerID). It
// fails when the stack has no such layer (or it is disabled) or the
// layer is not a KVLayer.
func KVFrom(stack *layer.Stack, id string) (*KV, error) {
	if id == "" {
		id = DefaultKVLayerID
	}
	l, ok := layer.Find[*KVLayer](stack, id)
	if !ok || l.kv == nil {
		return nil, fmt.Errorf("workingmemory: this run has no key-value memory layer %q", id)
	}
	return l.kv, nil
}

// KV returns the run's key-value memory (a child scope in a spawned
// agent), or nil for a template.
func (l *KVLayer) KV() *KV { return l.kv }

// Spec implements layer.Layer.
func (l *KVLayer) Spec() layer.Spec { return l.spec }

// Init implements layer.Initializer: [KVLayer.Open] for the run's env.
func (l *KVLayer) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	return l.Open(ctx, env)
}

// Open returns a layer bound to env's scope key (see layer.Env.ScopeKey):
// a fresh KV holding the entries stored for that scope, or none. In
// execution scope, or with no env.Store, nothing is loaded or persisted.
// A stored state that cannot be read (not a snapshot, a bad key, over the
// limits) is an error wrapping [ErrInvalidValue] or [ErrLimit], and
// stays stored as it is. The caller closes the layer (or Flushes it) to
// persist its changes.
func (l *KVLayer) Open(ctx context.Context, env layer.Env) (*KVLayer, error) {
	scope := l.spec.EffectiveScope()
	kvcfg := l.cfg.KV
	if kvcfg.Logger == nil {
		kvcfg.Logger = env.Logger
	}
	n := &KVLayer{cfg: l.cfg, spec: l.spec, tag: l.tag, kv: NewKV(kvcfg)}
	if scope == layer.ScopeExecution || env.Store == nil {
		return n, nil
	}
	n.store = env.Store
	n.key = storage.LayerKey(l.spec.ID, env.ScopeKey(scope), "state")
	it, err := n.store.Get(ctx, n.key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		n.version = storage.NoVersion
	case err != nil:
		return nil, fmt.Errorf("workingmemory: kv init: %w", err)
	default:
		if err := n.kv.restore(it.Value, true); err != nil {
			return nil, fmt.Errorf("workingmemory: kv init: stored state %s: %w", n.key, err)
		}
		n.version = it.Version
	}
	n.kv.dirty = map[string]struct{}{}
	return n, nil
}

// Flush persists the changes made to the run's memory since the last
// persist (see "Persistence" in the type's documentation). It returns nil
// at once when nothing changed or the layer is not persisted.
func (l *KVLayer) Flush(ctx context.Context) error {
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
				return fmt.Errorf("workingmemory: kv persist: %w", err)
			}
		}
		changed, snap, err := l.kv.takeChanges()
		if err != nil || len(changed) == 0 {
			return err
		}
		v, err := l.store.Put(ctx, l.key, snap, l.version)
		if err == nil {
			l.version = v
			return nil
		}
		l.kv.keepChanges(changed)
		if !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("workingmemory: kv persist: %w", err)
		}
		if err := l.reload(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: kv persist gave up after %d attempts: %w", ErrConflict, l.cfg.MaxRetries, storage.ErrConflict)
}

// reload takes what another writer stored into the KV (keeping the keys
// this run changed) after a conflict.
func (l *KVLayer) reload(ctx context.Context) error {
	it, err := l.store.Get(ctx, l.key)
	if errors.Is(err, storage.ErrNotFound) {
		l.kv.adopt(kvScopeSnapshot{})
		l.version = storage.NoVersion
		return nil
	}
	if err != nil {
		return fmt.Errorf("workingmemory: kv reload: %w", err)
	}
	snap, _, _, err := l.kv.parseSnapshot(it.Value)
	if err != nil {
		return fmt.Errorf("workingmemory: kv reload: stored state %s: %w", l.key, err)
	}
	l.kv.adopt(snap.kvScopeSnapshot)
	l.version = it.Version
	return nil
}

// Recall implements layer.Layer: Render's text, fenced in a block named
// after the layer ID as [FenceTag] does (<kv_memory> for the default ID),
// or nothing.
func (l *KVLayer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	if l.cfg.Render == nil || l.kv == nil {
		return nil, nil
	}
	text := l.cfg.Render(l.kv)
	if text == "" {
		return nil, nil
	}
	block := layer.Fence(l.tag, text)
	return []layer.Item{{Text: block, Tokens: (len(block) + 3) / 4}}, nil
}

// Store implements layer.Storer: it persists the step's changes
// ([KVLayer.Flush]).
func (l *KVLayer) Store(ctx context.Context, t layer.Turn) error { return l.Flush(ctx) }

// Close implements layer.Closer: it persists what is left
// ([KVLayer.Flush]).
func (l *KVLayer) Close(ctx context.Context) error { return l.Flush(ctx) }

// OnSpawn implements layer.Spawner: the child gets a child scope of this
// run's memory, named by KVLayerConfig.ChildName (default: the child's
// execution ID), not persisted.
func (l *KVLayer) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	if l.kv == nil {
		return nil, errNotBound
	}
	name := child.ExecutionID
	if l.cfg.ChildName != nil {
		name = l.cfg.ChildName(child)
	}
	c, err := l.kv.Child(name)
	if err != nil {
		return nil, fmt.Errorf("workingmemory: kv spawn: %w", err)
	}
	return &KVLayer{cfg: l.cfg, spec: l.spec, tag: l.tag, kv: c}, nil
}

// OnReturn implements layer.Returner: the child's scope is merged into
// this one when KVLayerConfig.MergeOnReturn is set (overwriting) and
// persisted, then disposed of.
func (l *KVLayer) OnReturn(ctx context.Context, child layer.Layer) error {
	cl, ok := layer.As[*KVLayer](child)
	if !ok || l.kv == nil || cl.kv == nil || cl.kv.Parent() != l.kv {
		return nil
	}
	if l.cfg.MergeOnReturn {
		if err := cl.kv.MergeToParent(true); err != nil {
			return fmt.Errorf("workingmemory: kv return: %w", err)
		}
	}
	if err := cl.kv.Dispose(); err != nil {
		return err
	}
	return l.Flush(ctx)
}

// Snapshot implements layer.Snapshotter: the entries of the run's own
// scope, in the [KV.Snapshot] format. Child scopes belong to running child
// agents and are not part of a checkpoint.
func (l *KVLayer) Snapshot(ctx context.Context) (json.RawMessage, error) {
	if l.kv == nil {
		return nil, errNotBound
	}
	return l.kv.snapshot(false)
}

// Restore implements layer.Snapshotter: it replaces the entries of the
// run's own scope (child scopes are kept) with a snapshot's and persists
// them. Data it cannot read is rejected and nothing changes. Entries
// another run of the same scope added since this run loaded are kept.
func (l *KVLayer) Restore(ctx context.Context, data json.RawMessage) error {
	if l.kv == nil {
		return errNotBound
	}
	if err := l.kv.restore(data, true); err != nil {
		return err
	}
	return l.Flush(ctx)
}

// Clear implements layer.Clearer: it clears the run's own scope, in
// memory and in storage.
func (l *KVLayer) Clear(ctx context.Context) error {
	if l.kv == nil {
		return errNotBound
	}
	if err := l.kv.Clear(); err != nil {
		return err
	}
	return l.Flush(ctx)
}

// Stats implements layer.StatsReporter: the run's scope and its child
// scopes.
func (l *KVLayer) Stats(ctx context.Context) (layer.Stats, error) {
	if l.kv == nil {
		return layer.Stats{}, nil
	}
	st, err := l.kv.Stats()
	return layer.Stats{Entries: st.Entries, Bytes: st.Bytes}, err
}

// Interface guards.
var (
	_ layer.Layer         = (*KVLayer)(nil)
	_ layer.Initializer   = (*KVLayer)(nil)
	_ layer.Storer        = (*KVLayer)(nil)
	_ layer.Closer        = (*KVLayer)(nil)
	_ layer.Spawner       = (*KVLayer)(nil)
	_ layer.Returner      = (*KVLayer)(nil)
	_ layer.Snapshotter   = (*KVLayer)(nil)
	_ layer.Clearer       = (*KVLayer)(nil)
	_ layer.StatsReporter = (*KVLayer)(nil)
)
