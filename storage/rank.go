package storage

import (
	"cmp"
	"slices"

	"github.com/memlayer/memlayer/internal/lexical"
)

// Ranked is a document a backend ranks in the process: its hit, the order
// it was indexed in (a higher Seq is newer) and its vector. Backends whose
// engine ranks text but not vectors (SQLite, Redis, PostgreSQL without
// pgvector) re-rank their text candidates and their most recent documents
// with [RankByVector] and [Fuse], so every backend orders alike.
type Ranked struct {
	Hit
	Seq    int64
	Vector []float32
}

// Rescore sets each row's score to its BM25 score for the distinct query
// terms terms, terms[j] weighed by idf[j], among documents of average
// length avg in terms, and sorts the rows ([SortRanked]). A backend that
// keeps its own document frequencies and reads a bounded number of
// candidates scores them with it, so that it ranks as [MemoryIndex] does.
func Rescore(rows []Ranked, terms []string, idf []float64, avg float64) {
	sc := lexical.NewScorer(terms, idf, avg)
	for i := range rows {
		rows[i].Score = sc.Score(rows[i].Text)
	}
	SortRanked(rows)
}

// SortRanked orders rs by score, then newest first.
func SortRanked(rs []Ranked) {
	slices.SortStableFunc(rs, func(a, b Ranked) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(b.Seq, a.Seq)
	})
}

// RankByVector ranks the distinct documents (by ID) of the candidate
// lists that have a vector of v's length by cosine similarity to v.
func RankByVector(v []float32, lists ...[]Ranked) []Ranked {
	seen := map[string]bool{}
	var out []Ranked
	for _, l := range lists {
		for _, r := range l {
			if seen[r.ID] || len(r.Vector) != len(v) {
				continue
			}
			seen[r.ID] = true
			r.Score = Cosine(r.Vector, v)
			out = append(out, r)
		}
	}
	SortRanked(out)
	return out
}

// Fuse merges rankings by reciprocal rank fusion: a document ranked r
// (from 1) by one ranking scores 1/(RRFK+r) from it.
func Fuse(rankings ...[]Ranked) []Ranked {
	at := map[string]int{}
	var out []Ranked
	for _, rk := range rankings {
		for i, r := range rk {
			j, ok := at[r.ID]
			if !ok {
				j = len(out)
				at[r.ID] = j
				r.Score = 0
				out = append(out, r)
			}
			out[j].Score += 1 / float64(RRFK+i+1)
		}
	}
	SortRanked(out)
	return out
}

// TopHits returns the hits of the first k of rs (nil when rs is empty).
func TopHits(rs []Ranked, k int) []Hit {
	if len(rs) == 0 {
		return nil
	}
	hits := make([]Hit, min(k, len(rs)))
	for i := range hits {
		hits[i] = rs[i].Hit
	}
	return hits
}
