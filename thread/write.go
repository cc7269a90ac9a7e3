package thread

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// Writer writes one run's steps to a thread: each step's new messages as
// a segment, the layer snapshots that changed, a new summary, then the
// head with compare-and-swap against the version it read or last wrote.
// A Writer is used by one run at a time.
type Writer struct {
	store    storage.Store
	threadID string
	key      string // storage.ThreadKey(threadID, HeadName)
	version  int64  // of the stored head, for compare-and-swap
	head     headRecord
	legacy   bool // loaded from a checkpoint of version 1 to 3
	// layers is each layer's snapshot as stored, so that a step writes
	// only those that changed.
	layers map[string][]byte
	// saved is how many messages the stored thread has.
	saved int
	// segs are the segments holding the messages the summary does not
	// cover; kept those it covers that retention keeps (see retain), as
	// the summary record lists them (summaryRecord.Kept), unless
	// listSegs: the record lacks the list, and retention lists the store.
	segs     []segRef
	kept     string
	listSegs bool
	// indexedFor is the resource whose list of threads (see IndexName)
	// the thread is known to be on: the first write for another
	// resource, or of a head without the flag, makes sure of it.
	indexedFor string
}

// NewWriter returns a Writer of the thread l is loaded from; l is nil for
// a thread not stored yet. The first write of a thread loaded from
// version 1 to 3 stores all its messages.
func NewWriter(store storage.Store, threadID string, l *Loaded) *Writer {
	w := &Writer{store: store, threadID: threadID, key: storage.ThreadKey(threadID, HeadName), layers: map[string][]byte{}}
	if l == nil {
		return w
	}
	w.version, w.head, w.layers, w.legacy = l.version, l.head, l.Layers, l.Legacy
	w.segs, w.kept, w.listSegs = l.segs, l.kept, l.listSegs
	if l.head.Indexed {
		w.indexedFor = l.head.ResourceID
	}
	if !l.Legacy {
		w.saved = l.Checkpoint.Total
	}
	return w
}

// Saved returns how many messages the stored thread has, as far as the
// Writer knows.
func (w *Writer) Saved() int { return w.saved }

// HasHead reports whether the Writer read or wrote a head of the thread.
func (w *Writer) HasHead() bool { return w.version != storage.NoVersion }

// Step is what one write stores.
type Step struct {
	// Messages are the messages not stored yet, from message
	// Writer.Saved() on.
	Messages []Message
	// Snapshot is the state of the layers kept with the thread.
	Snapshot layer.Snapshot
	// Summary, when set, is a summary made since the last write.
	Summary *Summary
	// Retain, when positive, is how many of the newest messages a new
	// summary keeps whole: the covered messages before them are deleted
	// and the covered ones kept are elided (see [ElideAbove]).
	Retain int
	// Agent, ResourceID, Steps, Usage and Compacted go in the head
	// (Steps and Usage are the thread's totals).
	Agent      string
	ResourceID string
	Steps      int
	Usage      Usage
	Compacted  int
	// ReadBack bounds the read of the head after a write whose outcome
	// is unknown.
	ReadBack time.Duration
}

// write is one Write: the records written so far, which are deleted if
// the head is not written.
type write struct {
	w       *Writer
	ctx     context.Context
	written []string
	// replaced are records the new head no longer names; elide the
	// covered segments to elide once it is written.
	replaced, elide []string
	// batch, when the store is a storage.Batcher, holds the records to
	// commit with the head as one transaction, instead of writing them
	// one at a time.
	batcher storage.Batcher
	batch   []storage.Write
}

func (op *write) put(name string, data []byte) error {
	if op.batcher != nil {
		op.batch = append(op.batch, storage.Write{Key: storage.ThreadKey(op.w.threadID, name), Value: data, IfVersion: storage.NoVersion})
		return nil
	}
	if _, err := op.w.store.Put(op.ctx, storage.ThreadKey(op.w.threadID, name), data, storage.NoVersion); err != nil {
		return err
	}
	op.written = append(op.written, name)
	return nil
}

func (op *write) abandon() {
	for _, name := range op.written {
		_ = op.w.store.Delete(context.WithoutCancel(op.ctx), storage.ThreadKey(op.w.threadID, name), storage.AnyVersion)
	}
}

// Write stores a step: the new messages as a segment, the layers whose
// snapshot changed, a new summary if there is one, then the head with
// compare-and-swap. A Writer's first write also puts the thread in
// Step.ResourceID's list of threads (see [IndexName]), and the first
// write of a thread records the title derived from its first request
// (see [DeriveTitle]). If any write fails, the records it wrote (which no
// head names) are deleted and the thread is as it was. On a store that is
// a [storage.Batcher], the records, the head and the deletion of the
// records the head no longer names are one transaction. A write another
// run's wrote after is an error that is storage.ErrConflict; then Saved
// says whether the step is stored all the same.
func (w *Writer) Write(ctx context.Context, s Step) error {
	if err := w.index(ctx, s.ResourceID); err != nil {
		return err
	}
	op := &write{w: w, ctx: ctx}
	op.batcher, _ = w.store.(storage.Batcher)
	h := w.head
	w.title(&h, s.Messages)
	segs, kept, list := slices.Clone(w.segs), w.kept, w.listSegs
	if len(s.Messages) > 0 {
		ref, err := op.segment(s.Messages, h.Tail)
		if err != nil {
			return err
		}
		h.Tail, h.Messages = ref.Name, w.saved+len(s.Messages)
		segs = append(segs, ref)
	}
	layers, err := op.layers(s.Snapshot)
	if err != nil {
		op.abandon()
		return err
	}
	h.Layers, h.SnapshotVersion, h.SnapshotName = layers, s.Snapshot.Version, s.Agent
	if s.Summary != nil {
		if segs, kept, list, err = op.summary(&h, s, segs, kept, list); err != nil {
			op.abandon()
			return err
		}
	}
	h.Version, h.Agent, h.ThreadID, h.ResourceID = Version, s.Agent, w.threadID, s.ResourceID
	h.Indexed = s.ResourceID != "" && w.indexedFor == s.ResourceID
	h.Steps, h.Usage, h.UpdatedAt, h.Compacted = s.Steps, s.Usage, time.Now().UTC(), s.Compacted
	if w.legacy {
		h.Precompacted = s.Compacted
	}
	if err := op.head(h, s.ReadBack); err != nil {
		return err
	}
	w.rememberLayers(layers, s.Snapshot)
	w.saved = h.Messages
	w.segs, w.kept, w.listSegs = segs, kept, list
	op.deleteReplaced()
	w.elideSegments(ctx, op.elide, h.Covers)
	return nil
}

// index puts the thread in its resource's list on the Writer's first
// write, before any record is written: a thread a run stores is always
// on its list (see IndexName). A thread whose stored head says it is on
// the list costs nothing: the list, which grows with the resource's
// threads, is read only for a new thread.
func (w *Writer) index(ctx context.Context, resourceID string) error {
	if resourceID == "" || w.indexedFor == resourceID {
		return nil
	}
	if err := addToIndex(ctx, w.store, resourceID, w.threadID); err != nil {
		return err
	}
	w.indexedFor = resourceID
	return nil
}

// title gives a head without a title the one derived from the first
// user request of msgs, when they are the thread's first messages.
func (w *Writer) title(h *headRecord, msgs []Message) {
	if h.Title == "" && (w.saved == 0 || w.legacy) {
		h.Title = firstRequestTitle(msgs)
	}
}

// rememberLayers records the snapshots of the layers the head written
// names, to tell next time which changed.
func (w *Writer) rememberLayers(layers map[string]string, snap layer.Snapshot) {
	for id := range layers {
		if raw := snap.Layers[id]; len(raw) > 0 {
			w.layers[id] = raw
		} else {
			w.layers[id] = []byte("null")
		}
	}
}

// deleteReplaced deletes the records the head no longer names (a batch
// deleted them with it). A run that read the old head and reads one of
// them now finds it gone and reads the head again.
func (op *write) deleteReplaced() {
	if op.batcher != nil {
		return
	}
	for _, name := range op.replaced {
		_ = op.w.store.Delete(op.ctx, storage.ThreadKey(op.w.threadID, name), storage.AnyVersion)
	}
}

// segment writes msgs as a new segment after the one named prev.
func (op *write) segment(msgs []Message, prev string) (segRef, error) {
	first := op.w.saved
	data, err := encode(segmentRecord{First: first, Prev: prev, Messages: msgs})
	if err != nil {
		return segRef{}, fmt.Errorf("encode: %w", err)
	}
	// Its first message's index, zero-padded to ten digits so that
	// names sort in order.
	name := recordName(segPrefix, fmt.Sprintf("%010d", first))
	if err := op.put(name, data); err != nil {
		return segRef{}, err
	}
	return segRef{Name: name, First: first, big: len(data) > ElideAbove}, nil
}

// layers writes the snapshots that changed and returns the records the
// head names, adding those it replaces to op.replaced.
func (op *write) layers(snap layer.Snapshot) (map[string]string, error) {
	w := op.w
	layers := make(map[string]string, len(snap.Layers))
	for id, raw := range snap.Layers {
		if len(raw) == 0 {
			raw = json.RawMessage("null")
		}
		if name, ok := w.head.Layers[id]; ok && bytes.Equal(w.layers[id], raw) {
			layers[id] = name
			continue
		}
		if !json.Valid(raw) {
			return nil, fmt.Errorf("encode: layer %s: snapshot is not valid JSON", id)
		}
		name := recordName(layerPrefix, id)
		if err := op.put(name, raw); err != nil {
			return nil, err
		}
		layers[id] = name
	}
	for id, name := range w.head.Layers {
		if layers[id] != name {
			op.replaced = append(op.replaced, name)
		}
	}
	return layers, nil
}

// summary writes the step's summary, applying retention, and names it in
// h.
func (op *write) summary(h *headRecord, s Step, segs []segRef, kept string, list bool) ([]segRef, string, bool, error) {
	w, p := op.w, s.Summary
	rec := summaryRecord{Summary: *p}
	if keep := s.Retain; keep > 0 {
		var err error
		if h.Retained, segs, kept, op.replaced, op.elide, err = w.retain(op.ctx, min(p.Covers, h.Messages-keep), p.Covers, h.Retained, segs, kept, list, op.replaced); err != nil {
			return segs, kept, list, err
		}
		rec.Kept, rec.Tracked, list = kept, true, false
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return segs, kept, list, fmt.Errorf("encode: summary: %w", err)
	}
	name := recordName(sumPrefix, strconv.Itoa(p.Version))
	if err := op.put(name, data); err != nil {
		return segs, kept, list, err
	}
	if w.head.Summary != "" {
		op.replaced = append(op.replaced, w.head.Summary)
	}
	h.Summary, h.Covers = name, p.Covers
	return segs, kept, list, nil
}

// head writes the head h with compare-and-swap.
func (op *write) head(h headRecord, readBack time.Duration) error {
	w := op.w
	data, err := json.Marshal(h)
	if err != nil {
		op.abandon()
		return fmt.Errorf("encode: %w", err)
	}
	v, err := op.putHead(data)
	if err != nil {
		// Only a conflict says for sure that the head was not written;
		// after any other error it may have been, and then it names the
		// records: read it back to know.
		if errors.Is(err, storage.ErrConflict) {
			op.abandon()
			return err
		}
		if errors.Is(err, storage.ErrNotDurable) {
			return err // applied where it may yet be lost: reading it back proves nothing
		}
		switch landed, lv := w.headLanded(op.ctx, h, data, w.head.Tail, readBack); landed {
		case headCurrent:
			v = lv // it was written, and is still the head: carry on
		case headOverwritten:
			// It was written, and another run's head came after it:
			// this run's step is in the thread, and the run has lost.
			w.saved = h.Messages
			return fmt.Errorf("%w: the step was stored, then another run of the thread wrote after it: %w", storage.ErrConflict, err)
		default:
			return err
		}
	}
	w.version, w.head = v, h
	return nil
}

// putHead writes the head with compare-and-swap: alone, or, on a
// Batcher, with the step's records and the deletion of those it
// replaces.
func (op *write) putHead(data []byte) (int64, error) {
	w := op.w
	if op.batcher == nil {
		return w.store.Put(op.ctx, w.key, data, w.version)
	}
	at := len(op.batch)
	writes := append(op.batch, storage.Write{Key: w.key, Value: data, IfVersion: w.version})
	for i, name := range op.replaced {
		if slices.Contains(op.replaced[:i], name) {
			continue
		}
		writes = append(writes, storage.Write{Key: storage.ThreadKey(w.threadID, name), IfVersion: storage.AnyVersion, Delete: true})
	}
	vs, err := op.batcher.WriteBatch(op.ctx, writes)
	if err != nil {
		return 0, err
	}
	return vs[at], nil
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
// of its own, bounded by readBack. It returns headCurrent with the
// stored version when the stored head is h, and headOverwritten when a
// later head reaches the segment h named (prevTail is the tail before h:
// a head that named no new segment is never found overwritten). It is
// not asked about a write that failed with storage.ErrNotDurable: the
// read would find it where it may yet be lost.
func (w *Writer) headLanded(ctx context.Context, h headRecord, data []byte, prevTail string, readBack time.Duration) (int, int64) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBack)
	defer cancel()
	it, err := w.store.Get(rctx, w.key)
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
	// h descends from it.
	if w.reaches(rctx, cur.Tail, h.Tail) {
		return headOverwritten, 0
	}
	return headUnknown, 0
}

// reaches reports whether walking back the segments from tail, down to
// the first message not yet saved, finds the segment named target. A
// segment that cannot be read ends the walk.
func (w *Writer) reaches(ctx context.Context, tail, target string) bool {
	first := w.saved
	for name := tail; name != "" && validName(name); {
		if name == target {
			return true
		}
		it, err := w.store.Get(ctx, storage.ThreadKey(w.threadID, name))
		if err != nil {
			return false
		}
		var seg segmentRecord
		if json.Unmarshal(it.Value, &seg) != nil || seg.First < first {
			return false
		}
		name = seg.Prev
	}
	return false
}

// recordName returns a new record name: prefix, the part, and a random
// nonce no other write uses.
func recordName(prefix, part string) string {
	return prefix + part + "." + nonce()
}

// nonce returns a short random hex string.
func nonce() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// encode returns v's JSON without HTML escaping and without the final
// newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
