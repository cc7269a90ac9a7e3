package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"

	"github.com/memlayer/memlayer/internal/textcut"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// LoadCheckpoint returns the stored thread, in the current version
// whatever version it was stored in: its head, its summary, its layer
// snapshots and the messages the summary does not cover (Messages, from
// message First). The snapshots are by layer ID, as layer.Stack.Snapshot
// gives them, for the agent's layers whose data is stored under another
// name (layer.Spec.StorageID) too. A thread that was never stored gives
// an error that is storage.ErrNotFound.
func (a *Agent) LoadCheckpoint(ctx context.Context, threadID string) (*thread.Checkpoint, error) {
	l, err := a.load(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if l == nil {
		return nil, fmt.Errorf("%w: thread %s: %w", ErrCheckpoint, storage.Quote(threadID), storage.ErrNotFound)
	}
	// Version 4 stores messages as they were written: the compacted ones
	// are returned compacted, as earlier versions stored them.
	c := l.Checkpoint
	if lo := max(l.Precompacted, c.First); !l.Legacy && c.Compacted > lo {
		msgs := slices.Clone(l.msgs)
		compactHistory(msgs[lo-c.First : c.Compacted-c.First])
		c.Messages = slices.Clone(c.Messages)
		for i := lo - c.First; i < c.Compacted-c.First; i++ {
			if c.Messages[i], err = storedMessage(msgs[i]); err != nil {
				return nil, fmt.Errorf("%w: thread %s: message %d: %w", ErrCheckpoint, storage.Quote(threadID), c.First+i, err)
			}
		}
	}
	out := *c
	out.Layers = snapshotByID(a.cfg.Layers, c.Layers)
	return &out, nil
}

// snapshotByID returns snap, a checkpoint's (see storedPart), with the
// part of each of layers stored under another name than its ID named by
// its ID. Other parts keep their names.
func snapshotByID(layers []layer.Layer, snap layer.Snapshot) layer.Snapshot {
	out := layer.Snapshot{Version: snap.Version, Layers: maps.Clone(snap.Layers)}
	for _, l := range layers {
		spec := l.Spec()
		if data, ok := snap.Layers[spec.StorageName()]; ok && spec.StorageName() != spec.ID {
			delete(out.Layers, spec.StorageName())
			out.Layers[spec.ID] = data
		}
	}
	return out
}

// threadState is a top-level run's stored thread: its writer, what the
// thread held when the run started, and what the run has written.
type threadState struct {
	w *thread.Writer
	// steps and usage of the thread's earlier runs.
	steps int
	usage Usage
	// compacted is the compaction watermark (Checkpoint.Compacted).
	compacted int
	// baseMsgs is how many messages the thread had when the run started
	// and saved how many the stored thread has; savedSteps is how many
	// of this run's steps it has.
	baseMsgs, saved, savedSteps int
	// summary is the committed summary; pending is one made since, which
	// the next write stores and commits.
	summary thread.Summary
	pending *thread.Summary
}

// resume continues a stored thread: the run starts from the loaded
// messages, compacted (see Config.KeepToolResults) from the watermark on
// up to the current turn (the last stored one when continuing without
// a new message).
func (r *run) resume(l *loaded, continuing bool) {
	th, c := r.thread, l.Checkpoint
	r.msgs, r.base, r.loadedStored = l.msgs, c.First, c.Messages
	th.w = thread.NewWriter(r.a.cfg.Store, r.threadID, l.Loaded)
	th.steps, th.usage, th.compacted, th.summary = c.Steps, c.Usage, c.Compacted, c.Summary
	th.saved = th.w.Saved()
	// Messages before pre are stored compacted already.
	pre := l.Precompacted
	if l.Legacy {
		// Nothing is in segments yet: the first write stores every
		// message, compacted as they were (the writer records them as
		// precompacted).
		pre = c.Compacted
	}
	replayable(r.msgs) // threads stored by earlier versions
	end := th.compacted
	if !r.a.cfg.KeepToolResults {
		end = c.Total
		if continuing {
			// The turn goes on (after a limit, say): its own messages
			// are not an earlier turn's.
			end = max(r.base+lastHuman(r.msgs), th.compacted)
		}
	}
	if lo := max(pre, r.base); end > lo {
		compactHistory(r.msgs[lo-r.base : end-r.base])
	}
	th.compacted = max(end, th.compacted)
}

// checkpoint stores the run's new messages and layer state with
// compare-and-swap on the head against the version read at the start of
// the run.
func (r *run) checkpoint(ctx context.Context) error {
	start := time.Now()
	step := max(r.res.Steps-1, 0)
	cctx, span := r.a.tel.child(ctx, spanCheckpoint, func() []attribute.KeyValue {
		return []attribute.KeyValue{attrThread.String(r.threadID), attrStep.Int(step)}
	})
	err := r.writeCheckpoint(cctx)
	end(span, err)
	r.a.emit(ctx, Event{Kind: EventCheckpoint, ThreadID: r.threadID, Step: step, Duration: time.Since(start), Err: err})
	return err
}

// writeCheckpoint writes the step; an error is a *CheckpointError.
func (r *run) writeCheckpoint(ctx context.Context) error {
	th := r.thread
	// Only the thread- and execution-scoped layers' state is kept with the
	// thread: restoreLayers never restores the others (their own records
	// are newer), so snapshotting them every step would be wasted work.
	if r.snapIDs == nil {
		r.snapIDs = keptIDs(r.stack)
	}
	snap := layer.Snapshot{Version: 1, Layers: map[string]json.RawMessage{}} // version 1 is layer.Snapshot's only one
	if len(r.snapIDs) > 0 {
		var err error
		if snap, err = r.stack.Snapshot(ctx, r.snapIDs...); err != nil {
			return r.checkpointError(fmt.Errorf("snapshot layers: %w", err))
		}
		snap = storedPart(r.stack, snap)
	}
	if err := r.writeThread(ctx, snap); err != nil {
		return r.checkpointError(r.conflictOrGone(ctx, err))
	}
	th.savedSteps = r.res.Steps
	return nil
}

// keptIDs returns the IDs of the stack's layers whose state is kept with
// the thread, never nil.
func keptIDs(st *layer.Stack) []string {
	ids := []string{}
	for _, spec := range specs(st) {
		if keptWithThread(spec) {
			ids = append(ids, spec.ID)
		}
	}
	return ids
}

// conflictOrGone counts a conflict of a failed thread write and returns
// the write's error: ErrCheckpointGone instead of a conflict when the
// head this run read or wrote is no longer there at all; any other
// conflict is another run's write.
func (r *run) conflictOrGone(ctx context.Context, err error) error {
	if !errors.Is(err, storage.ErrConflict) {
		return err
	}
	r.a.tel.conflicts.Add(ctx, 1)
	if !r.thread.w.HasHead() {
		return err
	}
	if _, gerr := r.a.cfg.Store.Get(ctx, storage.ThreadKey(r.threadID, thread.HeadName)); errors.Is(gerr, storage.ErrNotFound) {
		return ErrCheckpointGone
	}
	return err
}

// checkpointError is a failed checkpoint write, with what was saved.
func (r *run) checkpointError(err error) error {
	th := r.thread
	return &CheckpointError{ThreadID: r.threadID, SavedSteps: th.savedSteps, SavedMessages: max(th.saved-th.baseMsgs, 0), Err: err}
}

// restoreLayers restores thread- and execution-scoped layers from a
// checkpoint's snapshot. Resource and global layers are left as Init
// loaded them: other threads may have changed them since. A checkpoint
// written by an agent of another name is not restored into this one's
// layers (their IDs may mean other things there). A failure is reported
// and leaves the layers as Init loaded them.
func (a *Agent) restoreLayers(ctx context.Context, st *layer.Stack, c *thread.Checkpoint) {
	snap := c.Layers
	if c.Agent != "" && a.cfg.Name != "" && c.Agent != a.cfg.Name {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: not restoring layers from a checkpoint of another agent",
			slog.String("checkpoint_agent", c.Agent), slog.String("agent", a.cfg.Name))
		return
	}
	part := threadPart(st, snap)
	if len(part.Layers) == 0 {
		return
	}
	if err := st.Restore(ctx, part); err != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: restoring layers from checkpoint", slog.Any("error", err))
	}
}

// threadPart returns the part of snap, a checkpoint's, that st's layers
// kept with the thread have (see keptWithThread), by layer ID. A
// checkpoint names each layer's part by its storage name
// (layer.Spec.StorageName, see storedPart); a part under the layer's ID
// is taken when there is none under its storage name.
func threadPart(st *layer.Stack, snap layer.Snapshot) layer.Snapshot {
	part := layer.Snapshot{Version: snap.Version, Layers: map[string]json.RawMessage{}}
	for _, spec := range specs(st) {
		data, ok := snap.Layers[spec.StorageName()]
		if !ok {
			data, ok = snap.Layers[spec.ID]
		}
		if ok && keptWithThread(spec) {
			part.Layers[spec.ID] = data
		}
	}
	return part
}

// storedPart returns snap, a snapshot of st by layer ID, with each
// layer's part named by the layer's storage name
// (layer.Spec.StorageName), as checkpoints keep it: a renamed layer's
// part stays where its stored data is.
func storedPart(st *layer.Stack, snap layer.Snapshot) layer.Snapshot {
	out := layer.Snapshot{Version: snap.Version, Layers: make(map[string]json.RawMessage, len(snap.Layers))}
	for _, spec := range specs(st) {
		if data, ok := snap.Layers[spec.ID]; ok {
			out.Layers[spec.StorageName()] = data
		}
	}
	return out
}

// keptWithThread reports whether a layer's state is kept with the thread
// (a thread- or execution-scoped layer's).
func keptWithThread(spec layer.Spec) bool {
	return spec.Scope == "" || spec.Scope == layer.ScopeThread || spec.Scope == layer.ScopeExecution
}

// compactedPrefix starts the reference that replaces a compacted tool
// result. It is text for the model: compaction itself is tracked by
// Checkpoint.Compacted (version 1 recognised it by this text).
const compactedPrefix = "[compacted] "

// maxPreview is how much of a compacted result the reference keeps.
const maxPreview = 120

// maxKeptArgs is the longest tool-call arguments compaction keeps as
// they are.
const maxKeptArgs = 256

// compactHistory compacts messages of earlier turns: the content of every
// tool result becomes a one-line reference (the tool, the size and the
// start of the result), and tool-call arguments longer than maxKeptArgs
// become {"_compacted":"<n> bytes"}, a JSON object, because the arguments
// are replayed to providers, which refuse anything else. Parts are
// replaced, never changed in place.
func compactHistory(msgs []llms.MessageContent) {
	for i := range msgs {
		var parts []llms.ContentPart
		set := func(j int, p llms.ContentPart) {
			if parts == nil {
				parts = slices.Clone(msgs[i].Parts)
				msgs[i].Parts = parts
			}
			parts[j] = p
		}
		for j, p := range msgs[i].Parts {
			switch p := p.(type) {
			case llms.ToolCallResponse:
				p.Content = compactReference(p.Name, p.Content)
				set(j, p)
			case llms.ToolCall:
				if p.FunctionCall == nil || len(p.FunctionCall.Arguments) <= maxKeptArgs {
					continue
				}
				fc := *p.FunctionCall
				fc.Arguments = `{"_compacted":"` + strconv.Itoa(len(fc.Arguments)) + ` bytes"}`
				p.FunctionCall = &fc
				set(j, p)
			}
		}
	}
}

// compactReference is the one-line stand-in for an old tool result.
func compactReference(name, content string) string {
	preview := clip(oneLine(content), maxPreview)
	return compactedPrefix + "earlier result of " + name + " (" + strconv.Itoa(len(content)) + " bytes): " + preview
}

// capResult returns a tool result as the history keeps it: whole up to
// limit bytes; a longer one cut to its first limit bytes (at a UTF-8
// boundary) and followed by a note giving its size and the ID of its
// call, by which the whole result can be read back (the episodic
// layer keeps it). A negative limit keeps it whole.
func capResult(s string, limit int, callID string) string {
	if limit < 0 || len(s) <= limit {
		return s
	}
	cut := len(textcut.Prefix(s, limit))
	return s[:cut] + "\n[agentloop: result truncated: " + strconv.Itoa(len(s)) + " bytes, of which the first " + strconv.Itoa(cut) + " are shown" + cutNote + callID + "]"
}

// cutNote ends a result capResult cut, before its call's ID and "]".
const cutNote = "; full result: call "
