package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memlayer/memlayer/storage"
)

// OwnerName names a thread's owner record,
// storage.ThreadKey(threadID, OwnerName), which holds
// {"resource_id": "<resource>"}. A writer that stores a user's text under
// a thread that has no head naming its resource (the audit of a
// langchaingo [Memory]) records it there first, so that
// [Inspector.EraseResource] and [Inspector.Threads] find the thread. It is
// written once and never rewritten: a thread's owner, once known, is
// kept.
const OwnerName = "owner"

// ownerRecord is the owner record's JSON.
type ownerRecord struct {
	ResourceID string `json:"resource_id"`
}

// ErrOtherOwner means a run or a writer named a resource for a thread
// that already belongs to another resource. It is an ErrInvalidConfig:
// nothing was written.
var ErrOtherOwner = fmt.Errorf("%w: the thread belongs to another resource", ErrInvalidConfig)

// readOwner returns the resource a thread's owner record names, or ""
// when it has none.
func readOwner(ctx context.Context, st storage.Store, threadID string) (string, error) {
	it, err := st.Get(ctx, storage.ThreadKey(threadID, OwnerName))
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read owner: %w", err)
	}
	var o ownerRecord
	if err := json.Unmarshal(it.Value, &o); err != nil {
		return "", fmt.Errorf("read owner: malformed record: %w", err)
	}
	return o.ResourceID, nil
}

// threadOwner returns the resource a thread belongs to: the one its head
// names, else its owner record's; "" when neither names one.
func threadOwner(ctx context.Context, st storage.Store, threadID string) (string, error) {
	it, err := st.Get(ctx, storage.ThreadKey(threadID, CheckpointName))
	switch {
	case err == nil:
		info, err := headInfo(it.Value)
		if err != nil {
			return "", err
		}
		if info.ResourceID != "" {
			return info.ResourceID, nil
		}
	case !errors.Is(err, storage.ErrNotFound):
		return "", fmt.Errorf("read head: %w", err)
	}
	return readOwner(ctx, st, threadID)
}

// claimOwner records resourceID as the owner of a thread unless it has
// one; the thread's owner being another resource is [ErrOtherOwner]. An
// empty resourceID claims nothing.
func claimOwner(ctx context.Context, st storage.Store, threadID, resourceID string) error {
	if resourceID == "" {
		return nil
	}
	owner, err := threadOwner(ctx, st, threadID)
	if err != nil {
		return err
	}
	switch owner {
	case resourceID:
		return nil
	case "":
	default:
		return fmt.Errorf("thread %s: %w", storage.Quote(threadID), ErrOtherOwner)
	}
	data, err := json.Marshal(ownerRecord{ResourceID: resourceID})
	if err != nil {
		return err
	}
	_, err = st.Put(ctx, storage.ThreadKey(threadID, OwnerName), data, storage.NoVersion)
	if errors.Is(err, storage.ErrConflict) {
		// Another writer recorded an owner first: it must be the same.
		if owner, err = readOwner(ctx, st, threadID); err == nil && owner != resourceID {
			return fmt.Errorf("thread %s: %w", storage.Quote(threadID), ErrOtherOwner)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("record owner: %w", err)
	}
	return nil
}

// runOwner returns the resource a run on a thread acts for: the one the
// run names, or without one the thread's recorded owner (its head's, l,
// else its owner record's), so that a thread continued without its
// resource keeps its owner and its resource-scoped memory. A run that
// names another resource than the thread's fails with [ErrOtherOwner].
func runOwner(ctx context.Context, st storage.Store, threadID, resourceID string, l *loaded) (string, error) {
	var recorded string
	var err error
	switch {
	case l == nil:
		recorded, err = threadOwner(ctx, st, threadID)
	case l.ckpt.ResourceID != "":
		recorded = l.ckpt.ResourceID
	default:
		recorded, err = readOwner(ctx, st, threadID)
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
	return "", fmt.Errorf("thread %s: %w", storage.Quote(threadID), ErrOtherOwner)
}

// dropThreadScopes deletes the layer records of a thread's own scopes
// (storage.KindThread and storage.KindAnonymous, its child agents'
// included) from layerStore, unless the thread has a head again in
// store. A run calls it when it found its thread deleted or erased while
// it ran (ErrCheckpointGone): what its layers wrote for the thread after
// the erase swept would otherwise be left where no erase of its resource
// finds it. Its resource's scope is left: an erase of the resource finds
// it. Failures are not reported: the records stay reachable by the
// thread's ID ([Inspector.DeleteThread]).
func dropThreadScopes(ctx context.Context, store, layerStore storage.Store, threadID string) {
	if _, err := store.Get(ctx, storage.ThreadKey(threadID, CheckpointName)); !errors.Is(err, storage.ErrNotFound) {
		return // a new run started the thread again, or the store fails
	}
	keys, err := layerStore.List(ctx, "layers/")
	if err != nil {
		return
	}
	o := owned{threads: []string{threadID}}
	for _, k := range keys {
		if lk, ok := ParseLayerKey(k); ok && !lk.Legacy && o.typedMine(lk.ScopeKey) {
			_ = layerStore.Delete(ctx, k, storage.AnyVersion)
		}
	}
}
