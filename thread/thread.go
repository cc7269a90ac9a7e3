package thread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// The thread layout of version 4. Under storage.ThreadPrefix(threadID):
//
//	checkpoint                 the head (headRecord), the only record written with compare-and-swap
//	seg.<seq>.<nonce>          a segment: one step's new messages and the name of the previous segment
//	sum.<version>.<nonce>      a summary ([Summary])
//	layer.<id>.<nonce>         one layer's snapshot
//
// Segments, summaries and snapshots are written once, under names no other
// write uses, before the head that names them; a run that loses the head's
// compare-and-swap leaves records nothing names, so none of them is ever
// read. A segment names its predecessor, so loading walks back from the
// head's tail only as far as the summary does not cover.
const (
	segPrefix   = "seg."
	sumPrefix   = "sum."
	layerPrefix = "layer."
)

// The kinds of a thread's records, as [Kind] names them.
const (
	KindSegment  = "segment"
	KindSummary  = "summary"
	KindSnapshot = "snapshot"
)

// Kind returns the kind of the thread record named name (the part of its
// key after storage.ThreadPrefix, escaped or not): KindSegment,
// KindSummary, KindSnapshot, or "" for a head, an owner record or a
// record of another package.
func Kind(name string) string {
	switch {
	case strings.HasPrefix(name, segPrefix):
		return KindSegment
	case strings.HasPrefix(name, sumPrefix):
		return KindSummary
	case strings.HasPrefix(name, layerPrefix):
		return KindSnapshot
	}
	return ""
}

// headRecord is the head of a version-4 thread.
type headRecord struct {
	Version    int       `json:"version"`
	Agent      string    `json:"agent,omitempty"`
	ThreadID   string    `json:"thread_id"`
	ResourceID string    `json:"resource_id,omitempty"`
	Steps      int       `json:"steps"`
	Usage      Usage     `json:"usage"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Messages is how many messages the thread has; Tail names the
	// segment that holds the last of them.
	Messages int    `json:"messages"`
	Tail     string `json:"tail,omitempty"`
	// Compacted is the compaction watermark (Checkpoint.Compacted);
	// Precompacted is how many of the first messages were stored
	// already compacted (by a version 1 to 3 checkpoint).
	Compacted    int `json:"compacted,omitempty"`
	Precompacted int `json:"precompacted,omitempty"`
	// Summary names the summary record, and Covers says how many
	// messages, from the first, it summarizes.
	Summary string `json:"summary,omitempty"`
	Covers  int    `json:"covers,omitempty"`
	// Retained is the index of the first message still stored (see
	// Step.Retain).
	Retained int `json:"retained,omitempty"`
	// SnapshotVersion and Layers are the layer.Snapshot, each layer's
	// JSON in a record of its own. SnapshotName repeats Agent: version 4
	// has always written it, and reading ignores it.
	SnapshotVersion int               `json:"snapshot_version,omitempty"`
	SnapshotName    string            `json:"snapshot_name,omitempty"`
	Layers          map[string]string `json:"layers,omitempty"`
	// Title is the title derived from the thread's first user message
	// (see DeriveTitle); a head written before titles were has none.
	Title string `json:"title,omitempty"`
	// Indexed says the thread was on ResourceID's list of threads (see
	// IndexName) before the head was written, so a later run need not
	// read the list to make sure. A head written before the flag was
	// has it false.
	Indexed bool `json:"indexed,omitempty"`
}

// segmentRecord is one step's new messages.
type segmentRecord struct {
	// First is the index in the thread of Messages[0].
	First    int       `json:"first"`
	Prev     string    `json:"prev,omitempty"`
	Messages []Message `json:"messages"`
}

// Summary is the rolling summary of a thread's older messages, as stored
// with the thread and shown in the history_summary layer's block.
type Summary struct {
	// Version counts the thread's summaries: 1 for the first.
	Version int `json:"version"`
	// Covers is how many messages, from the first, it summarizes.
	Covers int `json:"covers"`
	// Text is the summary.
	Text string `json:"text"`
}

// Loaded is a thread as [Load] reads it for a run.
type Loaded struct {
	// Checkpoint is the thread in the current version.
	Checkpoint *Checkpoint
	// Legacy says the thread is stored as one checkpoint of version 1 to
	// 3: its messages are stored compacted up to Checkpoint.Compacted.
	Legacy bool
	// Precompacted is how many of the first messages a version-4 thread
	// stores already compacted (by the version 1 to 3 checkpoint it was
	// migrated from).
	Precompacted int
	// Layers is each layer's stored snapshot.
	Layers map[string][]byte

	version int64      // of the head
	head    headRecord // version 4; zero for a migrated thread
	// segs are the segments read; kept is the summary record's list,
	// and listSegs says it has none (see summaryRecord).
	segs     []segRef
	kept     string
	listSegs bool
}

// LoadAttempts bounds the reads of a head whose records vanish while
// [Load] reads it (a newer run replaced and deleted them).
const LoadAttempts = 3

// Load reads a thread as a run starts from it: its head, the summary,
// the layers' snapshots and the messages the summary does not cover. A
// thread never stored is (nil, nil). A failure is ErrCheckpoint.
func Load(ctx context.Context, store storage.Store, threadID string) (*Loaded, error) {
	for attempt := 1; ; attempt++ {
		l, err := load(ctx, store, threadID, false)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, errVanished) || attempt == LoadAttempts {
			return nil, fmt.Errorf("%w: thread %s: %w", ErrCheckpoint, storage.Quote(threadID), err)
		}
	}
}

// LoadAll reads a stored thread whole: its head, its summary, its layer
// snapshots and every retained message (Messages from message First). A
// thread never stored gives an error that is storage.ErrNotFound; every
// failure is ErrCheckpoint. Its cost grows with the thread.
func LoadAll(ctx context.Context, store storage.Store, threadID string) (*Checkpoint, error) {
	l, err := load(ctx, store, threadID, true)
	if err == nil && l == nil {
		err = storage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("%w: thread %s: %w", ErrCheckpoint, storage.Quote(threadID), err)
	}
	return l.Checkpoint, nil
}

// errVanished is a record the head names that is not in the store.
var errVanished = errors.New("a record the head names is missing")

// load reads the thread from store once; full reads every retained
// message, not only those the summary does not cover.
func load(ctx context.Context, store storage.Store, threadID string, full bool) (*Loaded, error) {
	it, err := store.Get(ctx, storage.ThreadKey(threadID, HeadName))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	version, err := probeVersion(it.Value)
	if err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	if version < Version {
		return loadLegacy(it)
	}
	h, err := decodeHead(it.Value)
	if err != nil {
		return nil, err
	}
	r := reader{ctx: ctx, store: store, threadID: threadID}
	l := &Loaded{version: it.Version, head: h, Precompacted: h.Precompacted, Checkpoint: h.checkpoint()}
	if err := r.records(l, full); err != nil {
		return nil, err
	}
	return l, nil
}

// records reads the records l's head names: the layer snapshots, the
// summary and the messages (with full, every retained one; else those
// the summary does not cover).
func (r reader) records(l *Loaded, full bool) error {
	if err := r.layers(l); err != nil {
		return err
	}
	if err := r.summary(l); err != nil {
		return err
	}
	from := max(l.head.Covers, l.head.Retained)
	if full {
		from = l.head.Retained
	}
	return r.messages(l, from)
}

// probeVersion returns the version a head of any version records.
func probeVersion(data []byte) (int, error) {
	var probe struct {
		Version int `json:"version"`
	}
	err := json.Unmarshal(data, &probe)
	return probe.Version, err
}

// loadLegacy reads a checkpoint of version 1 to 3.
func loadLegacy(it storage.Item) (*Loaded, error) {
	c, err := decodeLegacy(it.Value)
	if err != nil {
		return nil, err
	}
	l := &Loaded{Checkpoint: c, version: it.Version, Legacy: true, Layers: map[string][]byte{}}
	c.Total = len(c.Messages)
	for id, raw := range c.Layers.Layers {
		l.Layers[id] = raw
	}
	return l, nil
}

// decodeHead decodes a version-4 head and checks that its counts and
// names agree.
func decodeHead(data []byte) (headRecord, error) {
	var h headRecord
	if err := json.Unmarshal(data, &h); err != nil {
		return h, fmt.Errorf("malformed: %w", err)
	}
	if h.Version != Version {
		return h, fmt.Errorf("version %d, this build reads up to %d", h.Version, Version)
	}
	if !h.countsAgree() {
		return h, errors.New("malformed head: inconsistent counts")
	}
	if !h.namesAgree() {
		return h, errors.New("malformed head: record names")
	}
	return h, nil
}

// countsAgree reports whether the head's counts are consistent.
func (h *headRecord) countsAgree() bool {
	switch {
	case h.Messages < 0, h.Covers < 0, h.Covers > h.Messages:
		return false
	case h.Retained < 0, h.Retained > h.Covers:
		return false
	case h.Compacted < 0, h.Precompacted < 0, h.Precompacted > h.Messages:
		return false
	}
	return (h.Messages > 0) == (h.Tail != "") && (h.Summary == "") == (h.Covers == 0)
}

// namesAgree reports whether each record the head names has the prefix
// of its kind.
func (h *headRecord) namesAgree() bool {
	if h.Tail != "" && !strings.HasPrefix(h.Tail, segPrefix) || h.Summary != "" && !strings.HasPrefix(h.Summary, sumPrefix) {
		return false
	}
	for _, name := range h.Layers {
		if !strings.HasPrefix(name, layerPrefix) {
			return false
		}
	}
	return true
}

// checkpoint returns the Checkpoint the head describes, without its
// messages, summary or layers' data.
func (h *headRecord) checkpoint() *Checkpoint {
	return &Checkpoint{Version: Version, Agent: h.Agent, ThreadID: h.ThreadID, ResourceID: h.ResourceID,
		Steps: h.Steps, Usage: h.Usage, UpdatedAt: h.UpdatedAt, Compacted: min(h.Compacted, h.Messages), Total: h.Messages,
		Layers: layer.Snapshot{Version: h.SnapshotVersion, Layers: make(map[string]json.RawMessage, len(h.Layers))}}
}

// reader reads the records a version-4 head names.
type reader struct {
	ctx      context.Context
	store    storage.Store
	threadID string
}

// get reads the record named name.
func (r reader) get(name string) ([]byte, error) {
	if !validName(name) {
		return nil, fmt.Errorf("malformed head: record name %s", storage.Quote(name))
	}
	it, err := r.store.Get(r.ctx, storage.ThreadKey(r.threadID, name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s: %w", errVanished, name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	return it.Value, nil
}

// layers reads each layer's snapshot.
func (r reader) layers(l *Loaded) error {
	l.Layers = make(map[string][]byte, len(l.head.Layers))
	for id, name := range l.head.Layers {
		data, err := r.get(name)
		if err != nil {
			return err
		}
		if !json.Valid(data) {
			return fmt.Errorf("layer %s: snapshot is not valid JSON", id)
		}
		l.Checkpoint.Layers.Layers[id], l.Layers[id] = data, data
	}
	return nil
}

// summary reads the summary record, if the head names one.
func (r reader) summary(l *Loaded) error {
	h, c := &l.head, l.Checkpoint
	if h.Summary == "" {
		return nil
	}
	data, err := r.get(h.Summary)
	if err != nil {
		return err
	}
	var sr summaryRecord
	if err := json.Unmarshal(data, &sr); err != nil {
		return fmt.Errorf("summary: malformed: %w", err)
	}
	c.Summary, l.kept, l.listSegs = sr.Summary, sr.Kept, !sr.Tracked
	if c.Summary.Covers != h.Covers {
		return fmt.Errorf("summary covers %d messages, the head says %d", c.Summary.Covers, h.Covers)
	}
	return nil
}

// messages walks back from the tail to message from, and sets the
// checkpoint's messages from there.
func (r reader) messages(l *Loaded, from int) error {
	c := l.Checkpoint
	var segs [][]Message
	end, name := l.head.Messages, l.head.Tail
	for end > from {
		s, size, err := r.segment(name, end)
		if err != nil {
			return err
		}
		segs = append(segs, s.Messages)
		l.segs = append(l.segs, segRef{Name: name, First: s.First, big: size > ElideAbove})
		end, name = s.First, s.Prev
	}
	c.First = from
	for i := len(segs) - 1; i >= 0; i-- {
		c.Messages = append(c.Messages, segs[i]...)
	}
	c.Messages = c.Messages[from-end:]
	return nil
}

// segment reads the segment named name, which must end at message end,
// and returns it with its size in bytes.
func (r reader) segment(name string, end int) (segmentRecord, int, error) {
	var s segmentRecord
	data, err := r.get(name)
	if err != nil {
		return s, 0, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, 0, fmt.Errorf("segment %s: malformed: %w", name, err)
	}
	if len(s.Messages) == 0 || s.First+len(s.Messages) != end || s.First < 0 {
		return s, 0, fmt.Errorf("segment %s: holds messages %d to %d, want up to %d", name, s.First, s.First+len(s.Messages), end)
	}
	return s, len(data), nil
}

// validName reports whether name is one a version-4 head may name.
func validName(name string) bool {
	return strings.HasPrefix(name, segPrefix) || strings.HasPrefix(name, sumPrefix) || strings.HasPrefix(name, layerPrefix)
}
