package semanticmemory_test

import (
	"context"
	"slices"
	"testing"

	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/semanticmemory/semantictest"
	"github.com/memlayer/memlayer/storage"
)

// TestMemory15_RetrievalQuality runs the evaluation set of package
// semantictest (≥ 500 facts, ≥ 100 queries) through the layer's Search,
// sparse, dense (semantictest.NGramEmbedder) and hybrid, and logs
// recall@5 of each, paraphrased queries apart.
func TestMemory15_RetrievalQuality(t *testing.T) {
	set, err := semantictest.Load()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	run := func(name string, cfg semanticmemory.Config) semantictest.Result {
		l := bind(t, cfg, storage.NewMemoryStore(), "eval")
		toSet := map[string]string{} // the layer's fact ID → the set's
		merged := 0
		for _, f := range set.Facts {
			got, err := l.Remember(ctx, semanticmemory.Memo{Text: f.Text, Kind: f.Kind, Importance: 0.5})
			if err != nil {
				t.Fatalf("%s: Remember(%s): %v", name, f.ID, err)
			}
			if got.Version > 1 {
				merged++ // superseded an earlier fact of the set: the newer text answers
			}
			toSet[got.ID] = f.ID
		}
		res, err := semantictest.RecallAtK(set, 5, func(q string, k int) ([]string, error) {
			hits, err := l.Search(ctx, q, k)
			ids := make([]string, len(hits))
			for i, h := range hits {
				ids[i] = toSet[h.ID]
			}
			return ids, err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("FIGURE %s: %v (facts superseded by a restatement: %d of %d)", name, res, merged, len(set.Facts))
		return res
	}
	sparse := run("sparse", semanticmemory.Config{})
	dense := run("dense", semanticmemory.Config{NoSparse: true, Embedder: semantictest.NGramEmbedder{}})
	hybrid := run("hybrid", semanticmemory.Config{Embedder: semantictest.NGramEmbedder{}})
	// The issue asks for hybrid >= the better of the two. With stemming
	// (internal/lexical.Stem) sparse went from 0.574 to 0.619 and hybrid
	// from 0.578 to 0.615, 0.004 below sparse: every query's "what", "the"
	// and "is" gave every fact a small BM25 score, so sparse ranked facts
	// that shared nothing else with the query, and fusion carried that
	// noise. Changing the fusion did not help (measured 2026-11-27):
	// cutting the dense list, or both, to their top 5 to 100 facts,
	// similarity floors on the cosine, or letting dense rerank only what
	// sparse found all gave 0.615, but one window fitted to these queries
	// (both lists cut to their top 8 to 10). With stop words left out of
	// BM25 (internal/lexical) sparse and hybrid both reach 0.639 and dense
	// stays 0.590. Asserted: hybrid is at least the better single ranker,
	// and the measured figures hold (so that a regression fails); the
	// test logs the queries each one misses alone.
	if best := max(sparse.All.Mean, dense.All.Mean); hybrid.All.Mean < best {
		t.Errorf("recall@5: hybrid %.3f is below the better single ranker (%.3f)", hybrid.All.Mean, best)
	}
	if sparse.All.Mean < 0.63 || hybrid.All.Mean < 0.63 || dense.All.Mean < 0.58 {
		t.Errorf("recall@5: hybrid %.3f, sparse %.3f, dense %.3f; want at least 0.63, 0.63, 0.58", hybrid.All.Mean, sparse.All.Mean, dense.All.Mean)
	}
	t.Logf("FIGURE queries missed (a relevant fact not in the top 5) by hybrid, not sparse: %v; by sparse, not hybrid: %v",
		without(hybrid.Missed, sparse.Missed), without(sparse.Missed, hybrid.Missed))
}

// without returns the elements of a that are not in b.
func without(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}
