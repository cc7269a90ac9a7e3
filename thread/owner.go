package thread

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
// a thread that has no head naming its resource (an audit written apart
// from a run) records it there first, so that an erase of the resource
// finds the thread. It is written once and never rewritten: a thread's
// owner, once known, is kept.
const OwnerName = "owner"

// ownerRecord is the owner record's JSON.
type ownerRecord struct {
	ResourceID string `json:"resource_id"`
}

// ErrOtherOwner means a run or a writer named a resource for a thread
// that already belongs to another resource. Nothing was written.
var ErrOtherOwner = errors.New("thread: the thread belongs to another resource")

// ReadOwner returns the resource a thread's owner record names, or ""
// when it has none.
func ReadOwner(ctx context.Context, st storage.Store, threadID string) (string, error) {
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

// Owner returns the resource a thread belongs to: the one its head
// names, else its owner record's; "" when neither names one.
func Owner(ctx context.Context, st storage.Store, threadID string) (string, error) {
	it, err := st.Get(ctx, storage.ThreadKey(threadID, HeadName))
	switch {
	case err == nil:
		info, err := ReadInfo(it.Value)
		if err != nil {
			return "", err
		}
		if info.ResourceID != "" {
			return info.ResourceID, nil
		}
	case !errors.Is(err, storage.ErrNotFound):
		return "", fmt.Errorf("read head: %w", err)
	}
	return ReadOwner(ctx, st, threadID)
}

// ClaimOwner records resourceID as the owner of a thread unless it has
// one; the thread's owner being another resource is [ErrOtherOwner]. An
// empty resourceID claims nothing.
func ClaimOwner(ctx context.Context, st storage.Store, threadID, resourceID string) error {
	if resourceID == "" {
		return nil
	}
	owner, err := ReadOwner(ctx, st, threadID)
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
	return recordOwner(ctx, st, threadID, resourceID)
}

// recordOwner records resourceID as the owner of a thread that has none.
// When another writer records one first, it must be resourceID.
func recordOwner(ctx context.Context, st storage.Store, threadID, resourceID string) error {
	data, err := json.Marshal(ownerRecord{ResourceID: resourceID})
	if err != nil {
		return err
	}
	_, err = st.Put(ctx, storage.ThreadKey(threadID, OwnerName), data, storage.NoVersion)
	if errors.Is(err, storage.ErrConflict) {
		// Another writer recorded an owner first: it must be the same.
		owner, err := ReadOwner(ctx, st, threadID)
		if err == nil && owner != resourceID {
			return fmt.Errorf("thread %s: %w", storage.Quote(threadID), ErrOtherOwner)
		}
		return err
	}
	if err != nil {
		return fmt.Errorf("record owner: %w", err)
	}
	return nil
}
