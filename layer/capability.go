package layer

import (
	"context"
	"time"
)

// Candidate is one piece of memory that competes with others, from every
// layer that offers candidates, for a shared part of the context window
// (see prompt.Assemble), instead of filling a fixed budget of its own.
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

// CandidateSource is implemented by layers that offer their memories to
// scored assembly. Candidates returns what the layer's own Recall would
// choose from, for q. Without it, a layer keeps its slot and budget and
// its Recall fills them.
type CandidateSource interface {
	Candidates(ctx context.Context, q Query) ([]Candidate, error)
}

// BlockRenderer is implemented by a [CandidateSource] whose block frames
// its candidates: a header, instructions, an order of its own. Scored
// assembly decides which candidates are shown; RenderBlock shows them as
// the layer's Recall would. won holds some of the candidates Candidates
// returned in the same step, in the order it returned them. With all of
// them, the block must be what Recall returns when its budget holds it
// all. An empty result shows nothing. Without it, the candidates won are
// shown one per line, best first, in a block fenced with the layer's
// tag. It must be safe to call while other hooks run.
type BlockRenderer interface {
	RenderBlock(won []Candidate) string
}

// MetricsReporter is implemented by layers that keep figures of their own
// work. Metrics returns them by name: "entries" (how many items the layer
// holds) and "bytes" (the approximate size of its state) by convention,
// plus its own. A name ending in "_total" is a count since the layer was
// made (a run's layer, as Init returns it); the others are levels. It must
// be cheap and safe for concurrent use. Without it, a layer reports no
// figures.
type MetricsReporter interface {
	Metrics() map[string]int64
}

// CountReporter is implemented by a [MetricsReporter] whose Metrics may
// read the store (the levels of what it holds) while its "_total"
// counts are at hand. Counts returns only those counts, never reading
// the store; agentloop reads them after every step to audit what the
// layer wrote, and calls Metrics only when figures are exported.
type CountReporter interface {
	Counts() map[string]int64
}

// The defaults of a [Write].
const (
	// DefaultKind is the kind of a write that names none.
	DefaultKind = "fact"
	// DefaultImportance is the importance of a write that gives none.
	DefaultImportance = 0.5
)

// The sorts of [Keeper] that the default router names (see package
// route). A layer may keep a sort of its own.
const (
	// KeepsScratchpad is transient reasoning, kept in view for the rest
	// of the thread until it is replaced.
	KeepsScratchpad = "scratchpad"
	// KeepsEpisodic is an actionable outcome, kept with its time and
	// step and recalled while relevant and recent.
	KeepsEpisodic = "episodic"
	// KeepsSemantic is a durable fact.
	KeepsSemantic = "semantic"
)

// Write is a memory write offered for routing: what the model asked a
// layer's write tool to keep (see [EffectWrite]), or what a [Proposer]
// proposed.
type Write struct {
	// Kind is the write's kind, lowercased: "preference", "reasoning",
	// "outcome", ... ([DefaultKind] when none was given).
	Kind string
	// Text is what to keep, redacted as it would be stored.
	Text string
	// Importance is in [0, 1].
	Importance float64
	// Source says who asked and where: "by=model step=2
	// tool=semantic_memory_memorize", or "by=layer:<id> step=2" for a
	// Proposer's.
	Source string
	// Layer is the ID of the layer whose tool offered the write, or of
	// the Proposer.
	Layer string
	// By is who asked: "model", or "layer:<id>" for a Proposer.
	By string
	// Step is the step of the run the write was made in.
	Step int
	// Tool is the name of the tool the model called; empty for a
	// Proposer's write.
	Tool string
	// Reason is why the router sent the write where it goes. It is set
	// before Keep.
	Reason string
}

// Proposer is implemented by layers whose Store proposes memory writes
// instead of keeping them itself. After each step's Store, the agent
// takes every Proposer's proposals and keeps each as the model's write:
// redacted, routed by its kind, kept by the layer the route names,
// audited. Proposals returns what was proposed since its last call. It
// may run while a Store the stack gave up on at its timeout still runs,
// so guard what they share. Without it, what a layer's Store learns stays
// in that layer.
type Proposer interface {
	Proposals() []Write
}

// Keeper is implemented by layers that keep routed writes. Keeps names
// the sort of write the layer keeps ([KeepsSemantic], ...), which a route
// may name instead of the layer's ID. Keep keeps w and returns what it
// kept. Without it, a layer takes no routed write: a route that names it
// is refused.
type Keeper interface {
	Keeps() string
	Keep(ctx context.Context, w Write) (Kept, error)
}

// Kept is what a [Keeper] kept of a write.
type Kept struct {
	// Reply is what the model that asked is told.
	Reply string
	// Key and Version name the record written, when the layer has them
	// (a fact's ID and version). A Version above 1 supersedes the
	// record's earlier versions.
	Key     string
	Version int
	// Kind, Text and Source are the record as kept, when the layer
	// changed them; empty is as the write said.
	Kind, Text, Source string
	// Unchanged is true when nothing was written: the write restated a
	// record word for word.
	Unchanged bool
	// Evicted are the keys of the records the layer evicted to make
	// room for this one, if any.
	Evicted []string
}

// Effect is what a call of a [Function] does to memory, for the agent's
// audit and router.
type Effect int

const (
	// EffectNone is a call the audit does not record: a read, or a
	// change the layer's Store reports.
	EffectNone Effect = iota
	// EffectUpdate is a call that writes its arguments: it is audited as
	// a write of kind "update" whose text is the arguments.
	EffectUpdate
	// EffectForget is a call that forgets the record its "id" argument
	// names.
	EffectForget
	// EffectWrite is a call that offers a [Write] of its arguments
	// {"text", "kind", "importance"}. An agent routes it instead of
	// running the function; the function runs only where nothing routes.
	EffectWrite
)
