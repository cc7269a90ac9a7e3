package episodicmemory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/storage"
)

// recallPool is how many episodes the text search asks the index for at
// least, before recency re-ranks them.
const recallPool = 32

// Recall returns the episodes most relevant to the situation
// (q.Situation: the user's message, the scratchpad's goal and plan, the
// entities the recent turns touched, when the stack gives it; else
// q.Text) as one block, fenced with fence.Wrap in a block named after
// the layer ID (<episodic_memory> by default):
//
//	<episodic_memory>
//	Earlier tool calls and turns, oldest first. [ref] is the reference: call episodic_memory_read with {"ref": "..."} to read a full result.
//	[call-3] step 1 cms_createPage {"title":"About"} → ok, 812 bytes: page-123, About
//	[turn-4] step 2 "Create an About page" → Done, page-123 is live.
//	</episodic_memory>
//
// Candidates come from the index, which holds every episode of the log
// (raw or folded, by its digest line): the max(4·Config.MaxRecall, 32)
// episodes the query's text ranks best, and the Config.MaxRecall most
// recently indexed. Each gets
//
//	score = SimilarityWeight·similarity + RecencyWeight·0.5^(age/HalfLife)
//
// where similarity is the text score divided by the best one, in [0, 1]
// (BM25 in the in-memory store; the backend's full-text rank elsewhere),
// and age is how many segments (steps) are newer. The best
// Config.MaxRecall are taken (ties: the newer first), fewer when the
// block would not fit q.Budget (counted with q.Count), and shown oldest
// first. The result is a function of the log and the query only: the
// same inputs give the same block. It returns nothing when the log is
// empty.
func (l *Layer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pick, err := l.best(ctx, cmp.Or(q.Situation, q.Text))
	if err != nil {
		return nil, fmt.Errorf("episodicmemory: recall: %w", err)
	}
	for len(pick) > 0 {
		block := l.render(inLogOrder(pick))
		tokens := q.Count(block)
		if q.Budget <= 0 || tokens <= q.Budget { // zero or less: no budget given
			l.usedPicks(pick)
			return []layer.Item{{Text: block, Tokens: tokens}}, nil
		}
		pick = pick[:len(pick)-1] // leave out the least relevant
	}
	return nil, nil
}

// picked is an episode best chose, with its similarity to the query.
type picked struct {
	hit
	sim float64
}

// inLogOrder returns the picks oldest first.
func inLogOrder(p []picked) []picked {
	p = slices.Clone(p)
	slices.SortFunc(p, func(a, b picked) int { return cmpPos(a.hit, b.hit) })
	return p
}

// cmpPos orders episodes as the log does: by segment, then position.
func cmpPos(a, b hit) int {
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	return cmp.Compare(a.pos, b.pos)
}

// pendingHits returns the episodes not yet stored (a failed write) as
// hits that come after every stored one.
func (l *Layer) pendingHits() []hit {
	next := max(l.head.Next, 0)
	hs := make([]hit, len(l.pending))
	for i := range l.pending {
		e := &l.pending[i]
		hs[i] = hit{ref: e.Ref, thread: e.Thread, text: e.Digest(), seq: next, pos: i, step: e.Step, time: e.Time}
	}
	return hs
}

// best returns the Config.MaxRecall episodes most relevant to text, best
// first (see [Layer.Recall] for the score). The caller holds l.mu.
func (l *Layer) best(ctx context.Context, text string) ([]picked, error) {
	var byText []hit
	if strings.TrimSpace(text) != "" {
		var err error
		if byText, err = l.search(ctx, storage.Query{Text: text, K: min(max(4*l.cfg.MaxRecall, recallPool), storage.MaxK)}); err != nil {
			return nil, err
		}
	}
	recent, err := l.search(ctx, storage.Query{K: l.cfg.MaxRecall})
	if err != nil {
		return nil, err
	}
	linked, err := l.linkedHits(ctx, text, recent)
	if err != nil {
		return nil, err
	}
	recent = append(recent, l.pendingHits()...)
	cands := map[[2]int64]*picked{}
	newest := int64(-1)
	top := 0.0
	for _, h := range byText {
		top = max(top, h.score)
	}
	for k, list := range [][]hit{byText, recent} {
		for _, h := range list {
			newest = max(newest, h.seq)
			key := [2]int64{h.seq, int64(h.pos)}
			if cands[key] != nil {
				continue
			}
			p := &picked{hit: h}
			if k == 0 && top > 0 {
				p.sim = h.score / top
			}
			cands[key] = p
		}
	}
	newest = max(newest, addLinked(cands, linked))
	out := make([]picked, 0, len(cands))
	score := map[[2]int64]float64{}
	hl := float64(l.cfg.HalfLife)
	for key, p := range cands {
		score[key] = SimilarityWeight*p.sim + RecencyWeight*math.Exp2(-float64(newest-p.seq)/hl)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b picked) int {
		if c := cmp.Compare(score[[2]int64{b.seq, int64(b.pos)}], score[[2]int64{a.seq, int64(a.pos)}]); c != 0 {
			return c
		}
		return cmpPos(b.hit, a.hit)
	})
	return out[:min(len(out), l.cfg.MaxRecall)], nil
}

// render writes the block of the chosen episodes, in log order.
func (l *Layer) render(chosen []picked) string {
	var b strings.Builder
	l.header(&b)
	for _, p := range chosen {
		b.WriteByte('\n')
		b.WriteString(p.text)
	}
	return fence.Wrap(l.tag, b.String())
}

// header writes the block's first line: what it holds and how to read an
// episode whole.
func (l *Layer) header(b *strings.Builder) {
	b.WriteString("Earlier tool calls and turns, oldest first. [ref] is the reference: call ")
	b.WriteString(l.tool)
	b.WriteString(` with {"ref": "..."} to read a full result.`)
}

// RenderBlock shows the episodes scored assembly packed as Recall shows
// its picks: under the block's header, oldest first (the order
// Candidates offers them in). With every candidate, it is Recall's block.
func (l *Layer) RenderBlock(won []layer.Candidate) string {
	if len(won) == 0 {
		return ""
	}
	var b strings.Builder
	l.header(&b)
	for _, c := range won {
		b.WriteByte('\n')
		b.WriteString(c.Text)
	}
	return fence.Wrap(l.tag, b.String())
}

// Candidates returns the episodes Recall would choose from, the
// Config.MaxRecall most relevant to the situation (so scored assembly never
// shows more episodes than Recall would), as layer.Candidate values for
// scored assembly (prompt.Assemble), oldest first: Key is the reference,
// Text the digest line (tokens counted with q.Count), Similarity the
// text similarity in [0, 1] (as Recall uses it), Time when the episode
// happened as the log's order bounds it (an episode logged after another
// is never older, and a time after Config.Now counts as no newer than
// now or than later episodes, so no writer's clock can make an old
// episode the newest) and Source its thread. Importance is left zero.
func (l *Layer) Candidates(ctx context.Context, q layer.Query) ([]layer.Candidate, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pick, err := l.best(ctx, cmp.Or(q.Situation, q.Text))
	if err != nil {
		return nil, fmt.Errorf("episodicmemory: candidates: %w", err)
	}
	pick = inLogOrder(pick)
	out := make([]layer.Candidate, len(pick))
	now := clampTime(l.cfg.Now())
	for k, p := range pick {
		out[k] = layer.Candidate{Layer: l.cfg.ID, Key: p.ref, Source: p.thread, Text: p.text, Tokens: q.Count(p.text),
			Similarity: p.sim, Time: recency(pick, k, now)}
	}
	return out, nil
}

// recency returns the time scored assembly measures episode k's recency
// from: its time as the log's order bounds it among the picks, since the
// writer's clock may be wrong. An episode logged after another is never
// older than it; a time after now (a writer whose clock is ahead) counts
// as no later than the episodes logged after it, nor than now.
func recency(pick []picked, k int, now time.Time) time.Time {
	return prompt.OrderedTime(pick[k].seq, pick[k].time, now, func(yield func(int64, time.Time) bool) {
		for _, p := range pick {
			if !yield(p.seq, p.time) {
				return
			}
		}
	})
}
