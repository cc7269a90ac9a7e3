package episodicmemory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memlayer/memlayer/internal/seqlog"
	"github.com/memlayer/memlayer/storage"
)

// The search index: one document per episode in the collection
// storage.IndexName(id, scope, "episodes"), the same whether the episode
// is raw or folded into a digest (its text is the digest line; see
// [Episode.Digest]), plus a marker document naming the segments it
// covers. The records stay the source of truth: a writer indexes its
// segment after publishing it, and a run that finds the marker behind
// the head indexes the missing segments from the records (the first run
// on a log written before the index indexes it all).
const (
	fieldEp     = "ep"     // "1" on every episode document
	fieldRef    = "ref"    // the episode's reference
	fieldCall   = "call"   // its call ID (see callID)
	fieldThread = "thread" // the thread it happened in
	fieldSeq    = "seq"    // its segment, written by earlier versions only: the ID says it (see hitOf)
	fieldStep   = "step"   // its step
	fieldTime   = "time"   // its time, RFC 3339
	fieldTask   = "task"   // its task episode in its thread (see Episode.Task), when it has one
	fieldMark   = "mark"   // "1" on the marker only

	markID = "mark" // episode documents are named "<seq>.<pos>"

	// indexBatch is how many documents one Index call carries when a
	// range of the log is indexed.
	indexBatch = 256
)

// searcherOf returns the store's search capability, and whether it has one.
func searcherOf(s storage.Store) (storage.Searcher, bool) {
	x, ok := s.(storage.Searcher)
	return x, ok
}

// docID names the document of the pos-th episode of segment seq.
func docID(seq int64, pos int) string {
	return strconv.FormatInt(seq, 10) + "." + strconv.Itoa(pos)
}

// fieldValue cuts s to a field's limit at a rune boundary.
func fieldValue(s string) string {
	n := storage.MaxFieldValueLen
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// digestDoc returns the index document of digest d, the pos-th episode
// of its segment.
func digestDoc(d *Digest, pos int) storage.Document {
	doc := storage.Document{ID: docID(d.Seq, pos), Text: d.Text, Fields: map[string]string{
		fieldEp: "1", fieldRef: fieldValue(d.Ref), fieldCall: fieldValue(callID(d.Ref)), fieldThread: fieldValue(d.Thread),
		fieldStep: strconv.Itoa(d.Step), fieldTime: d.Time.UTC().Format(time.RFC3339Nano),
	}}
	if d.Task > 0 {
		doc.Fields[fieldTask] = strconv.Itoa(d.Task)
	}
	return doc
}

// docs appends the documents of digests ds, whose positions in their
// segments count from the first of each run of one segment.
func docsOf(dst []storage.Document, ds []Digest) []storage.Document {
	pos := 0
	for i := range ds {
		if i > 0 && ds[i].Seq != ds[i-1].Seq {
			pos = 0
		}
		dst = append(dst, digestDoc(&ds[i], pos))
		pos++
	}
	return dst
}

// digestsOf returns the digests of episodes, in order.
func digestsOf(eps []Episode) []Digest {
	ds := make([]Digest, len(eps))
	for i := range eps {
		ds[i] = eps[i].digest()
	}
	return ds
}

// addDocs adds documents to the index in batches.
func (l *Layer) addDocs(ctx context.Context, docs []storage.Document) error {
	for len(docs) > 0 {
		n := min(len(docs), indexBatch)
		if err := l.ix.Index(ctx, l.col, docs[:n]...); err != nil {
			return fmt.Errorf("index: %w", err)
		}
		docs = docs[n:]
	}
	return nil
}

// marker is what the marker document records: the segments [Base, Next)
// are indexed.
type marker struct{ Base, Next int64 }

func (l *Layer) readMark(ctx context.Context) (marker, bool, error) {
	hits, err := l.ix.Search(ctx, l.col, storage.Query{Filter: map[string]string{fieldMark: "1"}, K: 1})
	if err != nil || len(hits) == 0 {
		return marker{}, false, err
	}
	b, _ := strconv.ParseInt(hits[0].Fields["base"], 10, 64)
	n, _ := strconv.ParseInt(hits[0].Fields["next"], 10, 64)
	return marker{b, n}, true, nil
}

func (l *Layer) writeMark(ctx context.Context, m marker) error {
	return l.ix.Index(ctx, l.col, markDoc(m))
}

// markDoc is the marker document of m.
func markDoc(m marker) storage.Document {
	return storage.Document{ID: markID, Fields: map[string]string{fieldMark: "1",
		"base": strconv.FormatInt(m.Base, 10), "next": strconv.FormatInt(m.Next, 10)}}
}

// catchUpIndex makes the store's index cover the log up to segment to
// (exclusive): it reads the marker, indexes the segments it lacks (from
// the view when it holds them, else from the records) and moves the
// marker. An index of another base (a Clear) or without a marker is
// dropped and rebuilt from the log's base. Its cost is the segments
// written since the index last caught up: nothing at Init in a steady
// state; the whole log the first time an old log is used.
func (l *Layer) catchUpIndex(ctx context.Context, to int64) error {
	m, ok, err := l.readMark(ctx)
	if err != nil {
		return fmt.Errorf("read the index marker: %w", err)
	}
	st, err := seqlog.CheckMark(ctx, l.ix, l.col, ok, m.Base, l.head.Base)
	if err != nil || st == seqlog.MarkNewer {
		return err // newer: the head l holds is older than the index's (a Clear since)
	}
	if st == seqlog.MarkNone {
		m = marker{Base: l.head.Base, Next: l.head.Base}
	}
	if m.Next >= to {
		return nil
	}
	if err := l.indexRange(ctx, m.Next, to); err != nil {
		return err
	}
	m.Next = max(m.Next, to)
	if err := l.writeMark(ctx, m); err != nil {
		return fmt.Errorf("write the index marker: %w", err)
	}
	return nil
}

// indexRange indexes the episodes of segments [from, to): the folded
// ones from the digest records, the others from the view or their
// segments.
func (l *Layer) indexRange(ctx context.Context, from, to int64) error {
	b := docBatch{l: l}
	recs, err := l.recordsFrom(ctx, from)
	if err != nil {
		return err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		ds := slices.DeleteFunc(recs[i].Digests, func(d Digest) bool { return d.Seq < from || d.Seq >= to })
		if err := b.add(ctx, ds); err != nil {
			return err
		}
	}
	for seq := max(from, l.head.Digested); seq < to; seq++ {
		eps, err := l.rawSegment(ctx, seq)
		if err != nil {
			return err
		}
		if err := b.add(ctx, digestsOf(eps)); err != nil {
			return err
		}
	}
	return l.addDocs(ctx, b.docs)
}

// recordsFrom returns the digest records that cover segments from on,
// newest first: none when segment from is not folded.
func (l *Layer) recordsFrom(ctx context.Context, from int64) ([]digestRecord, error) {
	if from >= l.head.Digested {
		return nil, nil
	}
	var recs []digestRecord
	for seq := l.head.LastDigest; seq >= l.head.Base; {
		r, ok, err := l.readDigests(ctx, seq)
		if err != nil {
			return nil, err
		}
		if !ok || r.To <= from {
			break
		}
		recs = append(recs, r)
		seq = r.Prev
	}
	return recs, nil
}

// docBatch gathers the documents of digests for the index, adding them
// indexBatch at a time.
type docBatch struct {
	l    *Layer
	docs []storage.Document
}

// add takes the documents of ds, adding the batch once it is full.
func (b *docBatch) add(ctx context.Context, ds []Digest) error {
	b.docs = b.l.docs(b.docs, ds)
	if len(b.docs) < indexBatch {
		return nil
	}
	err := b.l.addDocs(ctx, b.docs)
	b.docs = b.docs[:0]
	return err
}

// viewSegment returns the raw episodes of segment seq the view holds, or
// nil.
func (l *Layer) viewSegment(seq int64) []Episode {
	i, _ := slices.BinarySearchFunc(l.recent, seq, func(e Episode, s int64) int { return cmp.Compare(e.seq, s) })
	j := i
	for j < len(l.recent) && l.recent[j].seq == seq {
		j++
	}
	if j == i {
		return nil
	}
	return l.recent[i:j]
}

// indexed adds episodes that joined the view to the index: a private
// index takes every episode the view takes; the store's index takes the
// run's own segments (with the marker), other writers indexing theirs.
func (l *Layer) indexed(ctx context.Context, eps []Episode, own bool) error {
	l.linkSearch.saw(eps, l.thread)
	switch {
	case len(eps) == 0:
		return nil
	case l.private:
		return l.addDocs(ctx, docsOf(nil, digestsOf(eps)))
	case own:
		return l.indexOwn(ctx, eps)
	}
	return nil
}

// indexOwn adds the run's own episodes, the newest segments it wrote, to
// the store's index, and moves the marker past them.
func (l *Layer) indexOwn(ctx context.Context, eps []Episode) error {
	docs := l.docs(nil, digestsOf(eps))
	first, last := eps[0].seq, eps[len(eps)-1].seq
	m, ok, err := l.readMark(ctx)
	if err != nil {
		return fmt.Errorf("read the index marker: %w", err)
	}
	if ok && m.Base == l.head.Base && m.Next == first {
		// The index covers the log up to these episodes: their documents
		// and the marker moved past them go in one call.
		return l.addDocs(ctx, append(docs, markDoc(marker{Base: m.Base, Next: last + 1})))
	}
	if err := l.addDocs(ctx, docs); err != nil {
		return err
	}
	return l.catchUpIndex(ctx, last+1)
}

// hit is an episode the index found.
type hit struct {
	ref, thread, text string
	seq               int64
	pos               int
	step              int
	task              int // its task episode; 0 when unknown
	time              time.Time
	score             float64
	// linked is the link it was recalled through (see Layer.Links), or nil.
	linked *Link
}

func hitOf(h storage.Hit) hit {
	f := h.Fields
	out := hit{ref: f[fieldRef], thread: f[fieldThread], text: h.Text, score: h.Score}
	// The ID is "<seq>.<pos>" (docID); a document indexed by an earlier
	// version also holds its segment in a field.
	seq, p, _ := cutLast(h.ID, '.')
	out.pos, _ = strconv.Atoi(p)
	var err error
	if out.seq, err = strconv.ParseInt(seq, 10, 64); err != nil {
		out.seq, _ = strconv.ParseInt(f[fieldSeq], 10, 64)
	}
	out.step, _ = strconv.Atoi(f[fieldStep])
	out.task, _ = strconv.Atoi(f[fieldTask])
	out.time, _ = time.Parse(time.RFC3339Nano, f[fieldTime])
	return out
}

func cutLast(s string, c byte) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == c {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// search returns the episodes of the log the query finds, leaving out
// documents below the log's base (a Clear another process has not
// finished dropping).
func (l *Layer) search(ctx context.Context, q storage.Query) ([]hit, error) {
	return l.searchIn(ctx, l.col, q)
}

// searchIn is search in collection col.
func (l *Layer) searchIn(ctx context.Context, col string, q storage.Query) ([]hit, error) {
	// The marker, the one document that is not an episode, has no text
	// and none of an episode's fields: only a query with neither needs
	// the filter that leaves it out. A filter every episode passes would
	// cost a text query a read of every episode's field posting on a
	// store whose index bounds reads per term, and a filtered listing a
	// walk of every episode on a store that walks one field's postings
	// and checks the others (a thread's newest episodes in a log of
	// other threads').
	if strings.TrimSpace(q.Text) == "" && len(q.Filter) == 0 {
		q.Filter = map[string]string{fieldEp: "1"}
	}
	hs, err := l.ix.Search(ctx, col, q)
	if err != nil {
		return nil, err
	}
	out := make([]hit, 0, len(hs))
	for _, h := range hs {
		if x := hitOf(h); x.seq >= l.head.Base {
			out = append(out, x)
		}
	}
	return out, nil
}

// lookup finds the newest episode m names through the index: by its
// reference, then by its call ID; then among the evicted episodes.
func (l *Layer) lookup(ctx context.Context, m refMatch) (hit, bool, error) {
	if h, ok, err := l.lookupIn(ctx, l.col, m); ok || err != nil {
		if ok {
			l.used(h)
		}
		return h, ok, err
	}
	return l.lookupEvicted(ctx, m)
}

// lookupIn finds the newest episode m names in collection col (see
// lookup).
func (l *Layer) lookupIn(ctx context.Context, col string, m refMatch) (hit, bool, error) {
	for _, field := range []string{fieldRef, fieldCall} {
		f := map[string]string{field: fieldValue(m.ref)}
		if m.own {
			f[fieldThread] = fieldValue(m.thread)
		}
		hs, err := l.searchIn(ctx, col, storage.Query{Filter: f, K: 8})
		if err != nil {
			return hit{}, false, err
		}
		if h, ok := newest(hs, m); ok {
			return h, true, nil
		}
	}
	return hit{}, false, nil
}

// newest returns the newest of hs that m names, by position in the log
// (the index orders by indexing time), and whether there is one.
func newest(hs []hit, m refMatch) (hit, bool) {
	var best *hit
	for i := range hs {
		if m.matches(hs[i].ref, hs[i].thread) && (best == nil || cmpPos(hs[i], *best) > 0) {
			best = &hs[i]
		}
	}
	if best == nil {
		return hit{}, false
	}
	return *best, true
}

// in returns the index of the episode of eps, its segment, that h names:
// the one at its position, else the newest with its reference and
// thread; -1 when none is.
func (h hit) in(eps []Episode) int {
	names := func(e Episode) bool { return e.Ref == h.ref && e.Thread == h.thread }
	if h.pos >= 0 && h.pos < len(eps) && names(eps[h.pos]) {
		return h.pos
	}
	return lastIndexFunc(eps, names)
}

// resolve returns the episode a hit names: the raw episode from its
// segment (at the hit's position, or else the newest there with its
// reference and thread), or its digest when the raw form is gone. A hit
// of a digest has position -1.
func (l *Layer) resolve(ctx context.Context, h hit) (Episode, *Digest, error) {
	if l.log.Store != nil && h.seq >= l.head.Dropped {
		eps, err := l.readSegment(ctx, h.seq)
		if err != nil {
			return Episode{}, nil, err
		}
		if j := h.in(eps); j >= 0 {
			return eps[j], nil, nil
		}
	}
	return Episode{}, &Digest{Ref: h.ref, Thread: h.thread, Step: h.step, Time: h.time, Text: h.text, Seq: h.seq}, nil
}
