package agentloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

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
	// HistoryConfig.RetainMessages).
	Retained int `json:"retained,omitempty"`
	// SnapshotVersion and Layers are the layer.Snapshot, each layer's
	// JSON in a record of its own. SnapshotName repeats Agent: version 4
	// has always written it, and reading ignores it.
	SnapshotVersion int               `json:"snapshot_version,omitempty"`
	SnapshotName    string            `json:"snapshot_name,omitempty"`
	Layers          map[string]string `json:"layers,omitempty"`
}

// segmentRecord is one step's new messages.
type segmentRecord struct {
	// First is the index in the thread of Messages[0].
	First    int             `json:"first"`
	Prev     string          `json:"prev,omitempty"`
	Messages []StoredMessage `json:"messages"`
}

// Summary is the rolling summary of a thread's older messages, as stored
// with the thread and shown in the history-summary layer's block.
type Summary struct {
	// Version counts the thread's summaries: 1 for the first.
	Version int `json:"version"`
	// Covers is how many messages, from the first, it summarizes.
	Covers int `json:"covers"`
	// Text is the summary.
	Text string `json:"text"`
}

// loaded is a thread as a run loads it.
type loaded struct {
	ckpt    *Checkpoint
	msgs    []llms.MessageContent // ckpt.Messages as langchaingo's
	version int64                 // of the head
	head    headRecord            // version 4; zero for a migrated thread
	legacy  bool                  // stored as one checkpoint of version 1 to 3
	layers  map[string][]byte     // each layer's stored snapshot
	// segs are the segments read; kept is the summary record's list,
	// and listSegs says it has none (see summaryRecord).
	segs     []segRef
	kept     string
	listSegs bool
}

// maxLoadAttempts bounds the reads of a head whose records vanish while
// it is read (a newer run replaced and deleted them).
const maxLoadAttempts = 3

// load reads a thread: its head, the summary, the layers' snapshots and
// the messages the summary does not cover. A thread never stored is
// (nil, nil).
func (a *Agent) load(ctx context.Context, threadID string) (*loaded, error) {
	for attempt := 1; ; attempt++ {
		l, err := loadThread(ctx, a.cfg.Store, threadID, false)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, errVanished) || attempt == maxLoadAttempts {
			return nil, fmt.Errorf("%w: thread %s: %w", ErrCheckpoint, storage.Quote(threadID), err)
		}
	}
}

// errVanished is a record the head names that is not in the store.
var errVanished = errors.New("a record the head names is missing")

// loadThread reads the thread from store once; full reads every retained
// message, not only those the summary does not cover.
func loadThread(ctx context.Context, store storage.Store, threadID string, full bool) (*loaded, error) {
	it, err := store.Get(ctx, storage.ThreadKey(threadID, CheckpointName))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(it.Value, &probe); err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	if probe.Version < CheckpointVersion {
		c, msgs, err := decodeCheckpoint(it.Value)
		if err != nil {
			return nil, err
		}
		l := &loaded{ckpt: c, msgs: msgs, version: it.Version, legacy: true, layers: map[string][]byte{}}
		c.Total = len(c.Messages)
		for id, raw := range c.Layers.Layers {
			l.layers[id] = raw
		}
		return l, nil
	}
	var h headRecord
	if err := json.Unmarshal(it.Value, &h); err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	if h.Version != CheckpointVersion {
		return nil, fmt.Errorf("version %d, this build reads up to %d", h.Version, CheckpointVersion)
	}
	if h.Messages < 0 || h.Covers < 0 || h.Covers > h.Messages || h.Retained < 0 || h.Retained > h.Covers ||
		h.Compacted < 0 || h.Precompacted < 0 || h.Precompacted > h.Messages || (h.Messages > 0) != (h.Tail != "") || (h.Summary == "") != (h.Covers == 0) {
		return nil, errors.New("malformed head: inconsistent counts")
	}
	if (h.Tail != "" && !strings.HasPrefix(h.Tail, segPrefix)) || (h.Summary != "" && !strings.HasPrefix(h.Summary, sumPrefix)) {
		return nil, errors.New("malformed head: record names")
	}
	for _, name := range h.Layers {
		if !strings.HasPrefix(name, layerPrefix) {
			return nil, errors.New("malformed head: record names")
		}
	}
	get := func(name string) ([]byte, error) {
		if !validName(name) {
			return nil, fmt.Errorf("malformed head: record name %s", storage.Quote(name))
		}
		it, err := store.Get(ctx, storage.ThreadKey(threadID, name))
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s: %w", errVanished, name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
		return it.Value, nil
	}
	c := &Checkpoint{Version: CheckpointVersion, Agent: h.Agent, ThreadID: h.ThreadID, ResourceID: h.ResourceID,
		Steps: h.Steps, Usage: h.Usage, UpdatedAt: h.UpdatedAt, Compacted: min(h.Compacted, h.Messages), Total: h.Messages,
		Layers: layer.Snapshot{Version: h.SnapshotVersion, Layers: make(map[string]json.RawMessage, len(h.Layers))}}
	l := &loaded{ckpt: c, version: it.Version, head: h, layers: make(map[string][]byte, len(h.Layers))}
	for id, name := range h.Layers {
		data, err := get(name)
		if err != nil {
			return nil, err
		}
		if !json.Valid(data) {
			return nil, fmt.Errorf("layer %s: snapshot is not valid JSON", id)
		}
		c.Layers.Layers[id], l.layers[id] = data, data
	}
	if h.Summary != "" {
		data, err := get(h.Summary)
		if err != nil {
			return nil, err
		}
		var sr summaryRecord
		if err := json.Unmarshal(data, &sr); err != nil {
			return nil, fmt.Errorf("summary: malformed: %w", err)
		}
		c.Summary, l.kept, l.listSegs = sr.Summary, sr.Kept, !sr.Tracked
		if c.Summary.Covers != h.Covers {
			return nil, fmt.Errorf("summary covers %d messages, the head says %d", c.Summary.Covers, h.Covers)
		}
	}
	// Walk back from the tail until the messages the summary covers.
	from := max(h.Covers, h.Retained)
	if full {
		from = h.Retained
	}
	var segs [][]StoredMessage
	end, name := h.Messages, h.Tail
	for end > from {
		data, err := get(name)
		if err != nil {
			return nil, err
		}
		var s segmentRecord
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("segment %s: malformed: %w", name, err)
		}
		if len(s.Messages) == 0 || s.First+len(s.Messages) != end || s.First < 0 {
			return nil, fmt.Errorf("segment %s: holds messages %d to %d, want up to %d", name, s.First, s.First+len(s.Messages), end)
		}
		segs = append(segs, s.Messages)
		l.segs = append(l.segs, segRef{Name: name, First: s.First, big: len(data) > ElideAbove})
		end, name = s.First, s.Prev
	}
	c.First = from
	for i := len(segs) - 1; i >= 0; i-- {
		c.Messages = append(c.Messages, segs[i]...)
	}
	c.Messages = c.Messages[from-end:]
	l.msgs = make([]llms.MessageContent, len(c.Messages))
	for i, m := range c.Messages {
		var err error
		if l.msgs[i], err = m.content(); err != nil {
			return nil, fmt.Errorf("message %d: %w", from+i, err)
		}
	}
	return l, nil
}

// validName reports whether name is one a version-4 head may name.
func validName(name string) bool {
	return strings.HasPrefix(name, segPrefix) || strings.HasPrefix(name, sumPrefix) || strings.HasPrefix(name, layerPrefix)
}

// Transcript returns every stored message of a thread, oldest first, as
// the runs stored them: tool results capped at Config.MaxToolResultBytes
// but never compacted or summarized. It is the thread's full history for
// audit and for layers that keep their own log; the model is sent the
// window and the summary (see HistoryConfig). Messages removed by
// HistoryConfig.RetainMessages (by default, those the summary covers
// beyond the last DefaultRetainMessages) are gone: first is the index in
// the thread of the first message returned; in the covered ones kept,
// long texts, arguments and results are elided (see [Elided]). A thread
// never stored gives an error that is storage.ErrNotFound. Transcript reads every segment: its
// cost grows with the thread, unlike a run's.
func (a *Agent) Transcript(ctx context.Context, threadID string) (msgs []StoredMessage, first int, err error) {
	c, err := Inspector{Store: a.cfg.Store}.Thread(ctx, threadID)
	if err != nil {
		return nil, 0, err
	}
	return c.Messages, c.First, nil
}

// recordName returns a new record name: prefix, the part, and a random
// nonce no other write uses.
func recordName(prefix, part string) string {
	return prefix + part + "." + newSuffix()
}

// writeThread writes a step: the new messages as a segment, the layers
// whose snapshot changed, a new summary if there is one, then the head
// with compare-and-swap. If any write fails, the records it wrote
// (which no head names) are deleted and the thread is as it was.
func (r *run) writeThread(ctx context.Context, snap layer.Snapshot) error {
	th, store := r.thread, r.a.cfg.Store
	h := th.head
	segs, kept, list := slices.Clone(th.segs), th.kept, th.listSegs
	var written []string
	put := func(name string, data []byte) error {
		if _, err := store.Put(ctx, storage.ThreadKey(r.threadID, name), data, storage.NoVersion); err != nil {
			return err
		}
		written = append(written, name)
		return nil
	}
	abandon := func() {
		for _, name := range written {
			_ = store.Delete(context.WithoutCancel(ctx), storage.ThreadKey(r.threadID, name), storage.AnyVersion)
		}
	}
	// The messages not stored yet.
	from := th.saved - r.base
	if from < len(r.msgs) {
		data, err := r.encodeSegment(from, h.Tail)
		if err != nil {
			return fmt.Errorf("encode: %w", err)
		}
		// Its first message's index, zero-padded to ten digits so that
		// names sort in order.
		name := recordName(segPrefix, fmt.Sprintf("%010d", th.saved))
		if err := put(name, data); err != nil {
			return err
		}
		h.Tail, h.Messages = name, r.base+len(r.msgs)
		segs = append(segs, segRef{Name: name, First: th.saved, big: len(data) > ElideAbove})
	}
	// The layers whose snapshot changed.
	layers := make(map[string]string, len(snap.Layers))
	var replaced, elide []string
	for id, raw := range snap.Layers {
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		if name, ok := th.head.Layers[id]; ok && bytes.Equal(th.layers[id], raw) {
			layers[id] = name
			continue
		}
		if !json.Valid(raw) {
			abandon()
			return fmt.Errorf("encode: layer %s: snapshot is not valid JSON", id)
		}
		name := recordName(layerPrefix, id)
		if err := put(name, raw); err != nil {
			abandon()
			return err
		}
		layers[id] = name
	}
	for id, name := range th.head.Layers {
		if layers[id] != name {
			replaced = append(replaced, name)
		}
	}
	h.Layers, h.SnapshotVersion, h.SnapshotName = layers, snap.Version, r.a.cfg.Name
	// A summary made since the last write.
	if p := th.pending; p != nil {
		rec := summaryRecord{Summary: *p}
		if keep := r.a.cfg.History.RetainMessages; keep > 0 {
			var err error
			if h.Retained, segs, kept, replaced, elide, err = r.retain(ctx, min(p.Covers, h.Messages-keep), p.Covers, h.Retained, segs, kept, list, replaced); err != nil {
				abandon()
				return err
			}
			rec.Kept, rec.Tracked, list = kept, true, false
		}
		data, err := json.Marshal(rec)
		if err != nil {
			abandon()
			return fmt.Errorf("encode: summary: %w", err)
		}
		name := recordName(sumPrefix, strconv.Itoa(p.Version))
		if err := put(name, data); err != nil {
			abandon()
			return err
		}
		if th.head.Summary != "" {
			replaced = append(replaced, th.head.Summary)
		}
		h.Summary, h.Covers = name, p.Covers
	}
	h.Version, h.Agent, h.ThreadID, h.ResourceID = CheckpointVersion, r.a.cfg.Name, r.threadID, r.resourceID
	h.Steps, h.Usage, h.UpdatedAt, h.Compacted = th.steps+r.res.Steps, th.usage.Add(r.res.Usage), time.Now().UTC(), th.compacted
	data, err := json.Marshal(h)
	if err != nil {
		abandon()
		return fmt.Errorf("encode: %w", err)
	}
	v, err := store.Put(ctx, th.key, data, th.version)
	if err != nil {
		// Only a conflict says for sure that the head was not written;
		// after any other error it may have been, and then it names the
		// records: read it back to know.
		if errors.Is(err, storage.ErrConflict) {
			abandon()
			return err
		}
		if errors.Is(err, storage.ErrNotDurable) {
			return err // applied where it may yet be lost: reading it back proves nothing
		}
		switch landed, lv := r.headLanded(ctx, h, data, th.head.Tail); landed {
		case headCurrent:
			v = lv // it was written, and is still the head: carry on
		case headOverwritten:
			// It was written, and another run's head came after it:
			// this run's step is in the thread, and the run has lost.
			th.saved, th.savedSteps = h.Messages, r.res.Steps
			return fmt.Errorf("%w: the step was stored, then another run of the thread wrote after it: %w", storage.ErrConflict, err)
		default:
			return err
		}
	}
	th.version, th.head = v, h
	for id := range layers {
		if raw := snap.Layers[id]; len(raw) > 0 {
			th.layers[id] = raw
		} else {
			th.layers[id] = []byte("null")
		}
	}
	th.saved = h.Messages
	th.segs, th.kept, th.listSegs = segs, kept, list
	if th.pending != nil {
		th.summary, th.pending = *th.pending, nil
	}
	// Records the head no longer names. A run that read the old head
	// and reads one of them now finds it gone and reads the head again.
	for _, name := range replaced {
		_ = store.Delete(ctx, storage.ThreadKey(r.threadID, name), storage.AnyVersion)
	}
	r.elideSegments(ctx, elide, h.Covers)
	return nil
}

// What reading back a head whose write failed found (see headLanded).
const (
	headUnknown     = iota // not found, or cannot tell
	headCurrent            // written, and still the head
	headOverwritten        // written, and another head came after it
)

// headLanded tells whether the head h (encoded as data), whose write
// failed with an error other than a conflict (a deadline, a lost reply),
// was written all the same, by reading the stored head back on a context
// of its own, bounded by Config.SaveTimeout. It returns headCurrent with
// the stored version when the stored head is h, and headOverwritten when
// a later head reaches the segment h named (prevTail is the tail before
// h: a head that named no new segment is never found overwritten). It
// is not asked about a write that failed with storage.ErrNotDurable: the
// read would find it where it may yet be lost.
func (r *run) headLanded(ctx context.Context, h headRecord, data []byte, prevTail string) (int, int64) {
	th, store := r.thread, r.a.cfg.Store
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.a.cfg.SaveTimeout)
	defer cancel()
	it, err := store.Get(rctx, th.key)
	if err != nil {
		return headUnknown, 0
	}
	if bytes.Equal(it.Value, data) {
		return headCurrent, it.Version
	}
	var cur headRecord
	if h.Tail == prevTail || json.Unmarshal(it.Value, &cur) != nil || cur.ThreadID != h.ThreadID {
		return headUnknown, 0
	}
	// Heads are written with compare-and-swap, so a head written after
	// h descends from it: walk back from its tail to h's first message.
	first := th.saved
	for name := cur.Tail; name != "" && validName(name); {
		if name == h.Tail {
			return headOverwritten, 0
		}
		it, err := store.Get(rctx, storage.ThreadKey(r.threadID, name))
		if err != nil {
			return headUnknown, 0
		}
		var seg segmentRecord
		if json.Unmarshal(it.Value, &seg) != nil || seg.First < first {
			return headUnknown, 0
		}
		name = seg.Prev
	}
	return headUnknown, 0
}

// retain applies HistoryConfig.RetainMessages when a summary covering
// messages up to covers is stored: of the segments, those the summary
// covers are kept from the start of the one holding message cutoff on.
// segs are the segments of the messages the summary did not cover, kept
// those it covered that were kept; when list (a thread stored before the
// summary record listed them, or with retention off) the covered ones
// are listed from the store, once, and all elided. It returns the new
// retention point, the segments left uncovered and kept, and adds the
// covered ones before the point to drop (deleted once the head that no
// longer reaches them is written) and those newly covered and kept to
// elide (see elideSegments).
func (r *run) retain(ctx context.Context, cutoff, covers, retained int, segs []segRef, kept string, list bool, drop []string) (int, []segRef, string, []string, []string, error) {
	var covered, window, elide []segRef
	if list {
		prefix := storage.ThreadPrefix(r.threadID)
		keys, err := r.a.cfg.Store.List(ctx, prefix+segPrefix)
		if err != nil {
			return retained, segs, kept, drop, nil, err
		}
		for _, k := range keys {
			name, err := storage.Unescape(strings.TrimPrefix(k, prefix))
			if err != nil {
				continue
			}
			if first, ok := segFirst(name); ok && first < covers && !slices.ContainsFunc(segs, func(s segRef) bool { return s.Name == name }) {
				elide = append(elide, segRef{Name: name, First: first, big: true})
			}
		}
		kept = ""
	}
	for _, s := range segs {
		if s.First < covers {
			elide = append(elide, s)
		} else {
			window = append(window, s)
		}
	}
	covered = append(keptRefs(kept), elide...)
	point := retained
	for _, s := range covered {
		if s.First <= cutoff {
			point = max(point, s.First)
		}
	}
	var keep []segRef
	for _, s := range covered {
		if s.First < point {
			drop = append(drop, s.Name)
		} else {
			keep = append(keep, s)
		}
	}
	var rewrite []string
	for _, s := range elide {
		if s.First >= point && s.big {
			rewrite = append(rewrite, s.Name)
		}
	}
	return point, window, keptList(keep), drop, rewrite, nil
}

// encodeSegment returns the JSON of a segment holding r.msgs[from:],
// after the segment named prev.
func (r *run) encodeSegment(from int, prev string) ([]byte, error) {
	s := segmentRecord{First: r.base + from, Prev: prev, Messages: make([]StoredMessage, 0, len(r.msgs)-from)}
	for i := from; i < len(r.msgs); i++ {
		m, err := storedMessage(r.msgs[i])
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", r.base+i, err)
		}
		s.Messages = append(s.Messages, maskMessage(r.a.redact, m, &r.redacted))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
