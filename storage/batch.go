package storage

import (
	"context"
	"fmt"
)

// Write is one write of a batch handed to [Batcher.WriteBatch]: a Put of
// Value under Key, or, when Delete is set, a Delete of Key. IfVersion is
// checked as [Store.Put] and [Store.Delete] check it.
type Write struct {
	Key       string
	Value     []byte
	IfVersion int64
	Delete    bool
}

// Batcher is implemented by stores that can commit several conditional
// writes as one transaction, such as storage/postgres. A caller that
// writes several records per step (package thread) uses it, when the
// store has it, so that the step costs one commit and is all or nothing.
// Without it, the caller writes one record at a time.
type Batcher interface {
	// WriteBatch applies writes, in order, as one transaction: all of
	// them or none. Each is checked as Put or Delete checks it: if one
	// check fails, the error names its key and is ErrConflict (or
	// ErrNotFound, for a conditional Delete of a missing key), and
	// nothing is applied. A key may appear at most once. It returns the
	// new version of each Put, and 0 for each Delete. An error that is
	// ErrNotDurable leaves the outcome of the whole batch unknown, as it
	// does for one write.
	WriteBatch(ctx context.Context, writes []Write) ([]int64, error)
}

// CheckBatch reports whether writes is a batch every backend accepts:
// valid keys, each at most once, and versions Put or Delete accept.
// Batchers call it first; its error is ErrInvalidKey or ErrConflict.
func CheckBatch(writes []Write) error {
	seen := make(map[string]struct{}, len(writes))
	for i, w := range writes {
		if err := ValidateKey(w.Key); err != nil {
			return fmt.Errorf("write %d: %w", i, err)
		}
		if _, dup := seen[w.Key]; dup {
			return fmt.Errorf("write %d: key %s appears twice: %w", i, Quote(w.Key), ErrInvalidKey)
		}
		seen[w.Key] = struct{}{}
		if w.IfVersion < AnyVersion || w.Delete && w.IfVersion == NoVersion {
			return fmt.Errorf("write %d: key %s: invalid version %d: %w", i, Quote(w.Key), w.IfVersion, ErrConflict)
		}
	}
	return nil
}

// CheckOp returns the error an operation on key fails with before it
// starts: ErrClosed when closed, ctx's error when ctx has ended, and,
// when validate is set, the error of [ValidateKey]. Backends call it
// first and wrap its error with their name, the operation and the key.
func CheckOp(ctx context.Context, closed bool, key string, validate bool) error {
	switch {
	case closed:
		return ErrClosed
	case ctx.Err() != nil:
		return ctx.Err()
	case validate:
		return ValidateKey(key)
	}
	return nil
}
