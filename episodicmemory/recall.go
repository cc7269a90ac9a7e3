package episodicmemory

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/fence"
)

// Recall returns the episodes most relevant to the user's input
// (q.Text) as one block, fenced with fence.Wrap in a block named after
// the layer ID (<episodic_memory> by default):
//
//	<episodic_memory>
//	Earlier tool calls and turns, oldest first. [ref] is the reference: call episodic-memory_read with {"ref": "..."} to read a full result.
//	[call-3] step 1 cms_createPage {"title":"About"} → ok, 812 bytes: page-123, About
//	[turn-4] step 2 turn: "Create an About page" → answered: Done, page-123 is live.
//	</episodic_memory>
//
// Candidates are the digests and raw episodes of the view. Each gets
//
//	score = SimilarityWeight·similarity + RecencyWeight·0.5^(age/HalfLife)
//
// where similarity is the BM25 similarity of the input to the episode's
// digest line (which holds the tool, the arguments, the IDs and names
// found, or the start of a result without them), in [0, 1] (internal/lexical), and
// age is how many episodes are newer. The best Config.MaxRecall are taken (ties: the
// newer first), fewer when the block would not fit q.Budget (counted
// with q.Count), and shown oldest first. The result is a function of the
// log and the query only: the same inputs give the same block. It
// returns nothing when the log is empty.
func (l *Layer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var pick []int
	for _, p := range l.best(q.Text) {
		pick = append(pick, p.i)
	}
	for len(pick) > 0 {
		block := l.render(slices.Sorted(slices.Values(pick)))
		tokens := q.Count(block)
		if q.Budget <= 0 || tokens <= q.Budget { // zero or less: no budget given
			return []layer.Item{{Text: block, Tokens: tokens}}, nil
		}
		pick = pick[:len(pick)-1] // leave out the least relevant
	}
	return nil, nil
}

// picked is an episode best chose: its index in l.docs (age order:
// oldest first) and its BM25 similarity to the text.
type picked struct {
	i   int
	sim float64
}

// best returns the Config.MaxRecall episodes most relevant to text, best
// first (see [Layer.Recall] for the score). The caller holds l.mu.
func (l *Layer) best(text string) []picked {
	n := len(l.digests) + len(l.recent) + len(l.pending)
	if n == 0 {
		return nil
	}
	l.syncIndex()
	hits := l.index.Rank(text)
	type cand struct {
		picked
		score float64
	}
	cands := make([]cand, len(hits))
	hl := float64(l.cfg.HalfLife)
	for k, h := range hits {
		age := float64(n - 1 - h.Doc)
		cands[k] = cand{picked{h.Doc, h.Similarity}, SimilarityWeight*h.Similarity + RecencyWeight*math.Exp2(-age/hl)}
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(b.i, a.i)
	})
	cands = cands[:min(len(cands), l.cfg.MaxRecall)]
	out := make([]picked, len(cands))
	for k, c := range cands {
		out[k] = c.picked
	}
	return out
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
	return fence.Wrap(l.tag, b.String())
}

// syncIndex brings the recall index up to the candidates: digests, raw
// episodes and pending episodes, oldest first, each indexed by its
// digest line (the same text whether the episode is raw or folded, so
// a compaction changes no score). Appended candidates are added; the
// index is rebuilt when it was dropped or pending episodes (not yet
// numbered) are among the candidates.
func (l *Layer) syncIndex() {
	if l.index == nil || l.indexed < 0 || len(l.pending) > 0 || l.indexed > len(l.digests)+len(l.recent) {
		l.index, l.docs, l.indexed = &lexical.Corpus{}, nil, 0
	}
	for ; l.indexed < len(l.digests)+len(l.recent); l.indexed++ {
		var ref, line string
		if i := l.indexed; i < len(l.digests) {
			ref, line = l.digests[i].Ref, l.digests[i].Text
		} else {
			e := &l.recent[i-len(l.digests)]
			ref, line = e.Ref, e.Digest()
		}
		l.index.Add(ref, line)
		l.docs = append(l.docs, line)
	}
	if len(l.pending) > 0 {
		for i := range l.pending {
			line := l.pending[i].Digest()
			l.index.Add(l.pending[i].Ref, line)
			l.docs = append(l.docs, line)
		}
		l.indexed = -1 // the pending episodes are renamed once appended
	}
}

// Candidates returns the episodes Recall would choose from, the
// Config.MaxRecall most relevant to q.Text (so scored assembly never
// shows more episodes than Recall would), as prompt.Candidate values for
// scored assembly (prompt.Assemble), oldest first: Key is the reference,
// Text the digest line (tokens counted with q.Count), Similarity the
// BM25 similarity to q.Text in [0, 1] (as Recall uses it), Time when the
// episode happened as the log's order bounds it (an episode logged after
// another is never older, and a time after Config.Now counts as no newer
// than now or than later episodes, so no writer's clock can make an old
// episode the newest) and Source its thread. Importance is left zero.
func (l *Layer) Candidates(ctx context.Context, q layer.Query) ([]prompt.Candidate, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pick := l.best(q.Text)
	slices.SortFunc(pick, func(a, b picked) int { return cmp.Compare(a.i, b.i) })
	out := make([]prompt.Candidate, len(pick))
	now := clampTime(l.cfg.Now())
	for k, p := range pick {
		i, line := p.i, l.docs[p.i]
		c := prompt.Candidate{Layer: l.cfg.ID, Text: line, Tokens: q.Count(line), Similarity: p.sim, Time: l.recency(i, now)}
		switch {
		case i < len(l.digests):
			d := &l.digests[i]
			c.Key, c.Source = d.Ref, d.Thread
		case i < len(l.digests)+len(l.recent):
			e := &l.recent[i-len(l.digests)]
			c.Key, c.Source = e.Ref, e.Thread
		default:
			e := &l.pending[i-len(l.digests)-len(l.recent)]
			c.Key, c.Source = e.Ref, e.Thread
		}
		out[k] = c
	}
	return out, nil
}

// logged returns where doc i (a digest, a recent or a pending episode)
// stands in the log, and its time as its writer's clock stamped it.
// Pending episodes come after every stored one.
func (l *Layer) logged(i int) (seq int64, t time.Time) {
	switch {
	case i < len(l.digests):
		d := &l.digests[i]
		return d.Seq, d.Time
	case i < len(l.digests)+len(l.recent):
		e := &l.recent[i-len(l.digests)]
		return e.seq, e.Time
	default:
		return math.MaxInt64, l.pending[i-len(l.digests)-len(l.recent)].Time
	}
}

// recency returns the time scored assembly measures doc i's recency from:
// its time as the log's order bounds it, since the writer's clock may be
// wrong. An episode logged after another is never older than it; a time
// after now (a writer whose clock is ahead) counts as no later than the
// episodes logged after it, nor than now. Only times not after now bound
// others.
func (l *Layer) recency(i int, now time.Time) time.Time {
	seq, t := l.logged(i)
	return prompt.OrderedTime(seq, t, now, func(yield func(int64, time.Time) bool) {
		for j := range len(l.digests) + len(l.recent) + len(l.pending) {
			if !yield(l.logged(j)) {
				return
			}
		}
	})
}
