package workingmemory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/memlayer/memlayer/layer"
)

// DefaultKVLayerID is the ID of a [KVLayer] whose config sets none.
const DefaultKVLayerID = "kv-memory"

// DefaultKVLayerSlot is the slot of a [KVLayer] whose config sets none.
const DefaultKVLayerSlot = 120

// KVLayer puts a [KV] into a layer stack, so that a child agent's
// key-value memory is a child scope of its parent's: OnSpawn gives the
// child a child scope (reads fall back to the parent's entries, writes
// stay in the child), and OnReturn disposes of it. It recalls nothing
// unless KVLayerConfig.Render says otherwise. Its scope is execution: the
// memory lives in the process (use Snapshot/Restore to keep it).
type KVLayer struct {
	kv   *KV
	cfg  KVLayerConfig
	spec layer.Spec
	tag  string // the fence tag, from the ID (see FenceTag)
}

// NewKVLayer returns a layer over kv.
func NewKVLayer(kv *KV, cfg KVLayerConfig) (*KVLayer, error) {
	if kv == nil {
		return nil, fmt.Errorf("%w: nil KV", ErrInvalidConfig)
	}
	if cfg.ID == "" {
		cfg.ID = DefaultKVLayerID
	}
	if cfg.Slot == 0 {
		cfg.Slot = DefaultKVLayerSlot
	}
	spec := layer.Spec{ID: cfg.ID, Slot: cfg.Slot, Scope: layer.ScopeExecution}
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &KVLayer{kv: kv, cfg: cfg, spec: spec, tag: FenceTag(cfg.ID)}, nil
}

// KV returns the layer's key-value memory: the root a stack was built
// with, or a child scope in a spawned agent.
func (l *KVLayer) KV() *KV { return l.kv }

// Spec implements layer.Layer.
func (l *KVLayer) Spec() layer.Spec { return l.spec }

// Recall implements layer.Layer: Render's text, fenced in a block named
// after the layer ID as [FenceTag] does (<kv_memory> for the default ID),
// or nothing.
func (l *KVLayer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	if l.cfg.Render == nil {
		return nil, nil
	}
	text := l.cfg.Render(l.kv)
	if text == "" {
		return nil, nil
	}
	block := layer.Fence(l.tag, text)
	return []layer.Item{{Text: block, Tokens: (len(block) + 3) / 4}}, nil
}

// OnSpawn implements layer.Spawner: the child gets a child scope of this
// layer's memory, named by KVLayerConfig.ChildName (default: the child's
// execution ID).
func (l *KVLayer) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	name := child.ExecutionID
	if l.cfg.ChildName != nil {
		name = l.cfg.ChildName(child)
	}
	c, err := l.kv.Child(name)
	if err != nil {
		return nil, fmt.Errorf("workingmemory: kv spawn: %w", err)
	}
	return &KVLayer{kv: c, cfg: l.cfg, spec: l.spec, tag: l.tag}, nil
}

// OnReturn implements layer.Returner: the child's scope is merged into
// this one when KVLayerConfig.MergeOnReturn is set (overwriting), then
// disposed of.
func (l *KVLayer) OnReturn(ctx context.Context, child layer.Layer) error {
	cl, ok := layer.As[*KVLayer](child)
	if !ok || cl.kv.Parent() != l.kv {
		return nil
	}
	if l.cfg.MergeOnReturn {
		if err := cl.kv.MergeToParent(true); err != nil {
			return fmt.Errorf("workingmemory: kv return: %w", err)
		}
	}
	return cl.kv.Dispose()
}

// Snapshot implements layer.Snapshotter: the entries of the layer's own
// scope, in the [KV.Snapshot] format. Child scopes belong to running child
// agents and are not part of a checkpoint.
func (l *KVLayer) Snapshot(ctx context.Context) (json.RawMessage, error) {
	return l.kv.snapshot(false)
}

// Restore implements layer.Snapshotter: it replaces the entries of the
// layer's own scope (child scopes are kept) with a snapshot's.
func (l *KVLayer) Restore(ctx context.Context, data json.RawMessage) error {
	return l.kv.restore(data, true)
}

// Clear implements layer.Clearer: it clears the layer's own scope.
func (l *KVLayer) Clear(ctx context.Context) error { return l.kv.Clear() }

// Stats implements layer.StatsReporter.
func (l *KVLayer) Stats(ctx context.Context) (layer.Stats, error) {
	st, err := l.kv.Stats()
	return layer.Stats{Entries: st.Entries, Bytes: st.Bytes}, err
}

// Interface guards.
var (
	_ layer.Layer         = (*KVLayer)(nil)
	_ layer.Spawner       = (*KVLayer)(nil)
	_ layer.Returner      = (*KVLayer)(nil)
	_ layer.Snapshotter   = (*KVLayer)(nil)
	_ layer.Clearer       = (*KVLayer)(nil)
	_ layer.StatsReporter = (*KVLayer)(nil)
)
