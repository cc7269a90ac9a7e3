package semanticmemory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/memlayer/memlayer/internal/evict"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// ErrCapacity means a write cannot fit the memory's capacity even after
// every fact that may be evicted was: the facts left are guarded (see
// Capacity.GuardImportance), or the fact alone is larger than
// Capacity.MaxTokens. Nothing was written.
var ErrCapacity = errors.New("semanticmemory: capacity full")

// Defaults of [Capacity].
const (
	// DefaultMaxFacts is how many live facts a scope holds at most.
	DefaultMaxFacts = 100_000
	// DefaultMaxTokens is how many tokens of live facts (by
	// layer.EstimateTokens of their text) a scope holds at most.
	DefaultMaxTokens = 4_000_000
	// DefaultHalfLife is the time over which a fact neither written nor
	// recalled loses half its utility.
	DefaultHalfLife = 30 * 24 * time.Hour
	// DefaultGuardImportance is the importance from which a fact is
	// never evicted.
	DefaultGuardImportance = 0.9
	// MinHalfLife is the shortest half-life a Capacity accepts.
	MinHalfLife = time.Hour
)

// Capacity bounds a scope's live facts and says which to evict first.
// The zero Capacity is the defaults.
//
// A write that would take the live facts past MaxFacts or MaxTokens
// evicts, in the same record, the facts of lowest utility density first:
//
//	importance × exp(−λ·Δt) × (1 + uses) / tokens
//
// where Δt is the time since the fact was last written or recalled, λ is
// ln 2 / HalfLife, uses counts the runs whose Recall showed it or whose
// scored assembly showed it (RenderBlock), at most one per HalfLife/64,
// and tokens is
// layer.EstimateTokens of its text. Facts whose densities differ by less
// than a factor √2 may leave in either order; among them, the least
// recently written or recalled leaves first. A fact of importance
// GuardImportance or more is never evicted. An evicted fact gets a last
// version marked Evicted: it is no longer recalled, and stays readable
// through [Layer.Versions] and [Layer.Snapshot] like a forgotten one
// (the log keeps every version).
// Restore writes the snapshot's facts whole, even past the capacity: the
// next write evicts down to it.
type Capacity struct {
	// MaxFacts bounds the live facts. Zero means DefaultMaxFacts;
	// negative, no bound.
	MaxFacts int
	// MaxTokens bounds the tokens of the live facts. Zero means
	// DefaultMaxTokens; negative, no bound.
	MaxTokens int
	// HalfLife is the time over which a fact neither written nor
	// recalled loses half its utility. Zero means DefaultHalfLife;
	// negative, no decay. A positive one is at least MinHalfLife.
	HalfLife time.Duration
	// GuardImportance is the importance from which a fact is never
	// evicted. Zero means DefaultGuardImportance; above 1 guards none.
	GuardImportance float64
}

// withDefaults fills in c's defaults, or returns an error wrapping
// ErrInvalidConfig.
func (c Capacity) withDefaults() (Capacity, error) {
	switch {
	case c.HalfLife > 0 && c.HalfLife < MinHalfLife:
		return c, fmt.Errorf("%w: Capacity.HalfLife %v < %v", ErrInvalidConfig, c.HalfLife, MinHalfLife)
	case !(c.GuardImportance >= 0): // NaN too
		return c, fmt.Errorf("%w: Capacity.GuardImportance %v < 0", ErrInvalidConfig, c.GuardImportance)
	}
	c.MaxFacts = cmp.Or(c.MaxFacts, DefaultMaxFacts)
	c.MaxTokens = cmp.Or(c.MaxTokens, DefaultMaxTokens)
	c.HalfLife = cmp.Or(c.HalfLife, DefaultHalfLife)
	c.GuardImportance = cmp.Or(c.GuardImportance, DefaultGuardImportance)
	return c, nil
}

// ledger is what the capacity needs of the live facts, after a record:
// their count and tokens, and the lowest eviction band that may hold an
// evictable fact (evict.None when there has been none). Every record
// carries the ledger after it and publishing the record puts it in the
// head, under the head's compare-and-swap: so it is exact however many
// processes write.
type ledger struct {
	Count  int64 `json:"n"`
	Tokens int64 `json:"tok"`
	Low    int64 `json:"low"`
}

// check reports whether a decoded ledger (nil: none) is one a layer
// could have written.
func (g *ledger) check() error {
	if g != nil && (g.Count < 0 || g.Tokens < 0) {
		return fmt.Errorf("ledger of %d facts and %d tokens", g.Count, g.Tokens)
	}
	return nil
}

// over reports whether the ledger is past the capacity.
func (c Capacity) over(g ledger) bool {
	return c.MaxFacts >= 0 && g.Count > int64(c.MaxFacts) || c.MaxTokens >= 0 && g.Tokens > int64(c.MaxTokens)
}

// tokens is what a fact of this text counts against Capacity.MaxTokens.
func tokens(text string) int64 { return int64(max(layer.EstimateTokens(text), 1)) }

// The eviction index: one document per live fact that may be evicted
// (importance below the guard), in the collection
// storage.IndexName(id, scope, "evict"), with no text and these fields.
// Its ID is the fact's.
const (
	fieldEvID   = "id"  // the fact ID
	fieldEvVer  = "ver" // the version it describes
	fieldEvUse  = "use" // recalls counted
	fieldEvAt   = "at"  // last written or recalled, Unix nanoseconds
	fieldEvImp  = "imp" // importance
	fieldEvTok  = "tok" // tokens
	fieldEvBand = evict.FieldBand
)

// policy returns the layer's eviction weighing.
func (l *Layer) policy() evict.Policy { return evict.Policy{HalfLife: l.cfg.Capacity.HalfLife} }

// evictable reports whether a fact of this importance may be evicted.
func (l *Layer) evictable(importance float64) bool {
	return importance < l.cfg.Capacity.GuardImportance
}

// evictDoc returns the eviction document of version f (uses recalls,
// last touched at), and false for a fact that is never evicted.
func (l *Layer) evictDoc(f *Fact, uses int64, at time.Time) (storage.Document, bool) {
	if !l.evictable(f.Importance) {
		return storage.Document{}, false
	}
	tok := tokens(f.Text)
	band := evict.Band(l.policy().Key(evict.Item{Importance: f.Importance, Uses: uses, Tokens: int(tok), Touched: at}))
	return storage.Document{ID: f.ID, Fields: map[string]string{
		fieldEvID: f.ID, fieldEvVer: strconv.Itoa(f.Version), fieldEvUse: strconv.FormatInt(uses, 10),
		fieldEvAt: strconv.FormatInt(at.UnixNano(), 10), fieldEvImp: strconv.FormatFloat(f.Importance, 'g', -1, 64),
		fieldEvTok: strconv.FormatInt(tok, 10), fieldEvBand: strconv.FormatInt(band, 10),
	}}, true
}

// appendEvictDoc appends the eviction document of live version f, not
// yet recalled, to docs, unless f is never evicted.
func (l *Layer) appendEvictDoc(docs []storage.Document, f *Fact) []storage.Document {
	if d, ok := l.evictDoc(f, 0, f.Updated); ok {
		docs = append(docs, d)
	}
	return docs
}

// band returns the eviction band of version f, and false for a fact
// that is never evicted.
func (l *Layer) band(f *Fact) (int64, bool) {
	d, ok := l.evictDoc(f, 0, f.Updated)
	if !ok {
		return 0, false
	}
	b, _ := strconv.ParseInt(d.Fields[fieldEvBand], 10, 64)
	return b, true
}

// evictInfo is a fact's eviction document, read back.
type evictInfo struct {
	id      string
	version int
	uses    int64
}

func evictInfoOf(h storage.Hit) evictInfo {
	e := evictInfo{id: h.ID}
	e.version, _ = strconv.Atoi(h.Fields[fieldEvVer])
	e.uses, _ = strconv.ParseInt(h.Fields[fieldEvUse], 10, 64)
	return e
}

// lookupEvict returns the eviction document of fact id.
func (l *Layer) lookupEvict(ctx context.Context, id string) (evictInfo, bool, error) {
	hits, err := l.ix.Search(ctx, l.evcol, storage.Query{Filter: map[string]string{fieldEvID: id}, K: 1})
	if err != nil || len(hits) == 0 {
		return evictInfo{}, false, err
	}
	return evictInfoOf(hits[0]), true, nil
}

// indexEvictable writes the eviction document of version f, or removes the fact's when f may not be evicted. A later
// version of a fact (superseding, found) keeps the uses counted.
func (l *Layer) indexEvictable(ctx context.Context, f *Fact, found bool) error {
	var uses int64
	if found {
		e, ok, err := l.lookupEvict(ctx, f.ID)
		if err != nil {
			return err
		}
		if ok {
			uses = e.uses
		}
	}
	d, ok := l.evictDoc(f, uses, f.Updated)
	if !ok {
		if found {
			return l.ix.Unindex(ctx, l.evcol, f.ID)
		}
		return nil
	}
	return l.ix.Index(ctx, l.evcol, d)
}

// dropIndex drops the facts' collections: their documents and their
// eviction documents.
func (l *Layer) dropIndex(ctx context.Context) error {
	if err := l.ix.Drop(ctx, l.col); err != nil {
		return err
	}
	return l.ix.Drop(ctx, l.evcol)
}

// current brings the index up to the head l holds when this layer's
// marker says it lags: a record's build decides on the facts as they
// stand after the record before it.
func (l *Layer) current(ctx context.Context) error {
	if l.private || l.mark.Next == l.head.Next {
		return nil
	}
	return l.catchUp(ctx)
}

// admit returns the record of facts, to be written as record seq: facts,
// then the versions that evict the facts of lowest utility density while
// the live facts would be past the capacity, and the ledger after it. A
// write that cannot fit is an error wrapping ErrCapacity.
func (l *Layer) admit(ctx context.Context, facts []Fact) (record, error) {
	g, err := l.ledgerAt(ctx)
	if err != nil {
		return record{}, err
	}
	skip := map[string]bool{}
	for i := range facts {
		if err := l.fits(&facts[i]); err != nil {
			return record{}, err
		}
		if err := l.account(ctx, &g, &facts[i]); err != nil {
			return record{}, err
		}
		skip[facts[i].ID] = true
	}
	out := facts
	if l.cfg.Capacity.over(g) {
		evicted, err := l.evictions(ctx, &g, skip)
		if err != nil {
			return record{}, err
		}
		out = append(slices.Clip(facts), evicted...)
	}
	return record{Facts: out, Ledger: &g}, nil
}

// fits returns an error wrapping ErrCapacity when version f alone is
// larger than the token capacity: no eviction could make room for it.
func (l *Layer) fits(f *Fact) error {
	t, c := tokens(f.Text), l.cfg.Capacity.MaxTokens
	if f.gone() || c < 0 || t <= int64(c) {
		return nil
	}
	return fmt.Errorf("%w: a fact of %d tokens, capacity %d tokens", ErrCapacity, t, c)
}

// account adds version f to the ledger: it replaces the fact's live
// version, if any.
func (l *Layer) account(ctx context.Context, g *ledger, f *Fact) error {
	if f.Version > 1 {
		prev, found, err := l.lookup(ctx, f.ID)
		if err != nil {
			return err
		}
		if found {
			g.Count--
			g.Tokens -= tokens(prev.Text)
		}
	}
	if !f.gone() {
		l.count(g, f)
	}
	return nil
}

// count adds live version f to the ledger.
func (l *Layer) count(g *ledger, f *Fact) {
	g.Count++
	g.Tokens += tokens(f.Text)
	if b, ok := l.band(f); ok {
		g.Low = min(g.Low, b)
	}
}

// victimBatch is how many eviction candidates one probe of a band asks
// for.
const victimBatch = 4

// evictions returns the versions that evict facts, the lowest utility
// density first, until g is within the capacity, and updates g. It
// leaves out the facts in skip (those the record writes).
func (l *Layer) evictions(ctx context.Context, g *ledger, skip map[string]bool) ([]Fact, error) {
	now := l.now()
	top := l.policy().Top(now)
	var out []Fact
	for l.cfg.Capacity.over(*g) {
		hits, err := evict.Victims(ctx, l.ix, l.evcol, &g.Low, top, victimBatch, func(h storage.Hit) bool { return skip[h.ID] })
		if err != nil {
			return nil, fmt.Errorf("find facts to evict: %w", err)
		}
		if len(hits) == 0 {
			return nil, fmt.Errorf("%w: %d facts of %d tokens, capacity %d facts and %d tokens, and no fact left to evict",
				ErrCapacity, g.Count, g.Tokens, l.cfg.Capacity.MaxFacts, l.cfg.Capacity.MaxTokens)
		}
		for _, h := range hits {
			skip[h.ID] = true
			f, ok, err := l.victim(ctx, evictInfoOf(h), now)
			if err != nil {
				return nil, err
			}
			if !ok {
				continue
			}
			out = append(out, f)
			g.Count--
			g.Tokens -= tokens(f.Text)
			if !l.cfg.Capacity.over(*g) {
				break
			}
		}
	}
	return out, nil
}

// victim returns the version that evicts the live fact e describes, or
// false when e is stale (its fact gone or at another version: the
// document is dropped, or rewritten from the live version).
func (l *Layer) victim(ctx context.Context, e evictInfo, now time.Time) (Fact, bool, error) {
	v, found, err := l.lookup(ctx, e.id)
	if err != nil {
		return Fact{}, false, err
	}
	if !found || v.Version != e.version {
		return Fact{}, false, l.restale(ctx, e, v, found)
	}
	f, ok, err := l.fact(ctx, v)
	if err != nil || !ok {
		return Fact{}, false, err
	}
	f.Version++
	f.Updated, f.Evicted, f.Embedding = now, true, nil
	f.Source = Source{By: "layer:" + l.cfg.ID, Thread: l.thread, Step: l.step}
	return f, true, nil
}

// restale mends a stale eviction document: it drops it, or rewrites it
// from v, the fact's live version (found).
func (l *Layer) restale(ctx context.Context, e evictInfo, v view, found bool) error {
	if !found {
		return l.ix.Unindex(ctx, l.evcol, e.id)
	}
	f := Fact{ID: v.ID, Text: v.Text, Importance: v.Importance, Version: v.Version, Updated: v.Updated}
	d, ok := l.evictDoc(&f, e.uses, v.Updated)
	if !ok {
		return l.ix.Unindex(ctx, l.evcol, e.id)
	}
	return l.ix.Index(ctx, l.evcol, d)
}

// ledgerAt returns the ledger after the record before the head's Next.
// A log written before there was a ledger gets one now, once: it reads
// every record (as the audit does) and indexes the eviction documents of
// the live facts. Its cost grows with the log, once.
func (l *Layer) ledgerAt(ctx context.Context) (ledger, error) {
	switch {
	case l.head.Ledger != nil:
		return *l.head.Ledger, nil
	case l.head.Next == l.head.Base:
		return ledger{Low: evict.None}, nil
	}
	g, err := l.migrateLedger(ctx)
	if err != nil {
		return ledger{}, fmt.Errorf("build the capacity ledger: %w", err)
	}
	return g, nil
}

// migrateLedger returns the ledger of the live facts, reading every
// record, and indexes their eviction documents.
func (l *Layer) migrateLedger(ctx context.Context) (ledger, error) {
	h, err := l.readHistory(ctx)
	if err != nil {
		return ledger{}, err
	}
	g := ledger{Low: evict.None}
	var docs []storage.Document
	for _, id := range slices.Sorted(maps.Keys(h.live)) {
		l.count(&g, h.live[id])
		docs = l.appendEvictDoc(docs, h.live[id])
	}
	for len(docs) > 0 {
		n := min(len(docs), 256)
		if err := l.ix.Index(ctx, l.evcol, docs[:n]...); err != nil {
			return ledger{}, err
		}
		docs = docs[n:]
	}
	return g, nil
}

// ledgerOf returns the ledger of a record that replaces every fact before
// it (Clear, Restore): its last versions' count and tokens.
func (l *Layer) ledgerOf(facts []Fact) *ledger {
	g := ledger{Low: evict.None}
	last := map[string]*Fact{}
	for i := range facts {
		if cur, ok := last[facts[i].ID]; !ok || cur.Version < facts[i].Version {
			last[facts[i].ID] = &facts[i]
		}
	}
	for _, f := range last {
		if !f.gone() {
			l.count(&g, f)
		}
	}
	return &g
}

// used notes the facts a Recall or RenderBlock showed, to be
// counted at Close: once per run, however many steps recalled them.
func (l *Layer) used(ids ...string) {
	if l.uses == nil {
		l.uses = map[string]int64{}
	}
	for _, id := range ids {
		l.uses[id] = 1
	}
}

// useGrain sets the shortest time between two counted uses of a fact,
// HalfLife/useGrain (about 11 hours by default): recalls closer together
// count once, so a fact shown at every run rewrites its eviction document
// about twice a day, not once a run (an index write, a commit, a run).
// The last touch it leaves unrecorded changes a density by at most
// 2^(1/useGrain), about 1%.
const useGrain = 64

// flushUses adds the runs' recalls noted since the last flush to the facts'
// eviction documents, and marks them touched now: one query per fact
// recalled and one Index call, once per run. The counts live in the
// index only; an index rebuilt from the records starts them again.
//
// A fact written or counted less than HalfLife/useGrain ago is not
// counted again (see useGrain).
func (l *Layer) flushUses(ctx context.Context) error {
	if len(l.uses) == 0 {
		return nil
	}
	now := l.now()
	var docs []storage.Document
	for _, id := range slices.Sorted(maps.Keys(l.uses)) {
		hits, err := l.ix.Search(ctx, l.evcol, storage.Query{Filter: map[string]string{fieldEvID: id}, K: 1})
		if err != nil {
			return err
		}
		if len(hits) == 0 {
			continue // guarded, gone, or on a log not yet migrated
		}
		f := hits[0].Fields
		if at, err := strconv.ParseInt(f[fieldEvAt], 10, 64); err == nil && now.Sub(time.Unix(0, at)) < l.cfg.Capacity.HalfLife/useGrain {
			continue // counted a moment ago: see useGrain
		}
		imp, _ := strconv.ParseFloat(f[fieldEvImp], 64)
		tok, _ := strconv.Atoi(f[fieldEvTok])
		e := evictInfoOf(hits[0])
		uses := min(e.uses+l.uses[id], evict.MaxUses)
		band := evict.Band(l.policy().Key(evict.Item{Importance: imp, Uses: uses, Tokens: tok, Touched: now}))
		d := storage.Document{ID: id, Fields: maps.Clone(f)}
		d.Fields[fieldEvUse] = strconv.FormatInt(uses, 10)
		d.Fields[fieldEvAt] = strconv.FormatInt(now.UnixNano(), 10)
		d.Fields[fieldEvBand] = strconv.FormatInt(band, 10)
		docs = append(docs, d)
	}
	clear(l.uses)
	if len(docs) == 0 {
		return nil
	}
	return l.ix.Index(ctx, l.evcol, docs...)
}

// gone reports whether version f ends its fact: forgotten or evicted.
func (f *Fact) gone() bool { return f.Forgotten || f.Evicted }
