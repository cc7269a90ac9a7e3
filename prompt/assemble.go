package prompt

import (
	"cmp"
	"container/heap"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memlayer/memlayer/layer"
)

// Scoring weighs the parts of a candidate's score in [Assemble]:
//
//	score = Similarity·sim + Recency·exp(−λ·age) + Importance·imp − Redundancy·red
//
// where λ = ln 2 / HalfLife, age is Now minus the candidate's Time, and
// red is the candidate's largest overlap with what is already selected
// (the Jaccard index of their sets of words, estimated: see signature). The zero Scoring uses
// [DefaultScoring]'s weights; a zero HalfLife is DefaultScoring's and a
// zero Now is time.Now() at the call.
type Scoring struct {
	Similarity, Recency, Importance, Redundancy float64
	// HalfLife is the age at which recency is worth half.
	HalfLife time.Duration
	// Novelty is the overlap at or above which a candidate is a
	// near-duplicate of one already selected and is skipped; zero means
	// DefaultScoring's, and 1 or more turns the filter off.
	Novelty float64
	// Now is the time recency is measured from.
	Now time.Time
}

// DefaultScoring is the scoring used when a Scoring's weights are all
// zero: α .40, β .25, γ .25, δ .10, a week's half-life, and near-duplicates
// (an overlap of 0.8 or more) skipped.
var DefaultScoring = Scoring{Similarity: 0.40, Recency: 0.25, Importance: 0.25, Redundancy: 0.10, HalfLife: 7 * 24 * time.Hour, Novelty: 0.8}

// Selected is a candidate [Assemble] packed, with its score when it was
// chosen.
type Selected struct {
	layer.Candidate
	Score float64
	// Redundancy is its largest overlap with the candidates selected
	// before it.
	Redundancy float64
}

// Assemble selects candidates for a pool of tokens: greedily, the one
// with the highest score that still fits, until none fits. A candidate's
// redundancy, and so its score, is measured against those selected before
// it; one too close to a selected one (see Scoring.Novelty) is skipped.
// Candidates with no text, or with negative or more tokens than the pool,
// are never selected. Ties are broken by Layer, then Key, then the order
// of cands, so the same inputs always give the same result. The selected
// candidates come in the order they were chosen, and their tokens never
// add up to more than pool.
func Assemble(cands []layer.Candidate, pool int, s Scoring) []Selected {
	s = s.withDefaults()
	items := newAssembly(cands, pool, s)
	var out []Selected
	var picked []*candidate
	left := pool
	for items.Len() > 0 && left > 0 {
		top := items[0]
		if top.c.Tokens > left {
			heap.Pop(&items) // it can only fit less from now on
			continue
		}
		// Its words are read the first time it comes to the top: most
		// candidates of a large set never do.
		if !top.signed {
			top.sig, top.signed = sign(top.c.Text), true
		}
		// Bring its redundancy up to date with what was picked since it
		// was last scored. Redundancy only grows, so a score can only
		// fall: if it is still the best after the update, it is the best.
		if top.seen < len(picked) {
			top.rescore(picked, s)
			if top.red >= s.Novelty {
				heap.Pop(&items)
				continue
			}
			heap.Fix(&items, 0)
			if items[0] != top {
				continue
			}
		}
		heap.Pop(&items)
		picked = append(picked, top)
		left -= top.c.Tokens
		out = append(out, Selected{Candidate: top.c, Score: top.score, Redundancy: top.red})
	}
	return out
}

// newAssembly returns the heap of the candidates of cands that may be
// selected from pool, scored without redundancy.
func newAssembly(cands []layer.Candidate, pool int, s Scoring) assembly {
	lambda := math.Ln2 / s.HalfLife.Seconds()
	all := make([]candidate, 0, len(cands))
	items := make(assembly, 0, len(cands))
	for i, c := range cands {
		if c.Text == "" || c.Tokens < 0 || c.Tokens > pool {
			continue
		}
		base := s.base(c, lambda)
		all = append(all, candidate{c: c, order: i, base: base, score: base})
		items = append(items, &all[len(all)-1])
	}
	heap.Init(&items)
	return items
}

// rescore brings c's redundancy and score up to date with the candidates
// picked since it was last scored.
func (c *candidate) rescore(picked []*candidate, s Scoring) {
	for _, p := range picked[c.seen:] {
		o := overlap(c.sig, p.sig)
		if o >= s.Novelty {
			// Before skipping it, make sure: a collision of two words'
			// bits is not a duplicate.
			o = exactOverlap(c.c.Text, p.c.Text)
		}
		c.red = max(c.red, o)
	}
	c.seen = len(picked)
	c.score = c.base - s.Redundancy*c.red
}

// Score returns the score [Assemble] gives c before any redundancy (what
// it scores when nothing is selected yet): Similarity·sim +
// Recency·exp(−λ·age) + Importance·imp, with s's defaults filled in as
// Assemble fills them (so a zero Now is time.Now() at the call).
func (s Scoring) Score(c layer.Candidate) float64 {
	s = s.withDefaults()
	return s.base(c, math.Ln2/s.HalfLife.Seconds())
}

// base is c's score without redundancy, for λ = lambda.
func (s Scoring) base(c layer.Candidate, lambda float64) float64 {
	recency := 0.0
	if !c.Time.IsZero() {
		recency = math.Exp(-lambda * max(s.Now.Sub(c.Time).Seconds(), 0))
	}
	return s.Similarity*clamp01(c.Similarity) + s.Recency*recency + s.Importance*clamp01(c.Importance)
}

func (s Scoring) withDefaults() Scoring {
	if s.Similarity == 0 && s.Recency == 0 && s.Importance == 0 && s.Redundancy == 0 {
		s.Similarity, s.Recency, s.Importance, s.Redundancy = DefaultScoring.Similarity, DefaultScoring.Recency, DefaultScoring.Importance, DefaultScoring.Redundancy
	}
	if s.HalfLife <= 0 {
		s.HalfLife = DefaultScoring.HalfLife
	}
	if s.Novelty <= 0 {
		s.Novelty = DefaultScoring.Novelty
	}
	if s.Now.IsZero() {
		s.Now = time.Now()
	}
	return s
}

func clamp01(f float64) float64 {
	if !(f > 0) { // NaN too
		return 0
	}
	return min(f, 1)
}

// candidate is a candidate being assembled.
type candidate struct {
	c      layer.Candidate
	order  int
	base   float64   // the score without redundancy
	score  float64   // base − δ·red
	red    float64   // largest overlap with picked[:seen]
	seen   int       // how many picked candidates red accounts for
	sig    signature // its words, once signed
	signed bool
}

// assembly is a max-heap of candidates by score, then the tie-break order.
type assembly []*candidate

func (a assembly) Len() int { return len(a) }
func (a assembly) Less(i, j int) bool {
	x, y := a[i], a[j]
	if x.score != y.score {
		return x.score > y.score
	}
	if c := cmp.Compare(x.c.Layer, y.c.Layer); c != 0 {
		return c < 0
	}
	if c := cmp.Compare(x.c.Key, y.c.Key); c != 0 {
		return c < 0
	}
	return x.order < y.order
}
func (a assembly) Swap(i, j int) { a[i], a[j] = a[j], a[i] }
func (a *assembly) Push(x any)   { *a = append(*a, x.(*candidate)) }
func (a *assembly) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// signature is a set of words as 256 bits: each word (a run of letters,
// digits, '_' and '-', lowered) sets the bit its 64-bit FNV-1a hash picks. The
// overlap of two texts is estimated from their signatures: exact for
// texts without colliding words, and about 0.03 too high for two unrelated
// texts of 15 words each, far below the novelty threshold. Two short texts
// can still collide into a false duplicate ("blk_331a2a8d9866" and
// "blk_1429627cb996" share both bits), so a pair estimated at the
// threshold or above is measured exactly (see exactOverlap).
type signature [4]uint64

func sign(text string) signature {
	var s signature
	h, in := uint64(14695981039346656037), false
	end := func() {
		if in {
			s[h>>62] |= 1 << (h & 63)
		}
		h, in = 14695981039346656037, false
	}
	for _, r := range text {
		if !isWordRune(r) {
			end()
			continue
		}
		h = (h ^ uint64(unicode.ToLower(r))) * 1099511628211
		in = true
	}
	end()
	return s
}

// isWordRune reports whether r is part of a word: a letter, a digit, or
// '_' or '-', which join the parts of an identifier ("page_1",
// "call-3-0"), so that two records that differ only in their IDs are not
// taken for copies.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiWordRunes[r]
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// asciiWordRunes holds the ASCII runes of words: letters, digits, '_'
// and '-'.
var asciiWordRunes = func() (t [utf8.RuneSelf]bool) {
	for _, c := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-" {
		t[c] = true
	}
	return t
}()

// eachWord calls f with each word of text (see isWordRune), lowered.
func eachWord(text string, f func(string)) {
	start := -1
	for i, r := range text {
		if isWordRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			f(strings.ToLower(text[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		f(strings.ToLower(text[start:]))
	}
}

// exactOverlap is the Jaccard index of a's and b's sets of words, 0 when
// both have none. Only a pair the signatures put at the novelty threshold
// or above is measured so, which is rare.
func exactOverlap(a, b string) float64 {
	words := func(text string) []string {
		var ws []string
		eachWord(text, func(w string) { ws = append(ws, w) })
		slices.Sort(ws)
		return slices.Compact(ws)
	}
	wa, wb := words(a), words(b)
	and := 0
	for _, w := range wa {
		if _, ok := slices.BinarySearch(wb, w); ok {
			and++
		}
	}
	or := len(wa) + len(wb) - and
	if or == 0 {
		return 0
	}
	return float64(and) / float64(or)
}

// overlap is the Jaccard index of two signatures, 0 when both are empty.
func overlap(a, b signature) float64 {
	var and, or int
	for i := range a {
		and += bits.OnesCount64(a[i] & b[i])
		or += bits.OnesCount64(a[i] | b[i])
	}
	if or == 0 {
		return 0
	}
	return float64(and) / float64(or)
}
