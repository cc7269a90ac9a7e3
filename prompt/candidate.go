package prompt

import (
	"iter"
	"time"
)

// OrderedTime returns the time a candidate's recency is measured from:
// t, the time its writer's clock gave the record written at seq in the
// store's order of writes, bounded by that order, since a writer's clock
// may be wrong. A record written after another is never older than it
// (its time is raised to the latest earlier time not after now), and a
// time after now (a writer whose clock is ahead) counts as no later than
// now, nor than the times of the records written after it. Only times not
// after now bound others. records yields the order and time of every
// record the candidate competes with (it may include the candidate's own:
// records of the same seq do not bound each other).
func OrderedTime(seq int64, t, now time.Time, records iter.Seq2[int64, time.Time]) time.Time {
	future := t.After(now)
	if future {
		t = now
	}
	floor, t := orderBounds(seq, t, now, future, records)
	if floor.After(t) {
		t = floor
	}
	return t
}

// orderBounds reads the records not after now for OrderedTime: it
// returns the latest time of those written before seq, and t lowered,
// when future, to the earliest time of those written after it.
func orderBounds(seq int64, t, now time.Time, future bool, records iter.Seq2[int64, time.Time]) (time.Time, time.Time) {
	var floor time.Time
	for oseq, ot := range records {
		if ot.After(now) {
			continue
		}
		switch {
		case oseq < seq && ot.After(floor):
			floor = ot
		case oseq > seq && future && ot.Before(t):
			t = ot
		}
	}
	return floor, t
}
