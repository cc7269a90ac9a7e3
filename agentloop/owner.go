package agentloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// claimOwner records resourceID as the owner of a thread unless it has
// one (thread.ClaimOwner); another owner is ErrInvalidConfig.
func claimOwner(ctx context.Context, st storage.Store, threadID, resourceID string) error {
	err := thread.ClaimOwner(ctx, st, threadID, resourceID)
	if errors.Is(err, thread.ErrOtherOwner) {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return err
}

// runOwner returns the resource a run on a thread acts for: the one the
// run names, or without one the thread's recorded owner (its head's, l,
// else its owner record's), so that a thread continued without its
// resource keeps its owner and its resource-scoped memory. A run that
// names another resource than the thread's fails with
// thread.ErrOtherOwner, which is ErrInvalidConfig.
func runOwner(ctx context.Context, st storage.Store, threadID, resourceID string, l *loaded) (string, error) {
	var recorded string
	var err error
	switch {
	case l == nil:
		recorded, err = thread.Owner(ctx, st, threadID)
	case l.Checkpoint.ResourceID != "":
		recorded = l.Checkpoint.ResourceID
	default:
		recorded, err = thread.ReadOwner(ctx, st, threadID)
	}
	if err != nil {
		return "", fmt.Errorf("%w: thread %s: %w", ErrCheckpoint, storage.Quote(threadID), err)
	}
	switch {
	case recorded == "" || recorded == resourceID:
		return resourceID, nil
	case resourceID == "":
		return recorded, nil
	}
	return "", fmt.Errorf("%w: thread %s: %w", ErrInvalidConfig, storage.Quote(threadID), thread.ErrOtherOwner)
}

// dropThreadScopes deletes the layer records of a thread's own scopes
// (storage.KindThread and storage.KindAnonymous, its child agents'
// included) from layerStore, unless the thread has a head again in
// store. A run calls it when it found its thread deleted or erased while
// it ran (ErrCheckpointGone): what its layers wrote for the thread after
// the erase swept would otherwise be left where no erase of its resource
// finds it. Its resource's scope is left: an erase of the resource finds
// it. Failures are not reported: the records stay reachable by the
// thread's ID (inspect.Inspector.DeleteThread).
func dropThreadScopes(ctx context.Context, store, layerStore storage.Store, threadID string) {
	if _, err := store.Get(ctx, storage.ThreadKey(threadID, thread.HeadName)); !errors.Is(err, storage.ErrNotFound) {
		return // a new run started the thread again, or the store fails
	}
	keys, err := layerStore.List(ctx, "layers/")
	if err != nil {
		return
	}
	for _, k := range keys {
		if threadScoped(k, threadID) {
			_ = layerStore.Delete(ctx, k, storage.AnyVersion)
		}
	}
}

// threadScoped reports whether k is the key of a layer record of one of
// a thread's own scopes: storage.KindThread or storage.KindAnonymous
// with the thread's ID, whole.
func threadScoped(k, threadID string) bool {
	lk, ok := inspect.ParseLayerKey(k)
	if !ok || lk.Legacy {
		return false
	}
	p, ok := storage.ParseScopeKey(lk.ScopeKey)
	return ok && (p.Kind == storage.KindThread || p.Kind == storage.KindAnonymous) && p.ID == threadID
}
