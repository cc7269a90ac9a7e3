package semanticmemory

import (
	"cmp"
	"context"
	"log/slog"
	"math"
	"slices"
)

// RRFK is the k of reciprocal-rank fusion: a fact ranked r (from 1) by a
// ranker gets 1/(RRFK + r) from it.
const RRFK = 60

// scored is one fact's fused score and its similarity to the query.
type scored struct {
	fact  *Fact
	score float64 // Σ 1/(RRFK + rank) over the rankers that found it
	// sim is the best of the rankers' own similarities, in [0, 1]: BM25
	// divided by the query's top score, the cosine (or the vector
	// store's score).
	sim float64
}

// retrieve ranks the live facts for query with the rankers the layer has
// and fuses them: sparse (BM25 over the live facts, the facts with a
// positive score, in the corpus's order), and dense, either cosine
// similarity of the stored embeddings to the query's (with an Embedder;
// facts with a positive cosine, highest first, ties by ID) or the
// Config.VectorStore's search (its order, live versions only); sparse is
// left out with Config.NoSparse. The fused
// score of a fact is Σ 1/(RRFK + rank) over the rankings it is in; facts
// are returned highest score first, ties by ID. rankers is how many
// rankings took part (for normalising: a fact first in all of them
// scores rankers/(RRFK+1)). A failing dense ranker is logged and left
// out: retrieval falls back to sparse.
func (l *Layer) retrieve(ctx context.Context, query string) (out []scored, rankers int) {
	if query == "" || len(l.idx.live) == 0 {
		return nil, 0
	}
	fused := map[string]float64{}
	sim := map[string]float64{}
	if !l.cfg.NoSparse {
		rankers++
		rank := 0
		for _, h := range l.bm25().Rank(query) {
			if h.Score <= 0 {
				break
			}
			rank++
			fused[h.Key] += 1 / float64(RRFK+rank)
			sim[h.Key] = max(sim[h.Key], h.Similarity)
		}
	}
	if dense, ok := l.dense(ctx, query); ok {
		rankers++
		for i, h := range dense {
			fused[h.id] += 1 / float64(RRFK+i+1)
			sim[h.id] = max(sim[h.id], min(max(h.sim, 0), 1))
		}
	}
	out = make([]scored, 0, len(fused))
	for id, s := range fused {
		out = append(out, scored{fact: l.idx.live[id], score: s, sim: sim[id]})
	}
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.fact.ID, b.fact.ID)
	})
	return out, rankers
}

// denseHit is a live fact found by the dense ranker and its similarity
// to the query.
type denseHit struct {
	id  string
	sim float64
}

// dense returns the live facts in dense order, and false when there is
// no dense ranker or it failed.
func (l *Layer) dense(ctx context.Context, query string) ([]denseHit, bool) {
	switch {
	case l.cfg.VectorStore != nil:
		hits, err := l.cfg.VectorStore.search(ctx, l, query)
		if err != nil {
			l.log.Logger.LogAttrs(ctx, slog.LevelWarn, "semanticmemory: vector store search failed; sparse only",
				slog.String("layer", l.cfg.ID), slog.Any("error", err))
			return nil, false
		}
		return hits, true
	case l.cfg.Embedder != nil:
		qv, err := l.cfg.Embedder.EmbedQuery(ctx, query)
		if err != nil {
			l.log.Logger.LogAttrs(ctx, slog.LevelWarn, "semanticmemory: embedding the query failed; sparse only",
				slog.String("layer", l.cfg.ID), slog.Any("error", err))
			return nil, false
		}
		var hits []denseHit
		for id, f := range l.idx.live {
			if c := cosine(qv, f.Embedding); c > 0 {
				hits = append(hits, denseHit{id, c})
			}
		}
		slices.SortFunc(hits, func(a, b denseHit) int {
			if c := cmp.Compare(b.sim, a.sim); c != 0 {
				return c
			}
			return cmp.Compare(a.id, b.id)
		})
		return hits, true
	}
	return nil, false
}

// cosine returns the cosine similarity of a and b, 0 when their lengths
// differ or either is zero.
func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
