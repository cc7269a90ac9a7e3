package semanticmemory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/internal/seqlog"
	"github.com/memlayer/memlayer/internal/textcut"
	"github.com/memlayer/memlayer/storage"
)

// SupersedeThreshold is the lexical similarity at or above which a new
// fact restates a live fact of the same kind and supersedes it (becomes
// its next version) instead of being added beside it. The similarity is
// the Jaccard index of the two texts' distinct tokens (lexical.Tokens):
// shared tokens over all tokens. At 0.7, "The user's favourite colour is
// blue" and "... is green" (6 of 8 tokens shared, 0.75) are one fact
// updated, while "The user likes tea" and "The user likes coffee" (3 of
// 5, 0.6) stay two.
const SupersedeThreshold = 0.7

// restateCandidates is how many facts of the kind, best by BM25, a new
// fact is compared with to find the one it restates.
const restateCandidates = 32

// The search index: one document per live fact in the collection
// storage.IndexName(id, scope, "facts"), with the fact's last version
// (ID = fact ID, Text = its text, Vector = its embedding) and the fields
// below, plus one marker document (ID markID, field "mark") that says
// which records the documents cover. The records stay the source of
// truth: records are applied to the index in order, after they are
// written, and a run that finds the marker behind the head applies the
// missing ones (the first run on a log written before the index applies
// them all).
const (
	fieldID      = "id"   // the fact ID
	fieldKind    = "kind" // the fact's kind
	fieldImp     = "imp"  // its importance, as text
	fieldUpdated = "upd"  // its Updated, RFC 3339
	fieldSeq     = "seq"  // the record that holds this version
	fieldVersion = "ver"  // the version
	fieldPin     = "pin"  // "1" when shown whatever the query (see Config.PinKinds)
	fieldSource  = "src"  // Source.String(), cut at storage.MaxFieldValueLen bytes
	fieldMark    = "mark" // "1" on the marker document only
	fieldGone    = "gone" // "1" on a forgotten or evicted fact's tombstone only

	markID = " mark" // no fact ID has a space
)

// marker is what the marker document records: the records [Base, Next)
// are applied to the index, which then holds Live facts.
type marker struct {
	Base, Next, Live int64
}

func (m marker) doc() storage.Document {
	return storage.Document{ID: markID, Fields: map[string]string{fieldMark: "1",
		"base": strconv.FormatInt(m.Base, 10), "next": strconv.FormatInt(m.Next, 10), "live": strconv.FormatInt(m.Live, 10)}}
}

// searcherOf returns the store's search capability, and whether it has one.
func searcherOf(s storage.Store) (storage.Searcher, bool) {
	x, ok := s.(storage.Searcher)
	return x, ok
}

// readMark returns the index's marker, and false when the index has
// none (new, dropped, or never built).
func (l *Layer) readMark(ctx context.Context) (marker, bool, error) {
	hits, err := l.ix.Search(ctx, l.col, storage.Query{Filter: map[string]string{fieldMark: "1"}, K: 1})
	if err != nil || len(hits) == 0 {
		return marker{}, false, err
	}
	f := hits[0].Fields
	num := func(k string) int64 { n, _ := strconv.ParseInt(f[k], 10, 64); return n }
	return marker{Base: num("base"), Next: num("next"), Live: num("live")}, true, nil
}

// doc returns the index document of fact version f, written in record seq.
func (l *Layer) doc(f *Fact, seq int64) storage.Document {
	d := storage.Document{ID: f.ID, Text: f.Text, Vector: f.Embedding, Fields: map[string]string{
		fieldID: f.ID, fieldKind: f.Kind, fieldImp: strconv.FormatFloat(f.Importance, 'g', -1, 64),
		fieldUpdated: f.Updated.UTC().Format(time.RFC3339Nano), fieldSeq: strconv.FormatInt(seq, 10),
		fieldVersion: strconv.Itoa(f.Version), fieldSource: textcut.Prefix(f.Source.String(), storage.MaxFieldValueLen),
	}}
	if l.pinned(f.Kind, f.Importance) {
		d.Fields[fieldPin] = "1"
	}
	if f.Skill != nil {
		d.Fields[fieldSkill] = f.Skill.Signature
	}
	return d
}

// pinned reports whether a fact of this kind and importance is shown
// whatever the query.
func (l *Layer) pinned(kind string, importance float64) bool {
	return slices.Contains(l.cfg.PinKinds, kind) || importance >= l.cfg.PinImportance
}

// view is a live fact as the index holds it: enough to render, rank and
// offer it, and to find its record.
type view struct {
	ID, Text, Kind, Source string
	Importance             float64
	Updated                time.Time
	Seq                    int64
	Version                int
	// Gone marks a tombstone: the fact's last version forgot or evicted
	// it.
	Gone bool
}

func viewOf(h storage.Hit) view {
	f := h.Fields
	v := view{ID: cmp.Or(f[fieldID], h.ID), Text: h.Text, Kind: f[fieldKind], Source: f[fieldSource]}
	v.Importance, _ = strconv.ParseFloat(f[fieldImp], 64)
	v.Updated, _ = time.Parse(time.RFC3339Nano, f[fieldUpdated])
	v.Seq, _ = strconv.ParseInt(f[fieldSeq], 10, 64)
	v.Version, _ = strconv.Atoi(f[fieldVersion])
	v.Gone = f[fieldGone] == "1"
	return v
}

// tombstone returns the document that stands for fact f once its last
// version f forgot or evicted it: no text, so no query by text or vector
// finds it, and its version, so that applying an older record again
// (another process catching up late) cannot bring the fact back.
func tombstone(f *Fact) storage.Document {
	return storage.Document{ID: f.ID, Fields: map[string]string{fieldID: f.ID, fieldVersion: strconv.Itoa(f.Version), fieldGone: "1"}}
}

// lookup returns the live fact id as the index holds it.
func (l *Layer) lookup(ctx context.Context, id string) (view, bool, error) {
	v, found, err := l.lookupDoc(ctx, id)
	return v, found && !v.Gone, err
}

// lookupDoc returns the document of fact id, live or a tombstone.
func (l *Layer) lookupDoc(ctx context.Context, id string) (view, bool, error) {
	hits, err := l.ix.Search(ctx, l.col, storage.Query{Filter: map[string]string{fieldID: id}, K: 1})
	if err != nil || len(hits) == 0 {
		return view{}, false, err
	}
	return viewOf(hits[0]), true, nil
}

// fact reads the full version v names from its record (a point read).
func (l *Layer) fact(ctx context.Context, v view) (Fact, bool, error) {
	r, err := l.readRecord(ctx, v.Seq)
	if err != nil {
		return Fact{}, false, err
	}
	for i := len(r.Facts) - 1; i >= 0; i-- {
		if f := r.Facts[i]; f.ID == v.ID && f.Version == v.Version {
			return f, true, nil
		}
	}
	return Fact{}, false, nil
}

// apply takes record r into the index, updating m (the marker, not yet
// written). A version the index already holds, or an older one, is
// skipped, so applying a record twice changes nothing.
func (l *Layer) apply(ctx context.Context, r record, m *marker) error {
	if r.Reset {
		if err := l.dropIndex(ctx); err != nil {
			return err
		}
		m.Live = 0
	}
	for i := range r.Facts {
		if err := l.applyFact(ctx, &r.Facts[i], r.Seq, m); err != nil {
			return err
		}
	}
	m.Next = max(m.Next, r.Seq+1)
	return nil
}

// applyFact takes version f, written in record seq, into the index,
// unless the index holds it or a newer one, and counts the live facts
// in m.
func (l *Layer) applyFact(ctx context.Context, f *Fact, seq int64, m *marker) error {
	cur, found, err := l.lookupDoc(ctx, f.ID)
	switch {
	case err != nil:
		return err
	case found && cur.Version >= f.Version:
		return nil
	case f.gone():
		return l.applyGone(ctx, f, found && !cur.Gone, m)
	}
	live := found && !cur.Gone
	if !live {
		m.Live++
	}
	if err := l.ix.Index(ctx, l.col, l.doc(f, seq)); err != nil {
		return err
	}
	return l.indexEvictable(ctx, f, live)
}

// applyGone takes version f, which forgets or evicts its fact, into the
// index: a tombstone in place of the fact's document (live says the
// index held it live), and no eviction document.
func (l *Layer) applyGone(ctx context.Context, f *Fact, live bool, m *marker) error {
	if live {
		m.Live--
	}
	if err := l.ix.Index(ctx, l.col, tombstone(f)); err != nil {
		return err
	}
	return l.ix.Unindex(ctx, l.evcol, f.ID)
}

// catchUp applies to the index the records the marker says it lacks, up
// to the head l holds, and writes the marker. Its cost is the records
// written since the index last caught up: nothing in a steady state, the
// whole log the first time a log written before the index is used. With
// a private index (a store without search) it reads only the newest
// records holding Config.FallbackFacts fact versions.
func (l *Layer) catchUp(ctx context.Context) error {
	m, ok, err := l.readMark(ctx)
	if err != nil {
		return fmt.Errorf("read the index marker: %w", err)
	}
	st, err := seqlog.CheckMark(ctx, l.ix, l.col, ok, m.Base, l.head.Base)
	switch {
	case err != nil || st == seqlog.MarkNewer:
		return err // newer: the head l holds is older than the index's (a Clear since)
	case st == seqlog.MarkNone && l.private:
		return l.loadWindow(ctx) // a private index is filled from the newest records
	case st == seqlog.MarkNone:
		m = marker{Base: l.head.Base, Next: l.head.Base}
	}
	if m.Next < l.head.Next {
		if err := l.indexRecords(ctx, &m); err != nil {
			return err
		}
	}
	l.mark = m
	return nil
}

// indexRecords indexes the records from m.Next up to the head, and
// writes the marker m moved past them.
func (l *Layer) indexRecords(ctx context.Context, m *marker) error {
	err := l.eachRecord(ctx, m.Next, l.head.Next, func(r record) (bool, error) {
		if err := l.apply(ctx, r, m); err != nil {
			return false, fmt.Errorf("index record %d: %w", r.Seq, err)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if err := l.ix.Index(ctx, l.col, m.doc()); err != nil {
		return fmt.Errorf("write the index marker: %w", err)
	}
	return nil
}

// loadWindow fills a private index (a store without search) from the
// newest records holding Config.FallbackFacts fact versions, back to the
// newest Reset record at most, and writes its marker.
func (l *Layer) loadWindow(ctx context.Context) error {
	recs, err := l.readWindow(ctx)
	if err != nil {
		return err
	}
	final, order := lastVersions(recs)
	m := marker{Base: l.head.Base, Next: l.head.Next}
	docs := []storage.Document{m.doc()}
	var evs []storage.Document
	for _, id := range order {
		if x := final[id]; !x.f.gone() {
			docs = append(docs, l.doc(x.f, x.seq))
			evs = l.appendEvictDoc(evs, x.f)
			m.Live++
		}
	}
	if err := l.ix.Index(ctx, l.evcol, evs...); err != nil {
		return fmt.Errorf("index the evictable facts: %w", err)
	}
	docs[0] = m.doc()
	if err := l.ix.Index(ctx, l.col, docs...); err != nil {
		return fmt.Errorf("write the index marker: %w", err)
	}
	l.mark = m
	return nil
}

// readWindow reads, newest first, the newest records holding
// Config.FallbackFacts fact versions, back to the newest Reset record
// at most.
func (l *Layer) readWindow(ctx context.Context) ([]record, error) {
	var recs []record
	n := 0
	err := l.eachRecord(ctx, l.head.Next-1, l.head.Base-1, func(r record) (bool, error) {
		recs = append(recs, r)
		n += len(r.Facts)
		return n < l.cfg.FallbackFacts && !r.Reset, nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// lastVersion is the last version of a fact in a window of records, and
// the record that holds it.
type lastVersion struct {
	f   *Fact
	seq int64
}

// lastVersions returns the last version of each fact in recs (newest
// first), in one pass, and the facts' IDs in the order first written.
func lastVersions(recs []record) (map[string]lastVersion, []string) {
	final := map[string]lastVersion{}
	var order []string
	for i := len(recs) - 1; i >= 0; i-- {
		for j := range recs[i].Facts {
			f := &recs[i].Facts[j]
			if cur, ok := final[f.ID]; ok && cur.f.Version >= f.Version {
				continue
			} else if !ok {
				order = append(order, f.ID)
			}
			final[f.ID] = lastVersion{f, recs[i].Seq}
		}
	}
	return final, order
}

// restated returns the live fact of the given kind that text restates
// (the highest similarity at or above SupersedeThreshold, ties by ID), or
// false. It compares text with the restateCandidates facts of the kind
// the index ranks best for it: a restated fact shares most of its words.
func (l *Layer) restated(ctx context.Context, kind, text string) (Fact, bool, error) {
	set := tokenSet(text)
	if len(set) == 0 {
		return Fact{}, false, nil
	}
	hits, err := l.ix.Search(ctx, l.col, storage.Query{Text: text, Filter: map[string]string{fieldKind: kind}, K: restateCandidates})
	if err != nil {
		return Fact{}, false, err
	}
	slices.SortFunc(hits, func(a, b storage.Hit) int { return cmp.Compare(a.ID, b.ID) })
	var best *storage.Hit
	bestSim := 0.0
	for i := range hits {
		if sim := jaccard(set, tokenSet(hits[i].Text)); sim >= SupersedeThreshold && sim > bestSim {
			best, bestSim = &hits[i], sim
		}
	}
	if best == nil {
		return Fact{}, false, nil
	}
	return l.fact(ctx, viewOf(*best))
}

// jaccard returns the Jaccard similarity of two token sets, a not empty:
// the tokens they share over the tokens either has.
func jaccard(a, b map[string]bool) float64 {
	n := 0
	for t := range a {
		if b[t] {
			n++
		}
	}
	return float64(n) / float64(len(a)+len(b)-n)
}

func tokenSet(text string) map[string]bool {
	toks := lexical.Tokens(nil, text)
	set := make(map[string]bool, len(toks))
	for _, t := range toks {
		set[t] = true
	}
	return set
}

// history is every version of every fact in records [Base, Next), read
// from the records: the audit's view ([Layer.Versions], [Layer.Facts],
// [Layer.Snapshot]). No recall reads it.
type history struct {
	versions map[string][]Fact // by ID, oldest first
	live     map[string]*Fact  // last version of every fact not forgotten
}

// readHistory reads every record of the log. Its cost grows with the
// log; only the audit calls it.
func (l *Layer) readHistory(ctx context.Context) (history, error) {
	h := history{versions: map[string][]Fact{}, live: map[string]*Fact{}}
	err := l.eachRecord(ctx, l.head.Base, l.head.Next, func(r record) (bool, error) {
		if r.Reset {
			h = history{versions: map[string][]Fact{}, live: map[string]*Fact{}}
		}
		for _, f := range r.Facts {
			h.add(f)
		}
		return true, nil
	})
	if err != nil {
		return history{}, err
	}
	return h, nil
}

// add takes version f of its fact, unless the history holds a later one.
func (h history) add(f Fact) {
	vs := h.versions[f.ID]
	if len(vs) > 0 && vs[len(vs)-1].Version >= f.Version {
		return
	}
	h.versions[f.ID] = append(vs, f)
	delete(h.live, f.ID)
	if !f.gone() {
		h.live[f.ID] = &h.versions[f.ID][len(h.versions[f.ID])-1]
	}
}

func (h history) snapshot() snapshot {
	s := snapshot{Version: FormatVersion, Facts: []Fact{}}
	for _, id := range slices.Sorted(maps.Keys(h.versions)) {
		s.Facts = append(s.Facts, h.versions[id]...)
	}
	return s
}
