package semanticmemory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/internal/textcut"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
)

// ByExtractor is the Source.By of the fact versions model-based
// consolidation writes (see [Consolidator]).
const ByExtractor = "extractor"

// Defaults of a [Consolidator].
const (
	// DefaultSimilar is how many stored facts each proposed fact is
	// compared with when Consolidator.Similar is 0.
	DefaultSimilar = 4
	// DefaultMaxProposed caps the facts one turn proposes when
	// Consolidator.MaxProposed is 0.
	DefaultMaxProposed = 8
	// DefaultMaxQueue caps the turns waiting for consolidation when
	// Consolidator.MaxQueue is 0.
	DefaultMaxQueue = 64
	// DefaultMaxTurnBytes caps the text of a turn shown to the model
	// when Consolidator.MaxTurnBytes is 0.
	DefaultMaxTurnBytes = 8000
)

// maxAnswerBytes is the longest model answer consolidation reads; a
// longer one is refused whole.
const maxAnswerBytes = 64 << 10

// ErrModelAnswer means the consolidation model's answer was unusable: not
// the JSON asked for, too long, or naming a fact it was not shown.
var ErrModelAnswer = errors.New("semanticmemory: unusable model answer")

// Consolidator extracts facts from each turn with a langchaingo model
// and reconciles them with the stored facts. Set Config.Consolidate to
// use it; nil leaves the layer as it is.
//
// When a turn ends (a step without tool calls), the layer's Store queues
// its user message and answer, and returns. A goroutine of the run then
// asks the model for the durable facts the turn states. For each fact,
// the layer searches the live facts most like it, and the model decides
// one operation against them:
//   - add: keep it as a new fact;
//   - update: write it as the next version of one of them;
//   - delete: forget one of them, which it shows to be no longer true
//     (the versions stay readable through [Layer.Versions]);
//   - none: it is known already.
//
// The model sees the stored facts by short handles ("m1", "m2" ...) that
// the layer maps back to this run's facts, never by their IDs: a decision
// can only touch a fact shown for it, which is a fact of the run's scope.
// The text a decision writes is masked as the memorize tool's arguments
// are (layer.Env.Redact) and gated by Gate against the facts Candidates
// offers for it. Each operation is recorded for the audit (see
// [Layer.AuditEntries]). An answer that is not the JSON asked for, a
// decision naming a handle it was not shown, or a text the layer refuses
// is skipped, logged and recorded as refused; the facts stored are left
// as they were. [Layer.Close] and [Layer.Flush] wait for the queue.
type Consolidator struct {
	// Model proposes the facts and decides the operations. Required.
	Model llms.Model
	// Gate admits the text an add or an update writes, as an agent's
	// gating router admits its memorize tool's writes: give the agent's
	// Config.Router when it gates, so that both admit alike. Nil is
	// route.Gate{}, the default thresholds.
	Gate route.Admitter
	// Similar is how many stored facts each proposed fact is compared
	// with. Zero means DefaultSimilar.
	Similar int
	// MaxProposed caps the facts one turn proposes; the rest are skipped.
	// Zero means DefaultMaxProposed.
	MaxProposed int
	// MaxQueue caps the turns waiting; a turn beyond it is not
	// consolidated, and is logged and recorded as refused. Zero means
	// DefaultMaxQueue.
	MaxQueue int
	// MaxTurnBytes caps the text of a turn shown to the model; a longer
	// one is cut. Zero means DefaultMaxTurnBytes.
	MaxTurnBytes int
}

// withDefaults returns c with its zero fields set, or an error wrapping
// ErrInvalidConfig.
func (c Consolidator) withDefaults() (Consolidator, error) {
	switch {
	case c.Model == nil:
		return c, fmt.Errorf("%w: Consolidate has no Model", ErrInvalidConfig)
	case c.Similar < 0 || c.MaxProposed < 0 || c.MaxQueue < 0 || c.MaxTurnBytes < 0:
		return c, fmt.Errorf("%w: Consolidate: Similar, MaxProposed, MaxQueue and MaxTurnBytes must not be negative", ErrInvalidConfig)
	}
	c.Similar = cmp.Or(c.Similar, DefaultSimilar)
	c.MaxProposed = cmp.Or(c.MaxProposed, DefaultMaxProposed)
	c.MaxQueue = cmp.Or(c.MaxQueue, DefaultMaxQueue)
	c.MaxTurnBytes = cmp.Or(c.MaxTurnBytes, DefaultMaxTurnBytes)
	if c.Gate == nil {
		c.Gate = route.Gate{}
	}
	return c, nil
}

// maxReported caps the audit entries a run's consolidation holds until
// they are taken (see Layer.AuditEntries); older ones are dropped.
const maxReported = 4096

// consolidator is a run's consolidation: its queue of turns, the
// goroutine working through it, and the audit entries it made.
type consolidator struct {
	c      Consolidator
	l      *Layer // the bound layer
	redact func(layerID, text string) string

	mu      sync.Mutex
	queue   []layer.Turn
	done    chan struct{} // closed when the goroutine stops; nil when none runs
	ctx     context.Context
	cancel  context.CancelFunc
	entries []audit.Entry
}

// newConsolidator returns l's consolidation, or nil when c is nil.
func newConsolidator(c *Consolidator, l *Layer, env layer.Env) *consolidator {
	if c == nil {
		return nil
	}
	return &consolidator{c: *c, l: l, redact: env.Redact}
}

// enqueue queues the turn t ends for consolidation, starting the
// goroutine when none runs. A step with tool calls ends no turn.
func (k *consolidator) enqueue(t layer.Turn) {
	if k == nil || len(t.ToolCalls) > 0 || strings.TrimSpace(t.Query+t.Response) == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.queue) >= k.c.MaxQueue {
		k.l.log.Logger.Warn("semanticmemory: consolidation queue full; a turn is not consolidated",
			slog.String("layer", k.l.cfg.ID), slog.Int("step", t.Step))
		k.record(audit.Entry{Op: audit.OpRoute, Step: t.Step, Layer: k.l.cfg.ID, Source: k.source(t.Step).String(), Refused: true,
			Reason: fmt.Sprintf("the consolidation queue is full (%d turns): the turn is not consolidated", k.c.MaxQueue)})
		return
	}
	k.queue = append(k.queue, t)
	if k.done != nil {
		return
	}
	if k.ctx == nil {
		k.ctx, k.cancel = context.WithCancel(context.Background())
	}
	k.done = make(chan struct{})
	go k.run(k.ctx, k.done)
}

// run consolidates the queued turns until the queue is empty.
func (k *consolidator) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	for {
		k.mu.Lock()
		if len(k.queue) == 0 {
			k.done = nil
			k.mu.Unlock()
			return
		}
		t := k.queue[0]
		k.queue = k.queue[1:]
		k.mu.Unlock()
		k.turn(ctx, t)
	}
}

// flush waits until the queue is consolidated. When ctx ends first, it
// stops the consolidation under way and returns ctx's error; the turns
// still queued are dropped.
func (k *consolidator) flush(ctx context.Context) error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	done := k.done
	k.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		k.mu.Lock()
		k.queue = nil
		k.cancel()
		k.ctx = nil
		k.mu.Unlock()
		return fmt.Errorf("consolidation stopped: %w", ctx.Err())
	}
}

// report records entries for the audit.
func (k *consolidator) report(entries ...audit.Entry) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.record(entries...)
}

// record adds entries to those reported, with k.mu held.
func (k *consolidator) record(entries ...audit.Entry) {
	k.entries = append(k.entries, entries...)
	if n := len(k.entries) - maxReported; n > 0 {
		k.entries = append(k.entries[:0], k.entries[n:]...)
	}
}

// take returns the entries recorded since the last call.
func (k *consolidator) take() []audit.Entry {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.entries
	k.entries = nil
	return out
}

// refuse logs and records what consolidation of the turn of step could
// not do, and why.
func (k *consolidator) refuse(ctx context.Context, step int, text string, err error) {
	k.l.log.Logger.LogAttrs(ctx, slog.LevelWarn, "semanticmemory: consolidation skipped", slog.String("layer", k.l.cfg.ID),
		slog.Int("step", step), slog.Any("error", err))
	k.report(audit.Entry{Op: audit.OpRoute, Step: step, Layer: k.l.cfg.ID, Text: textcut.Prefix(text, audit.MaxTextBytes),
		Source: k.source(step).String(), Refused: true, Reason: err.Error()})
}

// source is the Source of what consolidation writes in step.
func (k *consolidator) source(step int) Source {
	return Source{By: ByExtractor, Step: step}
}

// mask masks text as the layer's stored text is masked.
func (k *consolidator) mask(text string) string {
	if k.redact == nil {
		return text
	}
	return k.redact(k.l.cfg.ID, text)
}

// Flush waits until the turns queued for model-based consolidation (see
// [Consolidator]) are consolidated. When ctx ends first, it stops the
// consolidation under way, drops the turns still queued, and returns an
// error wrapping ctx's. Without Config.Consolidate it returns nil at
// once. On the template it fails with an error wrapping
// layer.ErrTemplate.
func (l *Layer) Flush(ctx context.Context) error {
	if err := l.unbound("Flush"); err != nil {
		return err
	}
	if err := l.cons.flush(ctx); err != nil {
		return fmt.Errorf("semanticmemory: flush: %w", err)
	}
	return nil
}

// AuditEntries returns what model-based consolidation (see
// [Consolidator]) did since the last call, for the run's audit: a write
// (and a supersede, for an update) or a forget for each operation
// applied, and a refused route for each one skipped, with why. Steps
// are those of the turns consolidated; the caller sets Depth. Without
// Config.Consolidate it returns nil.
func (l *Layer) AuditEntries() []audit.Entry { return l.cons.take() }
