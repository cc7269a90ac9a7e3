package agentloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// CheckpointVersion is the format version of the checkpoints this build
// writes. Checkpoints of a newer version are refused; older ones load.
//
// Version 2 added Compacted. A version-1 checkpoint marked a compacted
// tool result only by its text ("[compacted] "); when one loads, its
// messages up to the last one holding such a result count as compacted,
// which is what version 1 had done, and the next checkpoint is written
// as version 2.
const CheckpointVersion = 2

// CheckpointName is the name of a thread's checkpoint under
// storage.ThreadKey.
const CheckpointName = "checkpoint"

// Checkpoint is what is stored for a thread after every step, under
// storage.ThreadKey(threadID, CheckpointName), as JSON.
type Checkpoint struct {
	Version    int    `json:"version"`
	Agent      string `json:"agent,omitempty"`
	ThreadID   string `json:"thread_id"`
	ResourceID string `json:"resource_id,omitempty"`
	// Messages is the thread's history, without system prompts.
	Messages []llms.MessageContent `json:"messages"`
	// Layers is the layers' state after the step.
	Layers layer.Snapshot `json:"layers"`
	// Steps and Usage add up every run of the thread.
	Steps     int       `json:"steps"`
	Usage     Usage     `json:"usage"`
	UpdatedAt time.Time `json:"updated_at"`
	// Compacted is how many of the Messages, from the first, have been
	// compacted (see Config.KeepToolResults): a run compacts only the
	// messages after them. Compaction is recorded here and never read
	// from a message's text, so a tool result that looks like a
	// reference is still compacted.
	Compacted int `json:"compacted,omitempty"`
}

// LoadCheckpoint returns the stored checkpoint of a thread. A thread that
// was never checkpointed gives an error that is storage.ErrNotFound.
func (a *Agent) LoadCheckpoint(ctx context.Context, threadID string) (*Checkpoint, error) {
	c, _, err := a.loadCheckpoint(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: thread %q: %w", ErrCheckpoint, threadID, storage.ErrNotFound)
	}
	return c, nil
}

// loadCheckpoint reads a thread's checkpoint and its version; a missing
// checkpoint is (nil, NoVersion, nil).
func (a *Agent) loadCheckpoint(ctx context.Context, threadID string) (*Checkpoint, int64, error) {
	it, err := a.cfg.Store.Get(ctx, storage.ThreadKey(threadID, CheckpointName))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, storage.NoVersion, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%w: load thread %q: %w", ErrCheckpoint, threadID, err)
	}
	var c Checkpoint
	if err := json.Unmarshal(it.Value, &c); err != nil {
		return nil, 0, fmt.Errorf("%w: thread %q: malformed: %w", ErrCheckpoint, threadID, err)
	}
	if c.Version < 1 || c.Version > CheckpointVersion {
		return nil, 0, fmt.Errorf("%w: thread %q: version %d, this build reads up to %d", ErrCheckpoint, threadID, c.Version, CheckpointVersion)
	}
	if c.Version == 1 {
		c.Compacted = legacyCompacted(c.Messages)
	}
	c.Compacted = min(max(c.Compacted, 0), len(c.Messages))
	return &c, it.Version, nil
}

// legacyCompacted is the compaction watermark of a version-1 checkpoint:
// the messages up to the last one holding a tool result that starts with
// the marker version 1 wrote. Version 1 compacted every earlier message
// when a run started, so those were all compacted.
func legacyCompacted(msgs []llms.MessageContent) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, p := range msgs[i].Parts {
			if tr, ok := p.(llms.ToolCallResponse); ok && strings.HasPrefix(tr.Content, compactedPrefix) {
				return i + 1
			}
		}
	}
	return 0
}

// checkpoint stores the run's messages and layer state with
// compare-and-swap against the version read at the start of the run.
func (r *run) checkpoint(ctx context.Context) error {
	a := r.a
	start := time.Now()
	err := r.writeCheckpoint(ctx)
	a.emit(ctx, Event{Kind: EventCheckpoint, ThreadID: r.threadID, Step: max(r.res.Steps-1, 0), Duration: time.Since(start), Err: err})
	return err
}

// writeCheckpoint writes the checkpoint; an error is a *CheckpointError.
func (r *run) writeCheckpoint(ctx context.Context) error {
	snap, err := r.stack.Snapshot(ctx)
	if err != nil {
		return r.checkpointError(fmt.Errorf("snapshot layers: %w", err))
	}
	data, err := r.encodeCheckpoint(snap)
	if err != nil {
		return r.checkpointError(fmt.Errorf("encode: %w", err))
	}
	if r.ckptKey == "" {
		r.ckptKey = storage.ThreadKey(r.threadID, CheckpointName)
	}
	v, err := r.a.cfg.Store.Put(ctx, r.ckptKey, data, r.ckptVer)
	if err != nil {
		// A conflict is another run's write, unless the checkpoint this
		// run read or wrote is no longer there at all.
		if errors.Is(err, storage.ErrConflict) && r.ckptVer != storage.NoVersion {
			if _, gerr := r.a.cfg.Store.Get(ctx, r.ckptKey); errors.Is(gerr, storage.ErrNotFound) {
				err = ErrCheckpointGone
			}
		}
		return r.checkpointError(err)
	}
	r.ckptVer = v
	r.savedMsgs, r.savedSteps = len(r.msgs), r.res.Steps
	return nil
}

// checkpointError is a failed checkpoint write, with what was saved.
func (r *run) checkpointError(err error) error {
	return &CheckpointError{ThreadID: r.threadID, SavedSteps: r.savedSteps, SavedMessages: max(r.savedMsgs-r.baseMsgs, 0), Err: err}
}

// encodeCheckpoint returns the JSON of the run's [Checkpoint]: the same
// JSON value json.Marshal would write (the bytes differ only in key
// order, string escaping and the whitespace inside layer snapshots),
// built in a fraction of the time, because it is written after every
// step.
//
// The messages come first: they never change once in the history, so
// each is encoded once per run, and the buffer that holds them
// (r.ckpt[:r.ckptMsgEnd]) is kept and extended by the next step rather
// than rebuilt; a step costs what it adds, not the whole history. The
// returned slice is that buffer: it is valid until the next call (stores
// do not retain what they are given). The layers' snapshots, already
// JSON, are checked (only when they changed since the last check) and
// copied rather than re-compacted, and the small fields are written by
// hand.
func (r *run) encodeCheckpoint(snap layer.Snapshot) ([]byte, error) {
	b := r.ckpt[:r.ckptMsgEnd]
	if len(b) == 0 {
		b = append(b, `{"messages":[`...)
	}
	for i := r.ckptMsgs; i < len(r.msgs); i++ {
		mb := b
		if i > 0 {
			mb = append(mb, ',')
		}
		mb, err := appendMessage(mb, r.msgs[i])
		if err != nil {
			r.ckpt = b
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		b = mb
		r.ckptMsgs, r.ckptMsgEnd = i+1, len(b)
	}
	// From here on r.ckpt must hold the messages encoded so far, even if
	// a layer's snapshot is refused below.
	r.ckpt = b
	b = append(b, `],"layers":{"version":`...)
	b = strconv.AppendInt(b, int64(snap.Version), 10)
	if snap.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, snap.Name)
	}
	b = append(b, `,"layers":{`...)
	if !sameKeys(r.snapIDs, snap.Layers) {
		r.snapIDs = r.snapIDs[:0]
		for id := range snap.Layers {
			r.snapIDs = append(r.snapIDs, id)
		}
		slices.Sort(r.snapIDs)
	}
	for i, id := range r.snapIDs {
		raw := snap.Layers[id]
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		if last, ok := r.snapValid[id]; !ok || !bytes.Equal(last, raw) {
			if !json.Valid(raw) {
				return nil, fmt.Errorf("layer %s: snapshot is not valid JSON", id)
			}
			if r.snapValid == nil {
				r.snapValid = make(map[string][]byte, len(snap.Layers))
			}
			r.snapValid[id] = append(last[:0], raw...)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, id)
		b = append(b, ':')
		b = append(b, raw...)
	}
	b = append(b, `}},"version":`...)
	b = strconv.AppendInt(b, CheckpointVersion, 10)
	if r.a.cfg.Name != "" {
		b = append(b, `,"agent":`...)
		b = appendString(b, r.a.cfg.Name)
	}
	b = append(b, `,"thread_id":`...)
	b = appendString(b, r.threadID)
	if r.resourceID != "" {
		b = append(b, `,"resource_id":`...)
		b = appendString(b, r.resourceID)
	}
	b = append(b, `,"steps":`...)
	b = strconv.AppendInt(b, int64(r.ckptBase.Steps+r.res.Steps), 10)
	b = append(b, `,"usage":`...)
	b = appendUsage(b, r.ckptBase.Usage.Add(r.res.Usage))
	if r.compacted > 0 {
		b = append(b, `,"compacted":`...)
		b = strconv.AppendInt(b, int64(r.compacted), 10)
	}
	b = append(b, `,"updated_at":"`...)
	b = time.Now().UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `"}`...)
	r.ckpt = b
	return b, nil
}

// sameKeys reports whether ids (without duplicates) are exactly the keys
// of m.
func sameKeys(ids []string, m map[string]json.RawMessage) bool {
	if len(ids) != len(m) {
		return false
	}
	for _, id := range ids {
		if _, ok := m[id]; !ok {
			return false
		}
	}
	return true
}

// appendUsage appends u as encoding/json writes it.
func appendUsage(b []byte, u Usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	if u.Estimated {
		b = append(b, `,"estimated":true`...)
	}
	return append(b, '}')
}

// restoreLayers restores thread- and execution-scoped layers from a
// checkpoint's snapshot. Resource and global layers are left as Init
// loaded them: other threads may have changed them since. A failure is
// reported and leaves the layers as Init loaded them.
func (a *Agent) restoreLayers(ctx context.Context, st *layer.Stack, snap layer.Snapshot) {
	part := layer.Snapshot{Version: snap.Version, Name: snap.Name, Layers: map[string]json.RawMessage{}}
	for _, spec := range st.Specs() {
		data, ok := snap.Layers[spec.ID]
		if !ok {
			continue
		}
		switch spec.EffectiveScope() {
		case layer.ScopeThread, layer.ScopeExecution:
			part.Layers[spec.ID] = data
		}
	}
	if len(part.Layers) == 0 {
		return
	}
	if err := st.Restore(ctx, part); err != nil {
		a.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "agentloop: restoring layers from checkpoint", slog.Any("error", err))
	}
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
	preview := strings.Join(strings.Fields(content), " ")
	if len(preview) > maxPreview {
		cut := maxPreview
		for cut > 0 && preview[cut]&0xC0 == 0x80 { // do not split a rune
			cut--
		}
		preview = preview[:cut] + "…"
	}
	return compactedPrefix + "earlier result of " + name + " (" + strconv.Itoa(len(content)) + " bytes): " + preview
}

// capResult returns a tool result as the history keeps it: whole up to
// limit bytes; a longer one cut to its first limit bytes (at a UTF-8
// boundary) and followed by a note giving its size. A negative limit
// keeps it whole.
func capResult(s string, limit int) string {
	if limit < 0 || len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "\n[agentloop: result truncated: " + strconv.Itoa(len(s)) + " bytes, of which the first " + strconv.Itoa(cut) + " are shown]"
}
