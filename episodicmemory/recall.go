package episodicmemory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/layer"
)

// indexResult is how much of a raw episode's result its recall document
// holds, besides its digest line.
const indexResult = 1024

// Recall returns the episodes most relevant to the user's input
// (q.Text) as one block, fenced with layer.Fence in a block named after
// the layer ID (<episodic_memory> by default):
//
//	<episodic_memory>
//	Earlier tool calls and turns, oldest first. [ref] is the reference: call episodic-memory_read with {"ref": "..."} to read a full result.
//	[call-3] step 1 cms_createPage {"title":"About"} → ok, 812 bytes: page-123, About; {"page":{…
//	[turn-4] step 2 turn: "Create an About page" → answered: Done, page-123 is live.
//	</episodic_memory>
//
// Candidates are the digests and raw episodes of the view. Each gets
//
//	score = SimilarityWeight·similarity + RecencyWeight·0.5^(age/HalfLife)
//
// where similarity is the BM25 similarity of the input to the episode's
// digest line (and, for raw episodes, its arguments and the first 1 KiB
// of its result), in [0, 1] (internal/lexical), and age is how many
// episodes are newer. The best Config.MaxRecall are taken (ties: the
// newer first), fewer when the block would not fit q.Budget (counted
// with q.Count), and shown oldest first. The result is a function of the
// log and the query only: the same inputs give the same block. It
// returns nothing when the log is empty.
func (l *Layer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.digests) + len(l.recent) + len(l.pending)
	if n == 0 {
		return nil, nil
	}
	if l.index == nil {
		l.buildIndex()
	}
	hits := l.index.Rank(q.Text)
	type cand struct {
		i     int // index in l.docs (age order: oldest first)
		score float64
	}
	cands := make([]cand, len(hits))
	hl := float64(l.cfg.HalfLife)
	for k, h := range hits {
		age := float64(n - 1 - h.Doc)
		cands[k] = cand{i: h.Doc, score: SimilarityWeight*h.Similarity + RecencyWeight*math.Exp2(-age/hl)}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(b.i, a.i)
	})
	cands = cands[:min(len(cands), l.cfg.MaxRecall)]
	pick := make([]int, len(cands))
	for k, c := range cands {
		pick[k] = c.i
	}
	budget, bounded := budgetOf(q)
	for len(pick) > 0 {
		block := l.render(slices.Sorted(slices.Values(pick)))
		tokens := q.Count(block)
		if !bounded || tokens <= budget {
			return []layer.Item{{Text: block, Tokens: tokens}}, nil
		}
		pick = pick[:len(pick)-1] // leave out the least relevant
	}
	return nil, nil
}

// budgetOf returns the query's budget in tokens, and false when it sets
// none (zero, or unbounded).
func budgetOf(q layer.Query) (int, bool) {
	b := q.Budget
	if b <= 0 || math.IsInf(b, 1) || math.IsNaN(b) {
		return 0, false
	}
	return int(b), true
}

// render writes the block of the chosen candidates, in age order.
func (l *Layer) render(chosen []int) string {
	var b strings.Builder
	b.WriteString("Earlier tool calls and turns, oldest first. [ref] is the reference: call ")
	b.WriteString(l.tool)
	b.WriteString(` with {"ref": "..."} to read a full result.`)
	for _, i := range chosen {
		b.WriteByte('\n')
		b.WriteString(l.docs[i])
	}
	return layer.Fence(l.tag, b.String())
}

// buildIndex indexes the candidates, oldest first: digests, raw
// episodes, pending episodes.
func (l *Layer) buildIndex() {
	ix := &lexical.Corpus{}
	docs := make([]string, 0, len(l.digests)+len(l.recent)+len(l.pending))
	for _, d := range l.digests {
		ix.Add(d.Ref, d.Text)
		docs = append(docs, d.Text)
	}
	for _, list := range [][]Episode{l.recent, l.pending} {
		for i := range list {
			e := &list[i]
			line := e.Digest()
			res, _ := cutResult(e.Result, indexResult)
			ix.Add(e.Ref, line+"\n"+e.Arguments+"\n"+e.Query+"\n"+res)
			docs = append(docs, line)
		}
	}
	l.index, l.docs = ix, docs
}
