package agentloop

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/internal/textcut"
	"github.com/memlayer/memlayer/thread"
)

// latest is the summary the next prompt uses: one made for the current
// step (its window did not fit), else the committed one.
func (th *threadState) latest() thread.Summary {
	if th.pending != nil {
		return *th.pending
	}
	return th.summary
}

// windowed reports whether the run sends a window and a summary.
func (r *run) windowed() bool { return r.thread != nil && !r.a.cfg.History.Full }

// stored returns the thread's messages from index from up to upTo as
// stored: the loaded records (never compacted), then the run's own
// messages, masked.
func (r *run) stored(from, upTo int) ([]thread.Message, error) {
	out := make([]thread.Message, 0, upTo-from)
	for i := from - r.base; i < upTo-r.base; i++ {
		if i < len(r.loadedStored) {
			out = append(out, r.loadedStored[i])
			continue
		}
		m, err := storedMessage(r.msgs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, maskMessage(r.a.redact, m, nil))
	}
	return out, nil
}

// turnStarts returns the indices in r.msgs of the user messages from
// index from on.
func (r *run) turnStarts(from int) []int {
	var out []int
	for i := from; i < len(r.msgs); i++ {
		if r.msgs[i].Role == llms.ChatMessageTypeHuman {
			out = append(out, i)
		}
	}
	return out
}

// summarizeTo makes a pending summary that covers the thread's messages
// up to upTo (an index in the thread), synchronously.
func (r *run) summarizeTo(ctx context.Context, upTo int) error {
	th := r.thread
	prev := th.latest()
	if upTo <= prev.Covers {
		return nil
	}
	part, err := r.stored(prev.Covers, upTo)
	if err != nil {
		return err
	}
	start := time.Now()
	text, err := r.a.cfg.History.Summarizer.Summarize(ctx, prev.Text, part)
	if err != nil {
		return err
	}
	th.pending = &thread.Summary{Version: prev.Version + 1, Covers: upTo, Text: text}
	r.a.emit(ctx, Event{Kind: EventSummary, ThreadID: r.threadID, Step: r.res.Steps, Duration: time.Since(start)})
	return nil
}

// summaryDue returns the index in the thread up to which the messages
// are due to be summarized, or 0.
func (r *run) summaryDue() int {
	h := r.a.cfg.History
	covers := r.thread.latest().Covers
	starts := r.turnStarts(covers - r.base)
	out := len(starts) - h.MaxTurns
	if out < h.SummarizeAfter {
		return 0
	}
	return r.base + starts[out]
}

// background is a summary being made off the critical path.
type background struct {
	done chan struct{}
	sum  *thread.Summary
	err  error
	took time.Duration
}

// maybeSummarize runs before a step's checkpoint: it takes a finished
// background summary as the pending one, and starts (or, inline, makes)
// a summary when enough turns have left the window.
func (r *run) maybeSummarize(ctx context.Context) {
	if !r.windowed() {
		return
	}
	if r.summarizing() {
		return
	}
	upTo := r.summaryDue()
	if upTo == 0 {
		return
	}
	// A history.DeterministicSummarizer runs inline, as the step is recorded.
	if _, inline := r.a.cfg.History.Summarizer.(*history.DeterministicSummarizer); inline {
		if err := r.summarizeTo(ctx, upTo); err != nil {
			r.a.logSummaryError(ctx, r.threadID, err)
		}
		return
	}
	prev := r.thread.latest()
	part, err := r.stored(prev.Covers, upTo)
	if err != nil {
		r.a.logSummaryError(ctx, r.threadID, err)
		return
	}
	r.summarizeInBackground(ctx, prev, part, upTo)
}

// summarizing takes a finished background summary as the pending one,
// and reports whether one is still being made.
func (r *run) summarizing() bool {
	bg := r.bg
	if bg == nil {
		return false
	}
	select {
	case <-bg.done:
		r.adopt()
		return false
	default:
		return true
	}
}

// summarizeInBackground starts making the summary of the messages up to
// upTo from the previous one, prev, and part, the messages it does not
// cover: maybeSummarize adopts it once done.
func (r *run) summarizeInBackground(ctx context.Context, prev thread.Summary, part []thread.Message, upTo int) {
	bg := &background{done: make(chan struct{})}
	r.bg = bg
	sctx := context.WithoutCancel(ctx)
	go func() {
		defer close(bg.done)
		defer func() {
			if p := recover(); p != nil {
				bg.err = r.a.recovered(sctx, "summarizer", p)
			}
		}()
		start := time.Now()
		text, err := r.a.cfg.History.Summarizer.Summarize(sctx, prev.Text, part)
		bg.sum, bg.err, bg.took = &thread.Summary{Version: prev.Version + 1, Covers: upTo, Text: text}, err, time.Since(start)
	}()
}

// adopt takes the finished background summary as the pending one.
func (r *run) adopt() {
	bg := r.bg
	r.bg = nil
	if bg.err != nil {
		r.a.logSummaryError(context.Background(), r.threadID, bg.err)
		return
	}
	if bg.sum.Covers > r.thread.latest().Covers {
		r.thread.pending = bg.sum
		r.a.emit(context.Background(), Event{Kind: EventSummary, ThreadID: r.threadID, Step: r.res.Steps, Duration: bg.took})
	}
}

// flushSummary waits for a background summary when a run ends and
// stores it.
func (r *run) flushSummary(ctx context.Context) error {
	if r.bg == nil {
		return nil
	}
	sctx, cancel := r.saveContext(ctx)
	defer cancel()
	select {
	case <-r.bg.done:
		r.adopt()
	case <-sctx.Done():
		return nil
	}
	if r.thread.pending == nil {
		return nil
	}
	return r.checkpoint(sctx)
}

// window returns the messages of r.msgs the summary does not cover,
// first summarizing, at once, the oldest turns of a window that does not
// fit budget tokens (the current turn is kept).
func (r *run) window(ctx context.Context, budget int) ([]llms.MessageContent, error) {
	h := r.a.cfg.History
	if h.MaxTokens > 0 {
		budget = min(budget, h.MaxTokens)
	}
	from := r.thread.latest().Covers - r.base
	counts := r.est.counts(r.a.cfg.Counter, r.msgs)
	total := 0
	for _, n := range counts[from:] {
		total += n
	}
	if total <= budget {
		return r.msgs[from:], nil
	}
	starts := r.turnStarts(from)
	if len(starts) < 2 {
		return r.msgs[from:], nil
	}
	cut := turnsCut(counts, starts, from, total, budget)
	if !r.awaitBackground(ctx) {
		return r.msgs[from:], nil
	}
	if err := r.summarizeTo(ctx, r.base+cut); err != nil {
		// Without a summary the turns are not dropped: the projection
		// keeps the newest messages that fit.
		r.a.logSummaryError(ctx, r.threadID, err)
		return r.msgs[from:], nil
	}
	return r.msgs[r.thread.latest().Covers-r.base:], nil
}

// turnsCut returns where the window starts once whole turns are dropped,
// oldest first, until the rest fits budget or only the current turn is
// left. counts are the messages' token counts, starts the indexes at
// which turns start, from the first message in the window and total the
// tokens from it on.
func turnsCut(counts, starts []int, from, total, budget int) int {
	cut := starts[len(starts)-1]
	rest := total
	for i := from; i < cut; i++ {
		rest -= counts[i]
		if j, ok := slices.BinarySearch(starts, i+1); ok && rest <= budget {
			return starts[j]
		}
	}
	return cut
}

// awaitBackground waits for the summary being made in the background,
// if there is one, and adopts it. It reports false when ctx ended first.
func (r *run) awaitBackground(ctx context.Context) bool {
	if r.bg == nil {
		return true
	}
	select {
	case <-r.bg.done:
		r.adopt()
		return true
	case <-ctx.Done():
		return false
	}
}

// logSummaryError reports a failed summary.
func (a *Agent) logSummaryError(ctx context.Context, threadID string, err error) {
	a.emit(ctx, Event{Kind: EventSummary, ThreadID: threadID, Err: err})
}

// oneLine joins s's words with single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts s to n bytes at a rune boundary, marking the cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textcut.Prefix(s, n) + "…"
}
