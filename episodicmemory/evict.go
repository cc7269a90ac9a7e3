package episodicmemory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memlayer/memlayer/internal/evict"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// Defaults of [Capacity].
const (
	// DefaultMaxEpisodes is how many episodes a log's index holds for
	// recall at most.
	DefaultMaxEpisodes = 100_000
	// DefaultMaxTokens is how many tokens of digest lines (by
	// layer.EstimateTokens) a log's index holds at most.
	DefaultMaxTokens = 4_000_000
	// DefaultEvictHalfLife is the time over which an episode neither
	// logged nor recalled since loses half its utility.
	DefaultEvictHalfLife = 7 * 24 * time.Hour
	// DefaultGuardImportance is the importance from which an indexed
	// episode is never evicted.
	DefaultGuardImportance = 0.9
	// DefaultReservoir is the weight of the sampling term of an
	// episode's eviction key (see [Capacity]).
	DefaultReservoir = 1.0
	// MinEvictHalfLife is the shortest Capacity.HalfLife accepted.
	MinEvictHalfLife = time.Minute
)

// Importance of an episode, for eviction: a heuristic by what it
// records.
const (
	// ImportanceTool is a tool call's that succeeded.
	ImportanceTool = 0.4
	// ImportanceFailure is a failed tool call's: what went wrong is
	// worth more than one more success.
	ImportanceFailure = 0.6
	// ImportanceTurn is a turn's outcome: the request and the answer.
	ImportanceTurn = 0.7
	// ImportanceNote is a note's ([KindNote]): an outcome the agent
	// chose to keep. It is DefaultGuardImportance: notes are never
	// evicted by default.
	ImportanceNote = 0.9
)

// Capacity bounds the episodes a log's index holds for recall, by count
// and by the tokens of their digest lines, and says which leave first.
// The zero Capacity is the defaults. It applies with the store's index
// (storage.Searcher); on a store without one, a run's private index holds
// the view only, which Config bounds.
//
// A write that takes the index past either bound evicts episodes, the
// lowest key first, until it is within 63/64 of both (so that a log at
// capacity evicts in batches, once every few writes). An episode's key is
//
//	ln(importance × (1 + uses) / tokens) + λ·touched + Reservoir·g
//
// where importance is [ImportanceTool], [ImportanceFailure],
// [ImportanceTurn] or [ImportanceNote]; uses counts the runs whose Recall
// showed the episode, or whose read tool read it, at most one per
// HalfLife/64; tokens is layer.EstimateTokens of its digest line;
// touched is when it was logged or last used; λ is ln 2 / HalfLife; and g
// is a standard Gumbel variate drawn from a hash of the episode's
// position and reference, the same in every run and process. Without the
// last term (Reservoir negative) the key is the logarithm of the
// episode's utility density,
//
//	importance × exp(−λ·Δt) × (1 + uses) / tokens
//
// plus a term every episode shares: the lowest density leaves first
// (episodes within a factor √2 of each other may leave in either order;
// among them the least recently indexed leaves first). With it (by
// default, weight 1), keeping the highest keys keeps a weighted random
// sample of the log without replacement, each episode weighted by its
// density: lower densities still leave first on average, and a long
// log keeps a sample of its old episodes biased toward importance and
// use, rather than only its newest.
//
// An indexed episode of importance GuardImportance or more is never
// evicted. A write whose own episodes cannot fit once every other
// episode that may leave has left keeps them out of the index (it
// logs a warning): they are logged and read by reference, but not
// recalled. An evicted episode stays in the log: the read tool and
// [Layer.Read] still read it by its reference (raw until Config.Retain
// drops its segment, then its digest), and [Layer.Evicted] lists it,
// until Clear or an erase of the scope. Uses are counted from the
// first Close that finds the index at least half full. A log written
// before capacity was kept is counted from its next write on: the
// episodes indexed before are neither counted nor evicted (Clear, or a
// Restore, counts the whole log again).
type Capacity struct {
	// MaxEpisodes bounds the episodes indexed. Zero means
	// DefaultMaxEpisodes; negative, no bound.
	MaxEpisodes int
	// MaxTokens bounds the tokens of their digest lines. Zero means
	// DefaultMaxTokens; negative, no bound.
	MaxTokens int
	// HalfLife is the time over which an episode neither logged nor used
	// loses half its utility. Zero means DefaultEvictHalfLife; negative,
	// no decay. A positive one is at least MinEvictHalfLife.
	HalfLife time.Duration
	// GuardImportance is the importance from which an indexed episode is
	// never evicted. Zero means DefaultGuardImportance; above 1 guards
	// none.
	GuardImportance float64
	// Reservoir weighs the sampling term of the key. Zero means
	// DefaultReservoir; negative, none (eviction in density order).
	Reservoir float64
}

// withDefaults fills in c's defaults, or returns an error wrapping
// ErrInvalidConfig.
func (c Capacity) withDefaults() (Capacity, error) {
	switch {
	case c.HalfLife > 0 && c.HalfLife < MinEvictHalfLife:
		return c, fmt.Errorf("%w: Capacity.HalfLife %v < %v", ErrInvalidConfig, c.HalfLife, MinEvictHalfLife)
	case !(c.GuardImportance >= 0): // NaN too
		return c, fmt.Errorf("%w: Capacity.GuardImportance %v < 0", ErrInvalidConfig, c.GuardImportance)
	case math.IsNaN(c.Reservoir) || math.IsInf(c.Reservoir, 0):
		return c, fmt.Errorf("%w: Capacity.Reservoir %v", ErrInvalidConfig, c.Reservoir)
	}
	c.MaxEpisodes = cmp.Or(c.MaxEpisodes, DefaultMaxEpisodes)
	c.MaxTokens = cmp.Or(c.MaxTokens, DefaultMaxTokens)
	c.HalfLife = cmp.Or(c.HalfLife, DefaultEvictHalfLife)
	c.GuardImportance = cmp.Or(c.GuardImportance, DefaultGuardImportance)
	c.Reservoir = max(cmp.Or(c.Reservoir, DefaultReservoir), 0)
	return c, nil
}

// over reports whether n episodes of tok tokens are past the capacity.
func (c Capacity) over(n, tok int64) bool {
	return c.MaxEpisodes >= 0 && n > int64(c.MaxEpisodes) || c.MaxTokens >= 0 && tok > int64(c.MaxTokens)
}

// evictSlack sets how far below the capacity an eviction goes: to
// within (evictSlack−1)/evictSlack of each bound, so that a log at
// capacity evicts in batches, once every few writes, rather than at every
// write.
const evictSlack = 64

// overLow reports whether n episodes of tok tokens are past the level
// an eviction brings the index down to (see evictSlack).
func (c Capacity) overLow(n, tok int64) bool {
	return c.MaxEpisodes >= 0 && n > int64(c.MaxEpisodes-c.MaxEpisodes/evictSlack) ||
		c.MaxTokens >= 0 && tok > int64(c.MaxTokens-c.MaxTokens/evictSlack)
}

// half reports whether n episodes of tok tokens are at least half the
// capacity.
func (c Capacity) half(n, tok int64) bool {
	return c.MaxEpisodes >= 0 && 2*n >= int64(c.MaxEpisodes) || c.MaxTokens >= 0 && 2*tok >= int64(c.MaxTokens)
}

func (c Capacity) policy() evict.Policy { return evict.Policy{HalfLife: c.HalfLife} }

// ledger is what the capacity needs of a log's index, kept in the head
// under its compare-and-swap, so it is exact however many processes
// write: the indexed episodes and their tokens, the lowest eviction band
// that may hold an evictable episode (evict.None when none has been
// indexed), and the documents the newest writes evicted or re-banded
// (claims: no writer picks, or counts out, what another has claimed but
// not yet removed). The counts are kept as the room left under
// DefaultMaxEpisodes and DefaultMaxTokens (negative past them): the head
// then stays the same length as the log grows toward the default
// capacity, where counts would add digits at every power of ten.
type ledger struct {
	Free    int64    `json:"free"`
	FreeTok int64    `json:"freeTok"`
	Low     int64    `json:"low"`
	Claims  []string `json:"claims,omitempty"`
	// Uses is set once a use is counted: until then no candidate's uses
	// are looked up.
	Uses bool `json:"uses,omitempty"`
}

// maxClaims is how many of the newest claims the ledger keeps.
const maxClaims = 16

// newLedger is the ledger of an empty index.
func newLedger() *ledger {
	return &ledger{Free: DefaultMaxEpisodes, FreeTok: DefaultMaxTokens, Low: evict.None}
}

// live returns the indexed episodes and their tokens.
func (g *ledger) live() (n, tok int64) {
	return DefaultMaxEpisodes - g.Free, DefaultMaxTokens - g.FreeTok
}

// add counts n episodes of tok tokens in (negative: out).
func (g *ledger) add(n, tok int64) { g.Free, g.FreeTok = g.Free-n, g.FreeTok-tok }

// clone returns a copy of g the caller may change.
func (g *ledger) clone() *ledger {
	c := *g
	c.Claims = slices.Clone(g.Claims)
	return &c
}

// claim adds ids to the claims, keeping the newest maxClaims.
func (g *ledger) claim(ids ...string) {
	g.Claims = append(g.Claims, ids...)
	g.Claims = slices.Clone(g.Claims[max(len(g.Claims)-maxClaims, 0):])
}

// valid reports whether a decoded ledger is one a layer could have
// written.
func (g *ledger) valid() bool {
	n, tok := g.live()
	return n >= 0 && tok >= 0 && len(g.Claims) <= maxClaims
}

// importance returns an episode's importance from its digest line (see
// [Episode.Digest]).
func importance(text string) float64 {
	_, rest, _ := strings.Cut(text, "] step ")
	_, rest, _ = strings.Cut(rest, " ")
	switch {
	case strings.HasPrefix(rest, "note ("):
		return ImportanceNote
	case strings.HasPrefix(rest, `"`) || strings.HasPrefix(rest, "turn: "): // a turn: its quoted request, after "turn: " in older lines
		return ImportanceTurn
	case strings.Contains(rest, " → error: "):
		return ImportanceFailure
	}
	return ImportanceTool
}

// docTokens is what an episode's digest line counts against
// Capacity.MaxTokens.
func docTokens(text string) int64 { return int64(max(layer.EstimateTokens(text), 1)) }

// gumbel returns a standard Gumbel variate drawn from a hash of an
// episode's document ID and reference, at most gumbelMax.
func gumbel(id, ref string) float64 {
	// FNV-1a of id, a zero byte and ref.
	z := uint64(14695981039346656037)
	for _, s := range []string{id, "\x00", ref} {
		for i := 0; i < len(s); i++ {
			z = (z ^ uint64(s[i])) * 1099511628211
		}
	}
	// FNV leaves the high bits of similar short strings alike: mix them
	// (splitmix64's finalizer).
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	u := (float64(z>>11) + 0.5) / (1 << 53)
	return -math.Log(-math.Log(u))
}

// gumbelMax bounds what gumbel returns.
var gumbelMax = -math.Log(-math.Log1p(-0x1p-54))

// The eviction fields of an index document. An episode document that
// may be evicted carries its band (evict.FieldBand); a guarded one has
// none. Its uses are in the collection storage.IndexName(id, scope,
// "uses"), one document per episode used, named as the episode's; an
// evicted episode's document moves to storage.IndexName(id, scope,
// "evicted"), without its band.
const (
	fieldUseDoc = "doc" // the episode document's ID
	fieldUses   = "n"   // uses counted
	fieldUsedAt = "at"  // last use, Unix nanoseconds
)

// maxAge is the most half-lives an episode's age counts for.
const maxAge = 64

// keyOf returns the eviction key of the episode of document id (digest
// line text) with uses uses, last touched at.
func (l *Layer) keyOf(id, ref, text string, uses int64, at time.Time) (float64, bool) {
	c := l.cfg.Capacity
	imp := importance(text)
	if imp >= c.GuardImportance {
		return 0, false
	}
	// A writer's clock is not trusted: a time ahead of this one counts
	// as now, and one more than maxAge half-lives behind as that old
	// (its density is nil either way), so that no clock opens a gap of
	// empty bands for Victims to probe.
	now := clampTime(l.cfg.Now())
	if at.After(now) {
		at = now
	}
	if oldest := now.Add(-maxAge * c.HalfLife); c.HalfLife > 0 && at.Before(oldest) {
		at = oldest
	}
	k := c.policy().Key(evict.Item{Importance: imp, Uses: uses, Tokens: int(docTokens(text)), Touched: at})
	if c.Reservoir > 0 {
		k += c.Reservoir * gumbel(id, ref)
	}
	return k, true
}

// banded reports whether the layer's documents carry eviction bands:
// with the store's index, under a head that keeps the ledger.
func (l *Layer) banded() bool { return !l.private && l.head.Cap != nil }

// docs appends the index documents of digests ds (see docsOf) with their
// eviction bands, leaving out the documents the ledger claims (evicted,
// or being re-banded, by a write).
func (l *Layer) docs(dst []storage.Document, ds []Digest) []storage.Document {
	from := len(dst)
	dst = docsOf(dst, ds)
	if !l.banded() {
		return dst
	}
	claimed := l.head.Cap.Claims
	out := dst[:from]
	for i, d := range dst[from:] {
		if slices.Contains(claimed, d.ID) {
			continue
		}
		if k, ok := l.keyOf(d.ID, ds[i].Ref, ds[i].Text, 0, ds[i].Time); ok {
			d.Fields[evict.FieldBand] = strconv.FormatInt(evict.Band(k), 10)
		}
		out = append(out, d)
	}
	return out
}

// viewLedger returns the ledger of an index rebuilt from a view whose
// digests are in segment base and whose episodes are one per segment
// after it (Clear, Restore).
func (l *Layer) viewLedger(base int64, s snapshot) *ledger {
	if l.private {
		return nil
	}
	g := newLedger()
	count := func(id string, d *Digest) {
		g.add(1, docTokens(d.Text))
		if k, ok := l.keyOf(id, d.Ref, d.Text, 0, d.Time); ok {
			g.Low = min(g.Low, evict.Band(k))
		}
	}
	for i := range s.Digests {
		count(docID(base, i), &s.Digests[i])
	}
	for i := range s.Episodes {
		d := s.Episodes[i].digest()
		count(docID(base+1+int64(i), 0), &d)
	}
	return g
}

// eviction is what one write's admission decided, applied once its head
// is written: the documents evicted from the index, its own documents
// kept out of it, and the documents re-banded (their uses raised their
// keys).
type eviction struct {
	victims []storage.Document
	kept    []storage.Document // own documents kept out of the index
	reband  []storage.Document
	used    []string // victims with uses counted
	full    bool     // own guarded episodes did not fit
}

// candidate is an episode that may be evicted: an indexed one, or one of
// the write's own.
type candidate struct {
	doc  storage.Document
	band int64
	own  bool
}

// admit counts the documents of eps, the episodes of segment seq, into
// head h's ledger and, while the index would be past the capacity,
// picks the episodes to evict, the lowest band first, counting them out
// and claiming them. The write's own evictable episodes (own) compete
// with the indexed ones; another writer's are counted in only. A head
// without a ledger gets one here, counting from this write on.
func (l *Layer) admit(ctx context.Context, h *head, eps []Episode, own bool) (eviction, error) {
	if l.private {
		return eviction{}, nil
	}
	if h.Cap == nil {
		h.Cap = newLedger()
	} else {
		h.Cap = h.Cap.clone()
	}
	g := h.Cap
	ds := digestsOf(eps)
	bands := make([]int64, len(ds))
	for pos := range ds {
		d := &ds[pos]
		g.add(1, docTokens(d.Text))
		bands[pos] = evict.None
		if k, ok := l.keyOf(docID(d.Seq, pos), d.Ref, d.Text, 0, d.Time); ok {
			bands[pos] = evict.Band(k)
			g.Low = min(g.Low, bands[pos])
		}
	}
	if !l.cfg.Capacity.over(g.live()) {
		return eviction{}, nil
	}
	var mine []candidate
	for pos := range ds {
		if own {
			mine = append(mine, candidate{doc: digestDoc(&ds[pos], pos), band: bands[pos], own: true})
		}
	}
	slices.SortStableFunc(mine, func(a, b candidate) int { return cmp.Compare(a.band, b.band) })
	return l.evictions(ctx, g, mine)
}

// evictions picks the episodes to evict until g is within the capacity
// (see admit): the lowest band first, indexed before own within a band.
func (l *Layer) evictions(ctx context.Context, g *ledger, mine []candidate) (eviction, error) {
	c := l.cfg.Capacity
	var ev eviction
	skip := map[string]bool{}
	for _, id := range g.Claims {
		skip[id] = true
	}
	mine = l.leaveBig(g, &ev, mine)
	var queue []candidate
	for c.overLow(g.live()) {
		if len(queue) == 0 {
			var err error
			if queue, err = l.indexed4(ctx, g, skip); err != nil {
				return eviction{}, err
			}
		}
		switch {
		case len(queue) > 0 && (len(mine) == 0 || queue[0].band <= mine[0].band):
			skip[queue[0].doc.ID] = true
			if err := l.take(ctx, g, &ev, queue[0]); err != nil {
				return eviction{}, err
			}
			queue = queue[1:]
		case len(mine) > 0 && !c.over(g.live()):
			return ev, nil // the write's own episodes fit: the batch ends
		case len(mine) > 0:
			ev.full = ev.full || mine[0].band == evict.None
			l.leave(g, &ev, mine[0].doc)
			mine = mine[1:]
		default:
			return ev, nil // only guarded episodes are indexed
		}
	}
	return ev, nil
}

// leaveBig keeps out of the index the write's own documents larger than
// the token bound (no eviction could make room for them), and returns
// the others.
func (l *Layer) leaveBig(g *ledger, ev *eviction, mine []candidate) []candidate {
	c := l.cfg.Capacity
	return slices.DeleteFunc(mine, func(m candidate) bool {
		big := c.MaxTokens >= 0 && docTokens(m.doc.Text) > int64(c.MaxTokens)
		if big {
			l.leave(g, ev, m.doc)
		}
		return big
	})
}

// take evicts indexed candidate x, or re-bands it when its uses raise
// its band, and claims it.
func (l *Layer) take(ctx context.Context, g *ledger, ev *eviction, x candidate) error {
	moved, used, err := l.rebanded(ctx, g, x)
	switch {
	case err != nil:
		return err
	case moved != nil:
		// Claimed in its old band: a writer that still finds it there
		// leaves it to this one.
		ev.reband = append(ev.reband, *moved)
		g.claim(x.doc.ID + "@" + strconv.FormatInt(x.band, 10))
		return nil
	case used:
		ev.used = append(ev.used, x.doc.ID)
	}
	ev.victims = append(ev.victims, x.doc)
	g.add(-1, -docTokens(x.doc.Text))
	g.claim(x.doc.ID)
	return nil
}

// leave keeps one of the write's own documents out of the index.
func (l *Layer) leave(g *ledger, ev *eviction, d storage.Document) {
	ev.kept = append(ev.kept, d)
	g.add(-1, -docTokens(d.Text))
	g.claim(d.ID)
}

// victimBatch is how many indexed candidates one probe asks for.
const victimBatch = 4

// indexed4 returns the next indexed candidates, the lowest band first,
// leaving out those in skip and those below the log's base (a Clear not
// yet dropped).
func (l *Layer) indexed4(ctx context.Context, g *ledger, skip map[string]bool) ([]candidate, error) {
	c := l.cfg.Capacity
	now := clampTime(l.cfg.Now())
	top := evict.Band(c.policy().Key(evict.Item{Importance: 1, Uses: evict.MaxUses, Tokens: 1, Touched: now.Add(24 * time.Hour)}) + c.Reservoir*gumbelMax)
	hits, err := evict.Victims(ctx, l.ix, l.col, &g.Low, top, victimBatch, func(h storage.Hit) bool {
		return skip[h.ID] || skip[h.ID+"@"+h.Fields[evict.FieldBand]] || hitOf(h).seq < l.head.Base
	})
	if err != nil {
		return nil, fmt.Errorf("find episodes to evict: %w", err)
	}
	out := make([]candidate, len(hits))
	for i, h := range hits {
		b, _ := strconv.ParseInt(h.Fields[evict.FieldBand], 10, 64)
		out[i] = candidate{doc: storage.Document{ID: h.ID, Text: h.Text, Fields: h.Fields}, band: b}
	}
	return out, nil
}

// rebanded returns the document of candidate x with the band its uses
// give it, when that band is above the one it is indexed in: uses are
// counted apart and raise an episode's band when it comes up for
// eviction. It returns nil when x is to be evicted, and whether x has
// uses counted.
func (l *Layer) rebanded(ctx context.Context, g *ledger, x candidate) (*storage.Document, bool, error) {
	if !g.Uses {
		return nil, false, nil
	}
	hits, err := l.ix.Search(ctx, l.usecol, storage.Query{Filter: map[string]string{fieldUseDoc: x.doc.ID}, K: 1})
	if err != nil {
		return nil, false, fmt.Errorf("read the uses of %s: %w", x.doc.ID, err)
	}
	if len(hits) == 0 {
		return nil, false, nil
	}
	uses, _ := strconv.ParseInt(hits[0].Fields[fieldUses], 10, 64)
	at, _ := strconv.ParseInt(hits[0].Fields[fieldUsedAt], 10, 64)
	h := hitOf(storage.Hit{ID: x.doc.ID, Text: x.doc.Text, Fields: x.doc.Fields})
	k, ok := l.keyOf(x.doc.ID, h.ref, h.text, uses, time.Unix(0, at))
	if !ok || evict.Band(k) <= x.band {
		return nil, true, nil
	}
	d := storage.Document{ID: x.doc.ID, Text: x.doc.Text, Fields: maps.Clone(x.doc.Fields)}
	d.Fields[evict.FieldBand] = strconv.FormatInt(evict.Band(k), 10)
	return &d, true, nil
}

// apply carries out an eviction once its head is written: the victims
// leave the index for the evicted collection, with the write's own
// documents kept out, and their uses are dropped; re-banded documents
// are indexed with their new band.
func (l *Layer) apply(ctx context.Context, ev eviction) error {
	if ev.full {
		l.log.Logger.Warn("episodicmemory: the index is full of guarded episodes: a write's episodes are logged but not recalled",
			slog.String("layer", l.cfg.ID), slog.Int("kept_out", len(ev.kept)))
	}
	var ids []string
	moved := make([]storage.Document, 0, len(ev.victims)+len(ev.kept))
	for _, d := range slices.Concat(ev.victims, ev.kept) {
		ids = append(ids, d.ID)
		f := maps.Clone(d.Fields)
		delete(f, evict.FieldBand)
		moved = append(moved, storage.Document{ID: d.ID, Text: d.Text, Fields: f})
	}
	l.linkSearch.evicted(ids)
	var errs []error
	if len(ids) > 0 {
		errs = append(errs, l.ix.Unindex(ctx, l.col, ids...))
	}
	if len(ev.used) > 0 {
		errs = append(errs, l.ix.Unindex(ctx, l.usecol, ev.used...))
	}
	if len(moved) > 0 {
		errs = append(errs, l.ix.Index(ctx, l.evcol, moved...))
	}
	if len(ev.reband) > 0 {
		errs = append(errs, l.ix.Index(ctx, l.col, ev.reband...))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("evict: %w", err)
	}
	return nil
}

// dropEvict drops the collections of evicted episodes and of uses.
func (l *Layer) dropEvict(ctx context.Context) error {
	if l.private {
		return nil
	}
	return errors.Join(l.ix.Drop(ctx, l.evcol), l.ix.Drop(ctx, l.usecol))
}

// used notes the episodes a Recall showed or the read tool read, to be
// counted at Close.
func (l *Layer) used(hs ...hit) {
	if l.private {
		return
	}
	if l.uses == nil {
		l.uses = map[string]bool{}
	}
	for _, h := range hs {
		if h.seq < l.head.Next && h.pos >= 0 {
			l.uses[docID(h.seq, h.pos)] = true
		}
	}
}

// usedPicks notes the episodes a Recall showed (see used).
func (l *Layer) usedPicks(p []picked) {
	for i := range p {
		l.used(p[i].hit)
	}
}

// useGrain sets the shortest time between two counted uses of an
// episode, HalfLife/useGrain: uses closer together count once.
const useGrain = 64

// flushUses counts the uses noted since the last flush, once the index
// is at least half full (below that no eviction is near): one query per
// episode used and one Index call, once per run.
func (l *Layer) flushUses(ctx context.Context) error {
	if len(l.uses) == 0 || l.head.Cap == nil || !l.cfg.Capacity.half(l.head.Cap.live()) {
		clear(l.uses)
		return nil
	}
	now := clampTime(l.cfg.Now())
	grain := l.cfg.Capacity.HalfLife / useGrain
	var docs []storage.Document
	for _, id := range slices.Sorted(maps.Keys(l.uses)) {
		d, ok, err := l.useDoc(ctx, id, now, grain)
		if err != nil {
			return err
		}
		if ok {
			docs = append(docs, d)
		}
	}
	clear(l.uses)
	if len(docs) == 0 {
		return nil
	}
	if err := l.ix.Index(ctx, l.usecol, docs...); err != nil {
		return err
	}
	return l.markUses(ctx)
}

// useDoc returns the uses document of episode document id with one more
// use at now, and false when its last use is less than grain ago.
func (l *Layer) useDoc(ctx context.Context, id string, now time.Time, grain time.Duration) (storage.Document, bool, error) {
	hits, err := l.ix.Search(ctx, l.usecol, storage.Query{Filter: map[string]string{fieldUseDoc: id}, K: 1})
	if err != nil {
		return storage.Document{}, false, fmt.Errorf("read the uses of %s: %w", id, err)
	}
	var uses int64
	if len(hits) > 0 {
		f := hits[0].Fields
		at, _ := strconv.ParseInt(f[fieldUsedAt], 10, 64)
		if grain > 0 && now.Sub(time.Unix(0, at)) < grain {
			return storage.Document{}, false, nil // counted a moment ago
		}
		uses, _ = strconv.ParseInt(f[fieldUses], 10, 64)
	}
	return storage.Document{ID: id, Fields: map[string]string{fieldUseDoc: id,
		fieldUses: strconv.FormatInt(min(uses+1, evict.MaxUses), 10), fieldUsedAt: strconv.FormatInt(now.UnixNano(), 10)}}, true, nil
}

// markUses sets the ledger's Uses, once in the log's life (until Clear).
func (l *Layer) markUses(ctx context.Context) error {
	if l.head.Cap == nil || l.head.Cap.Uses {
		return nil
	}
	h, ok, err := l.updateHead(ctx, func(h *head) bool {
		if h.Cap == nil || h.Cap.Uses {
			return false
		}
		h.Cap = h.Cap.clone()
		h.Cap.Uses = true
		return true
	})
	if err != nil {
		return fmt.Errorf("count uses: %w", err)
	}
	if ok {
		l.head = h
	}
	return nil
}

// lookupEvicted finds the newest evicted episode m names.
func (l *Layer) lookupEvicted(ctx context.Context, m refMatch) (hit, bool, error) {
	if l.private {
		return hit{}, false, nil
	}
	return l.lookupIn(ctx, l.evcol, m)
}

// Evicted returns the episodes evicted from the index (see [Capacity]),
// newest eviction first, at most limit (at most storage.MaxK): each as
// its digest, with its segment. They are read whole by reference with
// [Layer.Read] while their segment is kept. A layer without the store's
// index evicts nothing.
func (l *Layer) Evicted(ctx context.Context, limit int) ([]Digest, error) {
	if err := l.unbound("Evicted"); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.private || limit <= 0 {
		return nil, nil
	}
	hs, err := l.ix.Search(ctx, l.evcol, storage.Query{Filter: map[string]string{fieldEp: "1"}, K: min(limit, storage.MaxK)})
	if err != nil {
		return nil, fmt.Errorf("episodicmemory: evicted: %w", err)
	}
	out := make([]Digest, 0, len(hs))
	for _, x := range hs {
		if h := hitOf(x); h.seq >= l.head.Base {
			out = append(out, Digest{Ref: h.ref, Thread: h.thread, Step: h.step, Time: h.time, Text: h.text, Seq: h.seq})
		}
	}
	return out, nil
}

// CapacityUsed returns the episodes the log's index holds for recall and
// the tokens of their digest lines, as the head's ledger counts them,
// and false when there is none (a private index, or a log not written
// since capacity was kept). It reads nothing.
func (l *Layer) CapacityUsed() (episodes, tokens int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.private || l.head.Cap == nil {
		return 0, 0, false
	}
	n, tok := l.head.Cap.live()
	return n, tok, true
}
