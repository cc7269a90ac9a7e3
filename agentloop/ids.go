package agentloop

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// checkIDs refuses a thread or resource ID longer than thread.MaxIDLen
// with ErrInvalidConfig, before it reaches a storage key.
func checkIDs(threadID, resourceID string) error {
	if err := thread.CheckIDs(threadID, resourceID); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
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
