package semanticmemory

import (
	"cmp"
	"context"
	"log/slog"
	"slices"

	"github.com/memlayer/memlayer/storage"
)

// RRFK is the k of reciprocal-rank fusion: a fact ranked r (from 1) by a
// ranker gets 1/(RRFK + r) from it.
const RRFK = 60

// retrievePool is how many facts each ranker asks the index for at
// least: the fusion of two rankings needs more than the TopK of each.
const retrievePool = 32

// scored is one fact's fused score and its similarity to the query.
type scored struct {
	fact  view
	score float64 // Σ 1/(RRFK + rank) over the rankers that found it
	// sim is the best of the rankers' own similarities, in [0, 1]: BM25
	// divided by the query's top score, the cosine (or the vector
	// store's score).
	sim float64
}

// retrieve ranks the live facts for query with the rankers the layer has
// and fuses them: sparse (the index's text search: BM25 or the
// backend's full-text rank), and dense, either the index's vector search
// over the stored embeddings (with an Embedder; facts with a positive
// cosine) or the Config.VectorStore's search (its order, live versions
// only); sparse is left out with Config.NoSparse. With a dense ranker,
// each ranker returns at most max(4·k, retrievePool) facts; sparse alone
// returns at most k, its own order being the fused one. The fused score of a fact is
// Σ 1/(RRFK + rank) over the rankings it is in; facts are returned
// highest score first, ties by ID. rankers is how many rankings took part
// (for normalising: a fact first in all of them scores
// rankers/(RRFK+1)). A failing dense ranker is logged and left out:
// retrieval falls back to sparse. A kind other than "" keeps the facts
// of that kind only.
func (l *Layer) retrieve(ctx context.Context, query, kind string, k int) (out []scored, rankers int, err error) {
	if query == "" {
		return nil, 0, nil
	}
	pool := min(max(4*k, retrievePool), storage.MaxK)
	if l.cfg.VectorStore == nil && l.cfg.Embedder == nil {
		// One ranking: the fusion keeps its order, so its best k are
		// all a caller takes.
		pool = min(k, storage.MaxK)
	}
	fused := map[string]float64{}
	sim := map[string]float64{}
	facts := map[string]view{}
	if !l.cfg.NoSparse {
		hits, err := l.ix.Search(ctx, l.col, storage.Query{Text: query, Filter: kindFilter(kind), K: pool})
		if err != nil {
			return nil, 0, err
		}
		rankers++
		// Equal scores rank by fact ID, not by the backend's order, so
		// the fusion is the same on every backend.
		slices.SortStableFunc(hits, func(a, b storage.Hit) int {
			return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.ID, b.ID))
		})
		for i, h := range hits {
			v := viewOf(h)
			facts[v.ID] = v
			fused[v.ID] += 1 / float64(RRFK+i+1)
			if hits[0].Score > 0 {
				sim[v.ID] = max(sim[v.ID], h.Score/hits[0].Score)
			}
		}
	}
	dense, ok, err := l.dense(ctx, query, kind, pool)
	if err != nil {
		return nil, 0, err
	}
	if ok {
		rankers++
		for i, h := range dense {
			facts[h.fact.ID] = h.fact
			fused[h.fact.ID] += 1 / float64(RRFK+i+1)
			sim[h.fact.ID] = max(sim[h.fact.ID], min(max(h.sim, 0), 1))
		}
	}
	out = make([]scored, 0, len(fused))
	for id, s := range fused {
		out = append(out, scored{fact: facts[id], score: s, sim: sim[id]})
	}
	slices.SortFunc(out, func(a, b scored) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.fact.ID, b.fact.ID))
	})
	return out, rankers, nil
}

// denseHit is a live fact found by the dense ranker and its similarity
// to the query.
type denseHit struct {
	fact view
	sim  float64
}

// dense returns the live facts (of kind, unless it is "") in dense
// order, and false when there is no dense ranker or it failed (logged).
// An error is the index's.
func (l *Layer) dense(ctx context.Context, query, kind string, k int) ([]denseHit, bool, error) {
	switch {
	case l.cfg.VectorStore != nil:
		hits, err := l.cfg.VectorStore.search(ctx, l, query)
		if err != nil {
			l.sparseOnly(ctx, "vector store search failed", err)
			return nil, false, nil
		}
		if kind != "" {
			hits = slices.DeleteFunc(hits, func(h denseHit) bool { return h.fact.Kind != kind })
		}
		return hits, true, nil
	case l.cfg.Embedder != nil:
		return l.embeddingHits(ctx, query, kind, k)
	}
	return nil, false, nil
}

// kindFilter returns the index filter that keeps the facts of kind, or
// nil (no filter) when kind is "".
func kindFilter(kind string) map[string]string {
	if kind == "" {
		return nil
	}
	return map[string]string{fieldKind: kind}
}

// embeddingHits returns the live facts whose embeddings have a positive
// cosine with the query's, by cosine then ID (see dense).
func (l *Layer) embeddingHits(ctx context.Context, query, kind string, k int) ([]denseHit, bool, error) {
	qv, err := l.cfg.Embedder.EmbedQuery(ctx, query)
	if err == nil {
		err = storage.ValidateDocument(storage.Document{ID: "q", Vector: qv})
	}
	if err != nil || len(qv) == 0 {
		l.sparseOnly(ctx, "embedding the query failed", err)
		return nil, false, nil
	}
	found, err := l.ix.Search(ctx, l.col, storage.Query{Vector: qv, Filter: kindFilter(kind), K: k})
	if err != nil {
		return nil, false, err
	}
	var hits []denseHit
	for _, h := range found {
		if h.Score > 0 {
			hits = append(hits, denseHit{viewOf(h), h.Score})
		}
	}
	slices.SortStableFunc(hits, func(a, b denseHit) int {
		return cmp.Or(cmp.Compare(b.sim, a.sim), cmp.Compare(a.fact.ID, b.fact.ID))
	})
	return hits, true, nil
}

// sparseOnly logs that the dense ranker failed (what, err) and recall
// ranks by the sparse one only.
func (l *Layer) sparseOnly(ctx context.Context, what string, err error) {
	l.log.Logger.LogAttrs(ctx, slog.LevelWarn, "semanticmemory: "+what+"; sparse only",
		slog.String("layer", l.cfg.ID), slog.Any("error", err))
}

// pinnedFacts returns the pinned live facts (see Config.PinKinds), the
// most recently indexed first, at most Config.MaxPinned.
func (l *Layer) pinnedFacts(ctx context.Context) ([]view, error) {
	if l.cfg.MaxPinned <= 0 {
		return nil, nil
	}
	hits, err := l.ix.Search(ctx, l.col, storage.Query{Filter: map[string]string{fieldPin: "1"}, K: l.cfg.MaxPinned})
	if err != nil {
		return nil, err
	}
	out := make([]view, len(hits))
	for i, h := range hits {
		out[i] = viewOf(h)
	}
	return out, nil
}

// shown returns the facts Recall shows for query, in order: the pinned
// facts, then the best matches not pinned, at most Config.TopK in all
// (Recall then fits them to its budget).
func (l *Layer) shown(ctx context.Context, query string) ([]scored, error) {
	pinned, err := l.pinnedFacts(ctx)
	if err != nil {
		return nil, err
	}
	// Pinned facts may rank among the best: TopK more than them leaves
	// TopK that are not.
	ranked, _, err := l.retrieve(ctx, query, "", l.cfg.TopK+len(pinned))
	if err != nil {
		return nil, err
	}
	out := make([]scored, 0, l.cfg.TopK)
	seen := map[string]bool{}
	sims := map[string]float64{}
	for _, s := range ranked {
		sims[s.fact.ID] = s.sim
	}
	for _, v := range pinned[:min(len(pinned), l.cfg.TopK)] {
		seen[v.ID] = true
		out = append(out, scored{fact: v, sim: sims[v.ID]})
	}
	for _, s := range ranked {
		if len(out) == l.cfg.TopK {
			break
		}
		if !seen[s.fact.ID] {
			seen[s.fact.ID] = true
			out = append(out, s)
		}
	}
	return out, nil
}
