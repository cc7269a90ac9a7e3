package semantictest

import (
	"cmp"
	"errors"
	"math"
	"slices"
	"testing"
)

// ranker scores every fact of a set for a query.
type ranker func(query string) []float64

// topK returns a searcher that returns the IDs of the k best-scored facts,
// ties by position in the set.
func topK(facts []Fact, score ranker) func(string, int) ([]string, error) {
	return func(query string, k int) ([]string, error) {
		return ids(facts, rank(score(query)))[:min(k, len(facts))], nil
	}
}

// rank returns the positions of scores, best first, ties by position.
func rank(scores []float64) []int {
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	return order
}

func ids(facts []Fact, order []int) []string {
	out := make([]string, len(order))
	for i, p := range order {
		out[i] = facts[p].ID
	}
	return out
}

// wordOverlap scores a fact by the number of distinct non-stop words it
// shares with the query: the naive sparse baseline.
func wordOverlap(facts []Fact) ranker {
	fw := make([]map[string]bool, len(facts))
	for i, f := range facts {
		fw[i] = words(f.Text, false)
	}
	return func(query string) []float64 {
		qw := words(query, false)
		scores := make([]float64, len(facts))
		for i := range facts {
			for w := range qw {
				if fw[i][w] {
					scores[i]++
				}
			}
		}
		return scores
	}
}

// ngramCosine scores a fact by the cosine similarity of its NGramEmbedder
// vector with the query's: the dense baseline.
func ngramCosine(t *testing.T, facts []Fact) ranker {
	texts := make([]string, len(facts))
	for i, f := range facts {
		texts[i] = f.Text
	}
	vecs, err := NGramEmbedder{}.EmbedDocuments(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	return func(query string) []float64 {
		q := embedOne(t, NGramEmbedder{}, query)
		scores := make([]float64, len(facts))
		for i, v := range vecs {
			scores[i] = dot(q, v)
		}
		return scores
	}
}

// rrf fuses rankers by reciprocal-rank fusion (k = 60): a fact's score is
// the sum, over the rankers that score it above 0, of 1/(60 + its rank).
func rrf(rankers ...ranker) ranker {
	return func(query string) []float64 {
		var fused []float64
		for _, r := range rankers {
			scores := r(query)
			if fused == nil {
				fused = make([]float64, len(scores))
			}
			for pos, i := range rank(scores) {
				if scores[i] > 0 {
					fused[i] += 1 / (60 + float64(pos+1))
				}
			}
		}
		return fused
	}
}

func oracle(set Set) func(string, int) ([]string, error) {
	byText := map[string][]string{}
	for _, q := range set.Queries {
		byText[q.Text] = q.Relevant
	}
	return func(query string, k int) ([]string, error) { return byText[query], nil }
}

func nothing(string, int) ([]string, error) { return nil, nil }

func mustRecall(t *testing.T, set Set, k int, search func(string, int) ([]string, error)) Result {
	t.Helper()
	r, err := RecallAtK(set, k, search)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestMemory60_RecallAtKBounds(t *testing.T) {
	set, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	none := mustRecall(t, set, 5, nothing)
	if none.All.Mean != 0 || none.Paraphrased.Mean != 0 || none.Other.Mean != 0 || len(none.Missed) != len(set.Queries) {
		t.Errorf("a searcher returning nothing: %v, %d missed; want 0 everywhere, all %d missed", none, len(none.Missed), len(set.Queries))
	}
	again, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	again.Queries[0].Relevant[0] = "changed"
	again.Facts[0].Text = "changed"
	if set.Queries[0].Relevant[0] == "changed" || set.Facts[0].Text == "changed" {
		t.Error("two Loads share memory")
	}
	all := mustRecall(t, set, 5, oracle(set))
	if all.All.Mean != 1 || all.Paraphrased.Mean != 1 || all.Other.Mean != 1 || len(all.Missed) != 0 {
		t.Errorf("the oracle: %v, missed %v; want 1 everywhere", all, all.Missed)
	}
	if all.All.Queries != len(set.Queries) || all.Paraphrased.Queries+all.Other.Queries != all.All.Queries || all.Paraphrased.Queries < 25 {
		t.Errorf("query counts %d = %d + %d; want %d split with at least 25 paraphrased",
			all.All.Queries, all.Paraphrased.Queries, all.Other.Queries, len(set.Queries))
	}
}

func TestMemory61_RecallAtKCounting(t *testing.T) {
	set := Set{
		Facts: []Fact{{ID: "a", Text: "a"}, {ID: "b", Text: "b"}, {ID: "c", Text: "c"}},
		Queries: []Query{
			{ID: "q1", Text: "one", Relevant: []string{"a", "b"}},
			{ID: "q2", Text: "two", Relevant: []string{"c"}, Paraphrase: true},
		},
	}
	answers := map[string][]string{
		"one": {"a", "a", "x", "b"}, // a counted once; b is fourth, past k = 3
		"two": {"c"},
	}
	r := mustRecall(t, set, 3, func(q string, k int) ([]string, error) {
		if k != 3 {
			t.Errorf("search got k = %d, want 3", k)
		}
		return answers[q], nil
	})
	want := Result{K: 3, All: Recall{2, 0.75}, Paraphrased: Recall{1, 1}, Other: Recall{1, 0.5}, Missed: []string{"q1"}}
	if r.K != want.K || r.All != want.All || r.Paraphrased != want.Paraphrased || r.Other != want.Other || !slices.Equal(r.Missed, want.Missed) {
		t.Errorf("got %+v, want %+v", r, want)
	}
	if got, want := r.String(), "recall@3 all 0.750 (2) paraphrased 1.000 (1) other 0.500 (1)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}

	boom := errors.New("boom")
	if _, err := RecallAtK(set, 3, func(string, int) ([]string, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("search error: got %v, want it wrapped", err)
	}
	if _, err := RecallAtK(set, 0, nothing); err == nil {
		t.Error("k = 0: want an error")
	}
	if _, err := RecallAtK(Set{}, 5, nothing); err == nil {
		t.Error("no query: want an error")
	}
	bad := set
	bad.Queries = append(slices.Clone(set.Queries), Query{ID: "q3", Text: "three", Relevant: []string{"zz"}})
	if err := bad.check(); err == nil {
		t.Error("a query naming an unknown fact: want check to fail")
	}
}

// TestMemory62_Baselines measures recall@5 of two trivial searchers and
// their reciprocal-rank fusion, proving the harness tells searchers
// apart. The figures are baselines for semanticmemory, not targets.
func TestMemory62_Baselines(t *testing.T) {
	set, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	sparse, dense := wordOverlap(set.Facts), ngramCosine(t, set.Facts)
	results := map[string]Result{}
	for _, c := range []struct {
		name  string
		score ranker
	}{
		{"word-overlap", sparse},
		{"ngram-cosine", dense},
		{"rrf(word-overlap, ngram-cosine)", rrf(sparse, dense)},
	} {
		r := mustRecall(t, set, 5, topK(set.Facts, c.score))
		results[c.name] = r
		t.Logf("FIGURE baseline %s: %v", c.name, r)
	}
	ov, ng := results["word-overlap"], results["ngram-cosine"]
	for name, r := range results {
		if r.All.Mean <= 0 || r.All.Mean >= 1 {
			t.Errorf("%s: recall@5 %.3f, want strictly between 0 and 1 on this set", name, r.All.Mean)
		}
	}
	if ov.All.Mean == ng.All.Mean && ov.Paraphrased.Mean == ng.Paraphrased.Mean {
		t.Error("word overlap and n-gram cosine score the same: the harness does not tell searchers apart")
	}
	// A paraphrase shares no word with its fact, so word overlap can only
	// find it by luck of ties; n-grams find those that share fragments.
	if ng.Paraphrased.Mean <= ov.Paraphrased.Mean {
		t.Errorf("paraphrased: n-gram cosine %.3f, not above word overlap %.3f", ng.Paraphrased.Mean, ov.Paraphrased.Mean)
	}
	if math.IsNaN(ov.All.Mean) || math.IsNaN(ng.All.Mean) {
		t.Error("NaN recall")
	}
}
