package agentloop

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/storage"
)

// MaxIDLen is the longest thread or resource ID [Agent.Run] and the
// [Inspector]'s methods that take one accept, in bytes; a longer one is
// ErrInvalidConfig.
const MaxIDLen = 512

// checkIDs refuses a thread or resource ID longer than MaxIDLen, before
// it reaches a storage key (a key holds an ID escaped, up to three bytes
// for one, next to the other ID and a layer's name, within
// storage.MaxKeyLen).
func checkIDs(threadID, resourceID string) error {
	if len(threadID) > MaxIDLen {
		return fmt.Errorf("%w: thread ID %s is %d bytes, more than MaxIDLen (%d)", ErrInvalidConfig, storage.Quote(threadID), len(threadID), MaxIDLen)
	}
	if len(resourceID) > MaxIDLen {
		return fmt.Errorf("%w: resource ID %s is %d bytes, more than MaxIDLen (%d)", ErrInvalidConfig, storage.Quote(resourceID), len(resourceID), MaxIDLen)
	}
	return nil
}

// checkThreadID refuses an empty thread ID and one longer than MaxIDLen,
// for the Inspector's methods that name one thread.
func checkThreadID(threadID string) error {
	if threadID == "" {
		return fmt.Errorf("%w: empty thread ID", ErrInvalidConfig)
	}
	return checkIDs(threadID, "")
}

// nothingToContinue is the error of a run without Input on a thread with
// no checkpoint: ErrCheckpointGone when other records of the thread (its
// transcript segments, its audit log) show that it ran and the checkpoint
// vanished since, ErrInvalidConfig for a thread that never ran.
func (a *Agent) nothingToContinue(ctx context.Context, threadID string) error {
	keys, err := a.cfg.Store.List(ctx, storage.ThreadPrefix(threadID))
	if err == nil && len(keys) > 0 {
		return fmt.Errorf("%w: thread %s has other records but no checkpoint to continue; start it again with an Input", ErrCheckpointGone, storage.Quote(threadID))
	}
	return fmt.Errorf("%w: empty input, and thread %s has no checkpoint to continue (a new thread)", ErrInvalidConfig, storage.Quote(threadID))
}
