package prompt

import "time"

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
