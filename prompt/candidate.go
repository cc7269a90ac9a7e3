package prompt

import (
	"iter"
	"time"
)

// Candidate is one piece of memory that competes with others, from every
// layer that offers candidates, for a shared part of the context window
// (see [Assemble]), instead of filling a fixed budget of its own.
// Layers that keep many small memories (facts, episodes, summaries) offer
// candidates; layers whose block must always be there (the scratchpad,
// the entities) keep their slot and budget.
type Candidate struct {
	// Layer is the ID of the layer that offers it.
	Layer string
	// Key identifies the candidate within its layer (a fact or episode
	// ID): with Layer it breaks ties, so the same inputs always give the
	// same selection.
	Key string
	// Text is what goes into the prompt if the candidate is selected,
	// and Tokens its size counted with the Query's counter.
	Text   string
	Tokens int
	// Similarity to the current input, in [0, 1].
	Similarity float64
	// Time is when the memory was made or last confirmed; the zero time
	// gives no recency.
	Time time.Time
	// Importance in [0, 1].
	Importance float64
	// Source says where the memory came from (a thread, a tool, the
	// user), for the audit; it does not affect the score.
	Source string
}

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
	if floor.After(t) {
		t = floor
	}
	return t
}
