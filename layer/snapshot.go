package layer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// snapshotVersion is the format version written by [Stack.Snapshot].
const snapshotVersion = 1

// Snapshot is the state of every [Snapshotter] layer of a stack, as
// versioned JSON. It is what thread checkpoints store.
type Snapshot struct {
	// Version is the format's version: 1 is the only one so far.
	Version int `json:"version"`
	// Layers holds each layer's own snapshot by layer ID.
	Layers map[string]json.RawMessage `json:"layers"`
}

// Snapshot captures the state of every enabled layer that is a
// [Snapshotter] or, when ids are given, of those of them with one of
// these IDs. The layers' Snapshot hooks run one after the other, in slot
// order (as Recall's do); if one fails, the first failure in slot order
// is returned.
func (s *Stack) Snapshot(ctx context.Context, ids ...string) (Snapshot, error) {
	if err := s.ready(); err != nil {
		return Snapshot{}, err
	}
	b := hookBatch[Snapshotter](s, hookSnapshot, runSnapshot, false, func(id string) bool { return len(ids) == 0 || slices.Contains(ids, id) })
	if b == nil {
		return Snapshot{Version: snapshotVersion, Layers: map[string]json.RawMessage{}}, nil
	}
	s.runBatch(ctx, b)
	snap := Snapshot{Version: snapshotVersion, Layers: make(map[string]json.RawMessage, len(b.jobs))}
	for i := range b.jobs {
		j := &b.jobs[i]
		if j.err != nil {
			return Snapshot{}, j.err
		}
		snap.Layers[j.e.spec.ID] = j.data
	}
	return snap, nil
}

func runSnapshot(ctx context.Context, j *job) error {
	sn, _ := As[Snapshotter](j.e.live)
	var err error
	j.data, err = sn.Snapshot(ctx)
	return err
}

// Restore puts every layer back to the state in snap. It refuses, with an
// error that is [ErrSnapshot] and without changing anything, a snapshot of
// a newer version, or one naming a
// layer this stack does not have. If a layer rejects its part, the layers
// already restored are put back to their previous state.
func (s *Stack) Restore(ctx context.Context, snap Snapshot) error {
	if err := s.ready(); err != nil {
		return err
	}
	if snap.Version < 1 || snap.Version > snapshotVersion {
		return fmt.Errorf("%w: version %d, this build reads up to %d", ErrSnapshot, snap.Version, snapshotVersion)
	}
	ids := slices.Sorted(maps.Keys(snap.Layers))
	if err := s.restorable(ids); err != nil {
		return err
	}
	before, err := s.Snapshot(ctx)
	if err != nil {
		return err
	}
	for i, id := range ids {
		err := s.restoreLayer(ctx, id, snap.Layers[id])
		if err == nil {
			continue
		}
		s.rollback(ctx, ids, i, err, before)
		return fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	return nil
}

// rollback puts back, to their state in before, the layers of ids that
// Restore restored before ids[failed] failed with err, and the failing
// one too if it timed out (its Restore may still land; the rollback
// waits for it). The rollback runs even when ctx is what failed, each
// step bounded by its timeout.
func (s *Stack) rollback(ctx context.Context, ids []string, failed int, err error, before Snapshot) {
	undo := ids[:failed]
	if errors.Is(err, ErrTimeout) {
		undo = ids[:failed+1]
	}
	rctx := context.WithoutCancel(ctx)
	for _, done := range undo {
		_ = s.restoreLayer(rctx, done, before.Layers[done])
	}
}

// restorable checks that every layer ids names is an enabled layer of
// the stack that can be restored.
func (s *Stack) restorable(ids []string) error {
	for _, id := range ids {
		e, ok := s.byID[id]
		if !ok || e.disabled {
			return fmt.Errorf("%w: layer %q is not in this stack", ErrSnapshot, id)
		}
		if _, ok := As[Snapshotter](e.live); !ok {
			return fmt.Errorf("%w: layer %q cannot be restored", ErrSnapshot, id)
		}
	}
	return nil
}

// restoreLayer restores layer id, a Snapshotter, to state, as a hook of
// the layer.
func (s *Stack) restoreLayer(ctx context.Context, id string, state json.RawMessage) error {
	e := s.byID[id]
	sn, _ := As[Snapshotter](e.live)
	return s.call(ctx, e, hookRestore, func(ctx context.Context) error { return sn.Restore(ctx, state) })
}

// Clear empties every enabled layer that is a [Clearer], one after the
// other in slot order. Failures are reported and joined; the other layers
// are still cleared.
func (s *Stack) Clear(ctx context.Context) error {
	if err := s.ready(); err != nil {
		return err
	}
	b := hookBatch[Clearer](s, hookClear, runClear, false, nil)
	if b == nil {
		return nil
	}
	s.runBatch(ctx, b)
	return b.joinErrs()
}

func runClear(ctx context.Context, j *job) error {
	c, _ := As[Clearer](j.e.live)
	return c.Clear(ctx)
}
