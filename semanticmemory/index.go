package semanticmemory

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/prompt"
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

// index is the in-process view of the log: every version of every fact,
// the BM25 corpus of the live ones, and postings for finding restated
// facts. It is rebuilt from the store at Init and updated as records
// are read.
type index struct {
	versions map[string][]Fact          // by ID, oldest first
	live     map[string]*Fact           // last version of every fact not forgotten
	seq      map[string]int64           // the record that wrote each live fact's version
	tokens   map[string]map[string]bool // distinct tokens of each live fact
	postings map[string][]string        // kind + "\x00" + token → IDs (may be stale)
	corpus   lexical.Corpus             // live facts; rebuilt when stale
	stale    bool                       // corpus holds a superseded or forgotten fact
	bytes    int                        // text bytes of the live facts
	maxNum   int64                      // the highest n of an ID "f<n>" seen, or -1
}

func (l *Layer) reset() {
	l.idx = index{versions: map[string][]Fact{}, live: map[string]*Fact{}, seq: map[string]int64{}, tokens: map[string]map[string]bool{}, postings: map[string][]string{}, maxNum: -1}
}

// apply takes the new fact versions of record seq into the index. A
// version that is not the next of its fact (already seen) is ignored.
func (l *Layer) apply(seq int64, facts []Fact) {
	x := &l.idx
	for _, f := range facts {
		vs := x.versions[f.ID]
		if len(vs) > 0 && vs[len(vs)-1].Version >= f.Version {
			continue
		}
		x.versions[f.ID] = append(vs, f)
		x.maxNum = max(x.maxNum, idNumber(f.ID))
		if old, ok := x.live[f.ID]; ok {
			x.bytes -= len(old.Text)
			delete(x.live, f.ID)
			delete(x.seq, f.ID)
			delete(x.tokens, f.ID)
			x.stale = true
		}
		if f.Forgotten {
			continue
		}
		nf := &x.versions[f.ID][len(x.versions[f.ID])-1]
		x.live[f.ID] = nf
		x.seq[f.ID] = seq
		x.bytes += len(f.Text)
		set := tokenSet(f.Text)
		x.tokens[f.ID] = set
		for t := range set {
			k := f.Kind + "\x00" + t
			x.postings[k] = append(x.postings[k], f.ID)
		}
		if !x.stale {
			x.corpus.Add(f.ID, f.Text)
		}
	}
}

// bm25 returns the corpus of the live facts, rebuilt if a fact left it.
// The scores depend only on the set of facts, not on the order they
// were added in.
func (l *Layer) bm25() *lexical.Corpus {
	x := &l.idx
	if x.stale {
		x.corpus = lexical.Corpus{}
		for _, id := range slices.Sorted(maps.Keys(x.live)) {
			x.corpus.Add(id, x.live[id].Text)
		}
		x.stale = false
	}
	return &x.corpus
}

func tokenSet(text string) map[string]bool {
	toks := lexical.Tokens(nil, text)
	set := make(map[string]bool, len(toks))
	for _, t := range toks {
		set[t] = true
	}
	return set
}

// restated returns the live fact of the given kind that text restates
// (the highest similarity at or above SupersedeThreshold, ties by ID), or
// nil.
func (l *Layer) restated(kind, text string) *Fact {
	x := &l.idx
	set := tokenSet(text)
	if len(set) == 0 {
		return nil
	}
	// Jaccard >= t needs at least m = ceil(t·|set|) shared tokens, so a
	// restated fact shares one of any |set|-m+1 tokens of the new text
	// (pigeonhole): collect the facts on the shortest postings of that
	// many tokens, then measure each exactly.
	toks := slices.Sorted(maps.Keys(set))
	slices.SortStableFunc(toks, func(a, b string) int {
		return cmp.Compare(len(x.postings[kind+"\x00"+a]), len(x.postings[kind+"\x00"+b]))
	})
	m := max(1, int(math.Ceil(SupersedeThreshold*float64(len(set))-1e-9)))
	seen := map[string]bool{}
	var near []string
	for _, t := range toks[:len(toks)-m+1] {
		for _, id := range x.postings[kind+"\x00"+t] {
			if !seen[id] {
				seen[id] = true
				near = append(near, id)
			}
		}
	}
	slices.Sort(near)
	var best *Fact
	bestSim := 0.0
	for _, id := range near {
		f, ok := x.live[id]
		if !ok || f.Kind != kind {
			continue
		}
		ft := x.tokens[id]
		n := 0
		for t := range set {
			if ft[t] {
				n++
			}
		}
		sim := float64(n) / float64(len(set)+len(ft)-n)
		if sim >= SupersedeThreshold && sim > bestSim {
			best, bestSim = f, sim
		}
	}
	return best
}

// recency returns the time scored assembly measures fact id's recency
// from: its Updated, as the store's order of writes bounds it, since the
// writer's clock may be wrong. A fact written after another (in a later
// record) is never older than it; a time after now (a writer whose clock
// is ahead) counts as no later than the facts written after it, nor than
// now. Only times not after now bound others. The layer's lock must be
// held.
func (x *index) recency(id string, now time.Time) time.Time {
	return prompt.OrderedTime(x.seq[id], x.live[id].Updated, now, func(yield func(int64, time.Time) bool) {
		for oid, o := range x.live {
			if !yield(x.seq[oid], o.Updated) {
				return
			}
		}
	})
}
