package seqlog

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/storage"
)

// MarkState is how the marker of a log's index stands to the head a
// layer holds.
type MarkState int

const (
	// MarkCurrent says the marker is of the head's base: the index holds
	// what the marker says.
	MarkCurrent MarkState = iota
	// MarkNewer says the marker is of a newer base than the head's (a
	// Clear since): the index is ahead and there is nothing to do.
	MarkNewer
	// MarkNone says the index has no usable marker: build it from the
	// head's base.
	MarkNone
)

// CheckMark compares the base of an index's marker (marked false when
// the index has none) with the base of the head a layer holds. An index
// of an older base, built before a Clear or Restore that did not finish,
// is dropped from ix and reported as MarkNone. An index without a marker
// is new, or holds a writer's first entries indexed before its marker
// (indexing them again changes nothing).
func CheckMark(ctx context.Context, ix storage.Searcher, col string, marked bool, markBase, headBase int64) (MarkState, error) {
	switch {
	case !marked:
		return MarkNone, nil
	case markBase > headBase:
		return MarkNewer, nil
	case markBase < headBase:
		if err := ix.Drop(ctx, col); err != nil {
			return MarkNone, fmt.Errorf("drop the stale index: %w", err)
		}
		return MarkNone, nil
	}
	return MarkCurrent, nil
}
