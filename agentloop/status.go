package agentloop

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/memlayer/memlayer/prompt"
)

// Status is where a run stands against its budgets: tokens per layer and
// in total, time, and what happened so far, by kind.
type Status struct {
	// Elapsed is the time since the run began.
	Elapsed time.Duration
	// TimeBudget is the run's time budget (Config.Timeout); zero is none.
	TimeBudget time.Duration
	// TimeLeft is what is left of TimeBudget, never negative; zero
	// without one.
	TimeLeft time.Duration
	// Steps counts the top-level run's finished steps.
	Steps int
	// Usage is the token usage of the model calls so far, child runs'
	// included.
	Usage Usage
	// Budgets is what each layer had of the last finished step's prompt,
	// used and left (see prompt.LayerBudget).
	Budgets []prompt.LayerBudget
	// Events counts the events reported so far, by kind, child runs'
	// included.
	Events map[EventKind]int
}

// Tally folds a run's events into its [Status]. An agent keeps one for
// each run (see [RunStatus] and Result.Status); code outside the loop
// can keep its own from the events it observes (Config.Observer). It is
// safe for concurrent use.
type Tally struct {
	mu     sync.Mutex
	start  time.Time
	budget time.Duration
	s      Status
}

// NewTally returns a Tally of a run that began at start, with time
// budget budget (zero is none).
func NewTally(start time.Time, budget time.Duration) *Tally {
	return &Tally{start: start, budget: budget, s: Status{Events: map[EventKind]int{}}}
}

// Observe folds e into the tally.
func (t *Tally) Observe(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.s.Events == nil { // a Tally not made by NewTally
		t.s.Events = map[EventKind]int{}
	}
	t.s.Events[e.Kind]++
	switch {
	case e.Kind == EventModelCall:
		t.s.Usage = t.s.Usage.Add(e.Usage)
	case e.Kind == EventStep && e.Depth == 0:
		t.s.Steps++
		t.s.Budgets = slices.Clone(e.Budgets)
	}
}

// Status returns the tally's status at now.
func (t *Tally) Status(now time.Time) Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.s
	s.Events = maps.Clone(t.s.Events)
	s.Budgets = slices.Clone(t.s.Budgets)
	if !t.start.IsZero() {
		s.Elapsed = now.Sub(t.start)
	}
	if t.budget > 0 {
		s.TimeBudget, s.TimeLeft = t.budget, max(t.budget-s.Elapsed, 0)
	}
	return s
}

// tallyKey is the context key of a run's Tally.
type tallyKey struct{}

// withTally returns ctx carrying t: a top-level run's, which its child
// runs' events count in too.
func withTally(ctx context.Context, t *Tally) context.Context {
	return context.WithValue(ctx, tallyKey{}, t)
}

// observeTally folds e into the Tally ctx carries, if any.
func observeTally(ctx context.Context, e Event) {
	if t, ok := ctx.Value(tallyKey{}).(*Tally); ok {
		t.Observe(e)
	}
}

// RunStatus returns the status of the run ctx belongs to: for a tool's
// or a layer's code while a run calls it. It is false outside a run.
func RunStatus(ctx context.Context) (Status, bool) {
	t, ok := ctx.Value(tallyKey{}).(*Tally)
	if !ok {
		return Status{}, false
	}
	return t.Status(time.Now()), true
}
