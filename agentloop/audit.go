package agentloop

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/redact"
	"go.opentelemetry.io/otel/attribute"
)

// AuditConfig says what of a thread's memory operations is kept. By
// default every run records its memory operations — each layer's recall
// (with scored assembly, every candidate with its score and whether it
// was packed), the route of each write and its reason, the writes (and
// how many entries each layer's Store kept, where the layer counts them:
// entity memory's extractions, episodic memory's episodes), the facts
// superseded and forgotten, the entries a layer evicted, the values
// redacted — and commits them, as it ends, as one turn of the thread's
// audit (package audit), stored with the thread through Config.Store.
// Result.Audit is the committed turn, Result.Writes what the run wrote,
// [Agent.Audit] reads a thread's turns and [Agent.Commit] commits a turn
// for code that uses the layers outside the loop.
type AuditConfig struct {
	// Disabled records no recall, eviction, redaction or count of what
	// the layers' Store kept, and commits nothing; Result.Writes still
	// lists the run's routed writes, supersedes and forgets.
	Disabled bool
	// Keep is how many turns a thread keeps, the newest; zero is
	// audit.DefaultKeep.
	Keep int
}

// Audit returns the audit turns thread threadID keeps, oldest first (see
// [AuditConfig] and package audit); none for a thread without any.
func (a *Agent) Audit(ctx context.Context, threadID string) ([]audit.Turn, error) {
	turns, err := a.auditLog.Turns(ctx, threadID)
	if err != nil {
		return nil, fmt.Errorf("agentloop: %w", err)
	}
	return turns, nil
}

// Commit stores entries as the next audit turn of thread threadID, with
// the agent's store and retention, and returns the turn: for code that
// recalls and stores through the layers outside [Agent.Run] (a
// layer.Stack of its own, chainmemory's Memory), whose memory
// operations a run would otherwise not see. The entries' texts and
// reasons are masked as the run masks what it stores (see
// [redact.Policy]). It works with the audit disabled too.
func (a *Agent) Commit(ctx context.Context, threadID string, entries []audit.Entry) (audit.Turn, error) {
	t, err := a.auditLog.Commit(ctx, threadID, a.maskAudit(entries))
	if err != nil {
		return audit.Turn{}, fmt.Errorf("agentloop: %w", err)
	}
	return t, nil
}

// commitAudit ends a top-level run's audit: Result.Writes lists what the
// run wrote and, unless the audit is disabled, its entries are committed
// as a turn of the thread (Result.Audit). A failed commit does not fail
// the run: it is reported as an EventAudit with its error.
func (r *run) commitAudit(ctx context.Context) {
	entries := r.a.maskAudit(r.tree.audit.Entries())
	r.res.Commit = audit.CommitOf(entries)
	for _, e := range entries {
		if e.IsWrite() {
			r.res.Writes = append(r.res.Writes, e)
		}
	}
	a := r.a
	if a.cfg.Audit.Disabled {
		return
	}
	sctx, cancel := r.saveContext(ctx)
	defer cancel()
	start := time.Now()
	sctx, span := a.tel.child(sctx, spanAudit, func() []attribute.KeyValue {
		return []attribute.KeyValue{attrThread.String(r.threadID), attrEntries.Int(len(entries))}
	})
	var t audit.Turn
	var err error
	defer func() { end(span, err) }()
	// A thread without a head this run read or wrote (a run that saved no
	// step, a spawn from code) records its owner first, so that an erase
	// of the resource finds the audit.
	if r.thread == nil || !r.thread.w.HasHead() {
		err = claimOwner(sctx, a.cfg.Store, r.threadID, r.resourceID)
	}
	if err == nil {
		t, err = a.auditLog.Commit(sctx, r.threadID, entries)
	}
	if err == nil {
		r.res.Audit = &t
	}
	a.emit(ctx, Event{Kind: EventAudit, ThreadID: r.threadID, Step: r.res.Steps, Duration: time.Since(start), Err: err})
}

// auditRecalls records the recall of each layer the step's prompt shows a
// block of, except those scored assembly recorded (with candidates).
func (r *run) auditRecalls(step int) {
	if !r.tree.audit.On() {
		return
	}
	for _, b := range r.res.Budgets {
		if b.Used > 0 && !b.Assembled {
			r.tree.audit.Add(audit.Entry{Op: audit.OpRecall, Step: step, Depth: r.depth, Layer: b.Layer, Tokens: b.Used})
		}
	}
}

// auditAssembly records a scored assembly: for each layer in it, its
// candidates with their scores (as packed, or before redundancy) and
// whether they were packed, and the tokens of its block.
func (r *run) auditAssembly(step int, ids []string, cands []layer.Candidate, sel []prompt.Selected, sc prompt.Scoring, tokens map[string]int) {
	if !r.tree.audit.On() {
		return
	}
	type key struct{ layer, key string }
	packed := make(map[key]float64, len(sel))
	for _, s := range sel {
		packed[key{s.Layer, s.Key}] = s.Score
	}
	by := map[string][]audit.Candidate{}
	for _, c := range cands {
		ac := audit.Candidate{Layer: c.Layer, Key: c.Key, Tokens: c.Tokens}
		if s, ok := packed[key{c.Layer, c.Key}]; ok {
			ac.Score, ac.Packed = s, true
		} else {
			ac.Score = sc.Score(c)
		}
		by[c.Layer] = append(by[c.Layer], ac)
	}
	for _, id := range ids {
		if len(by[id]) == 0 {
			continue
		}
		e := audit.Entry{Op: audit.OpRecall, Step: step, Depth: r.depth, Layer: id, Tokens: tokens[id], Candidates: by[id]}
		if id == history.SummaryLayerID {
			// The summary offers every entity and line it holds, every
			// step, and usually all of them are packed: its entry
			// counts them and lists only those left out.
			e.Count = len(e.Candidates)
			e.Candidates = slices.DeleteFunc(e.Candidates, func(c audit.Candidate) bool { return c.Packed })
		}
		r.tree.audit.Add(e)
	}
}

// watchWrites, with the audit on, reads the counts of the layers that
// keep storeCounters, before the run's first step.
func (r *run) watchWrites() {
	if r.tree.audit.On() {
		r.evictors = writepath.WatchCounts(r.stack)
	}
}

// store hands the step to the layers' Store; with the audit on, it
// records what the layers that count their writes in their Metrics
// wrote in the step, its tools' calls included (see storeCounters).
func (r *run) store(ctx context.Context, t layer.Turn) {
	_ = r.stack.Store(ctx, t) // failures are reported by the stack
	if r.tree.audit.On() {
		r.evictors.Record(r.tree.audit, t.Step, r.depth)
	}
	r.takeReported(ctx, false)
}

// takeReported records what the layers that write off the step (see
// writepath.Reporter) did since the last call; with flush, at the end of
// the run, it first waits for their work, within the run's save context.
func (r *run) takeReported(ctx context.Context, flush bool) {
	if r.reporters == nil {
		r.reporters = writepath.Reporters(r.stack)
	}
	if len(r.reporters) == 0 {
		return
	}
	if flush {
		var cancel context.CancelFunc
		ctx, cancel = r.saveContext(ctx)
		defer cancel()
	}
	if err := writepath.TakeReported(ctx, r.tree.audit, r.reporters, r.depth, flush); err != nil {
		r.a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: a layer's work off the step did not finish", slog.Any("error", err))
	}
}

// auditRedactions records, by kind, what the step masked that earlier
// steps had not: before and now are what the run had masked before the
// step and has masked so far.
func (r *run) auditRedactions(step int, before, now map[redact.Kind]int) {
	if r.tree.audit.On() {
		writepath.RecordRedactions(r.tree.audit, step, r.depth, before, now)
	}
}

// maskAudit returns entries with their texts and reasons masked by the
// agent's redactor (the updates of a layer whose masking
// redact.Policy.Layers turns off are recorded as the model sent them;
// everything else was masked already, and stays as it is).
func (a *Agent) maskAudit(entries []audit.Entry) []audit.Entry { return a.redact.Audit(entries) }
