package agentloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
// writes. Checkpoints of a newer version are refused; older ones load,
// and the next checkpoint of their thread is written in this version.
//
// Version 1 stored each message as langchaingo (v0.1.14) encoded an
// llms.MessageContent. Version 2 added Compacted; a version-1 checkpoint
// marked a compacted tool result only by its text ("[compacted] "), so
// when one loads, its messages up to the last one holding such a result
// count as compacted, which is what version 1 had done. Version 3 stores
// each message as a [StoredMessage], memlayer's own record.
const CheckpointVersion = 3

// CheckpointName is the name of a thread's checkpoint under
// storage.ThreadKey.
const CheckpointName = "checkpoint"

// Checkpoint is what is stored for a thread after every step, under
// storage.ThreadKey(threadID, CheckpointName), as its JSON.
type Checkpoint struct {
	// Messages is the thread's history, without system prompts.
	Messages   []StoredMessage `json:"messages,omitempty"`
	Version    int             `json:"version"`
	Agent      string          `json:"agent,omitempty"`
	ThreadID   string          `json:"thread_id"`
	ResourceID string          `json:"resource_id,omitempty"`
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

// LoadCheckpoint returns the stored checkpoint of a thread, in the
// current version whatever version it was stored in. A thread that was
// never checkpointed gives an error that is storage.ErrNotFound.
func (a *Agent) LoadCheckpoint(ctx context.Context, threadID string) (*Checkpoint, error) {
	c, _, _, err := a.loadCheckpoint(ctx, threadID)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, fmt.Errorf("%w: thread %s: %w", ErrCheckpoint, storage.Quote(threadID), storage.ErrNotFound)
	}
	return c, nil
}

// loadCheckpoint reads a thread's checkpoint, its messages as
// langchaingo's and its version; a missing checkpoint is (nil, nil,
// NoVersion, nil).
func (a *Agent) loadCheckpoint(ctx context.Context, threadID string) (*Checkpoint, []llms.MessageContent, int64, error) {
	it, err := a.cfg.Store.Get(ctx, storage.ThreadKey(threadID, CheckpointName))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, storage.NoVersion, nil
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%w: load thread %s: %w", ErrCheckpoint, storage.Quote(threadID), err)
	}
	c, msgs, err := decodeCheckpoint(it.Value)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%w: thread %s: %w", ErrCheckpoint, storage.Quote(threadID), err)
	}
	return c, msgs, it.Version, nil
}

// decodeCheckpoint decodes a checkpoint of any version into the current
// one, and its messages as langchaingo's.
func decodeCheckpoint(data []byte) (*Checkpoint, []llms.MessageContent, error) {
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, nil, fmt.Errorf("malformed: %w", err)
	}
	if c.Version < 1 || c.Version > CheckpointVersion {
		return nil, nil, fmt.Errorf("version %d, this build reads up to %d", c.Version, CheckpointVersion)
	}
	if c.Version < 3 {
		var old struct {
			Messages []legacyMessage `json:"messages"`
		}
		if err := json.Unmarshal(data, &old); err != nil {
			return nil, nil, fmt.Errorf("malformed: %w", err)
		}
		c.Messages = make([]StoredMessage, len(old.Messages))
		for i, m := range old.Messages {
			var err error
			if c.Messages[i], err = m.stored(); err != nil {
				return nil, nil, fmt.Errorf("version %d, message %d: %w", c.Version, i, err)
			}
		}
	}
	if c.Version == 1 {
		c.Compacted = legacyCompacted(c.Messages)
	}
	c.Version = CheckpointVersion
	c.Compacted = min(max(c.Compacted, 0), len(c.Messages))
	msgs := make([]llms.MessageContent, len(c.Messages))
	for i, m := range c.Messages {
		var err error
		if msgs[i], err = m.content(); err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return &c, msgs, nil
}

// legacyCompacted is the compaction watermark of a version-1 checkpoint:
// the messages up to the last one holding a tool result that starts with
// the marker version 1 wrote. Version 1 compacted every earlier message
// when a run started, so those were all compacted.
func legacyCompacted(msgs []StoredMessage) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, r := range msgs[i].ToolResults {
			if strings.HasPrefix(r.Content, compactedPrefix) {
				return i + 1
			}
		}
	}
	return 0
}

// thread is a top-level run's stored thread: where its checkpoint is,
// what the stored one holds, and the JSON the next one extends.
type thread struct {
	key     string // storage.ThreadKey(threadID, CheckpointName)
	version int64  // of the stored checkpoint, for compare-and-swap
	// steps and usage of the thread's earlier runs.
	steps int
	usage Usage
	// compacted is the compaction watermark (Checkpoint.Compacted).
	compacted int
	// baseMsgs is how many messages came from the checkpoint; the last
	// successful checkpoint holds msgs[:savedMsgs] and savedSteps of
	// this run's steps.
	baseMsgs, savedMsgs, savedSteps int
	// json is the last checkpoint's JSON, which the next one extends
	// (see encodeCheckpoint): json[:msgsEnd] is the JSON up to and
	// including msgs[:encoded].
	json             []byte
	msgsEnd, encoded int
}

// checkpoint stores the run's messages and layer state with
// compare-and-swap against the version read at the start of the run.
func (r *run) checkpoint(ctx context.Context) error {
	start := time.Now()
	err := r.writeCheckpoint(ctx)
	r.a.emit(ctx, Event{Kind: EventCheckpoint, ThreadID: r.threadID, Step: max(r.res.Steps-1, 0), Duration: time.Since(start), Err: err})
	return err
}

// writeCheckpoint writes the checkpoint; an error is a *CheckpointError.
func (r *run) writeCheckpoint(ctx context.Context) error {
	th, store := r.thread, r.a.cfg.Store
	snap, err := r.stack.Snapshot(ctx)
	if err != nil {
		return r.checkpointError(fmt.Errorf("snapshot layers: %w", err))
	}
	data, err := r.encodeCheckpoint(snap)
	if err != nil {
		return r.checkpointError(fmt.Errorf("encode: %w", err))
	}
	v, err := store.Put(ctx, th.key, data, th.version)
	if err != nil {
		// A conflict is another run's write, unless the checkpoint this
		// run read or wrote is no longer there at all.
		if errors.Is(err, storage.ErrConflict) && th.version != storage.NoVersion {
			if _, gerr := store.Get(ctx, th.key); errors.Is(gerr, storage.ErrNotFound) {
				err = ErrCheckpointGone
			}
		}
		return r.checkpointError(err)
	}
	th.version = v
	th.savedMsgs, th.savedSteps = len(r.msgs), r.res.Steps
	return nil
}

// checkpointError is a failed checkpoint write, with what was saved.
func (r *run) checkpointError(err error) error {
	th := r.thread
	return &CheckpointError{ThreadID: r.threadID, SavedSteps: th.savedSteps, SavedMessages: max(th.savedMsgs-th.baseMsgs, 0), Err: err}
}

// encodeCheckpoint returns the JSON of the run's [Checkpoint], written
// with encoding/json (without HTML escaping).
//
// The messages come first: they never change once in the history, so
// each is encoded once per run, and the buffer that holds them
// (thread.json[:thread.msgsEnd]) is kept and extended by the next step
// rather than rebuilt; a step costs what it adds, not the whole history.
// The returned slice is that buffer: it is valid until the next call
// (stores do not retain what they are given). The other fields follow,
// encoded as a Checkpoint without messages.
func (r *run) encodeCheckpoint(snap layer.Snapshot) ([]byte, error) {
	th := r.thread
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	b := th.json[:th.msgsEnd]
	if len(b) == 0 {
		b = append(b, `{"messages":[`...)
	}
	for i := th.encoded; i < len(r.msgs); i++ {
		s, err := storedMessage(r.msgs[i])
		if err == nil {
			err = enc.Encode(s)
		}
		if err != nil {
			th.json = b
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		buf.Reset()
		th.encoded, th.msgsEnd = i+1, len(b)
	}
	// From here on th.json must hold the messages encoded so far, even
	// if a layer's snapshot is refused below.
	th.json = b
	for id, raw := range snap.Layers {
		if len(raw) == 0 {
			snap.Layers[id] = json.RawMessage("null")
		}
	}
	err := enc.Encode(Checkpoint{
		Version: CheckpointVersion, Agent: r.a.cfg.Name, ThreadID: r.threadID, ResourceID: r.resourceID,
		Layers: snap, Steps: th.steps + r.res.Steps, Usage: th.usage.Add(r.res.Usage),
		UpdatedAt: time.Now().UTC(), Compacted: th.compacted,
	})
	if err != nil {
		for _, id := range slices.Sorted(maps.Keys(snap.Layers)) {
			if !json.Valid(snap.Layers[id]) {
				return nil, fmt.Errorf("layer %s: snapshot is not valid JSON: %w", id, err)
			}
		}
		return nil, err
	}
	// The fields follow the messages: "],", then the object without its
	// opening brace.
	b = append(b, "],"...)
	b = append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))[1:]...)
	th.json = b
	return b, nil
}

// restoreLayers restores thread- and execution-scoped layers from a
// checkpoint's snapshot. Resource and global layers are left as Init
// loaded them: other threads may have changed them since. A failure is
// reported and leaves the layers as Init loaded them.
func (a *Agent) restoreLayers(ctx context.Context, st *layer.Stack, snap layer.Snapshot) {
	part := layer.Snapshot{Version: snap.Version, Name: snap.Name, Layers: map[string]json.RawMessage{}}
	for _, spec := range specs(st) {
		data, ok := snap.Layers[spec.ID]
		if !ok {
			continue
		}
		switch spec.Scope {
		case "", layer.ScopeThread, layer.ScopeExecution:
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
