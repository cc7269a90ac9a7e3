package prompt_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func keys(sel []prompt.Selected) []string {
	var out []string
	for _, s := range sel {
		out = append(out, s.Layer+"/"+s.Key)
	}
	return out
}

func TestAssembleOrderAndPool(t *testing.T) {
	cands := []layer.Candidate{
		{Layer: "facts", Key: "a", Text: "the user prefers dark mode", Tokens: 10, Similarity: 0.9, Importance: 0.5, Time: now},
		{Layer: "facts", Key: "b", Text: "the billing plan is annual", Tokens: 10, Similarity: 0.2, Importance: 0.5, Time: now},
		{Layer: "episodes", Key: "c", Text: "created page Pricing FAQ", Tokens: 15, Similarity: 0.6, Importance: 0.5, Time: now},
		{Layer: "facts", Key: "d", Text: "too large", Tokens: 100, Similarity: 1, Importance: 1, Time: now},
	}
	got := keys(prompt.Assemble(cands, 30, prompt.Scoring{Now: now}))
	if want := []string{"facts/a", "episodes/c"}; !slices.Equal(got, want) {
		t.Errorf("selected %v, want %v (b does not fit after a and c; d never fits)", got, want)
	}
	got = keys(prompt.Assemble(cands, 100, prompt.Scoring{Now: now}))
	if want := []string{"facts/d"}; !slices.Equal(got, want) {
		t.Errorf("pool 100: selected %v, want %v", got, want)
	}
}

func TestAssembleRecencyHalfLife(t *testing.T) {
	s := prompt.Scoring{Recency: 1, Now: now, HalfLife: time.Hour}
	sel := prompt.Assemble([]layer.Candidate{{Layer: "l", Key: "k", Text: "x", Tokens: 1, Time: now.Add(-time.Hour)}}, 10, s)
	if len(sel) != 1 || math.Abs(sel[0].Score-0.5) > 1e-9 {
		t.Fatalf("score %v, want 0.5 at one half-life", sel)
	}
	sel = prompt.Assemble([]layer.Candidate{{Layer: "l", Key: "k", Text: "x", Tokens: 1}}, 10, s)
	if sel[0].Score != 0 {
		t.Errorf("zero time: score %v, want 0", sel[0].Score)
	}
}

// A candidate that repeats a selected one loses to a less similar one
// that says something new, and a near-duplicate is skipped.
func TestAssembleRedundancy(t *testing.T) {
	cands := []layer.Candidate{
		{Layer: "f", Key: "1", Text: "the hero section of the Spring Sale page has a video", Tokens: 5, Similarity: 0.80},
		{Layer: "f", Key: "2", Text: "the hero section of the Spring Sale page has a video background", Tokens: 5, Similarity: 0.79},
		{Layer: "f", Key: "3", Text: "the hero section of the Spring Sale page has an image", Tokens: 5, Similarity: 0.78},
		{Layer: "f", Key: "4", Text: "invoices are sent on the first of the month", Tokens: 5, Similarity: 0.74},
	}
	sel := prompt.Assemble(cands, 10, prompt.Scoring{Similarity: 1, Redundancy: 1, Now: now})
	if got, want := keys(sel), []string{"f/1", "f/4"}; !slices.Equal(got, want) {
		t.Errorf("selected %v, want %v", got, want)
	}
	sel = prompt.Assemble(cands, 100, prompt.Scoring{Similarity: 1, Redundancy: 0.01, Now: now})
	if got := keys(sel); slices.Contains(got, "f/2") {
		t.Errorf("selected %v: f/2 is a near-duplicate of f/1", got)
	}
	sel = prompt.Assemble(cands, 100, prompt.Scoring{Similarity: 1, Redundancy: 0.01, Novelty: 1, Now: now})
	if len(sel) != 4 {
		t.Errorf("novelty filter off: %d selected, want 4", len(sel))
	}
}

// The same candidates in any order give the same selection.
func TestAssembleDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cands := genCandidates(r, 300)
	want := prompt.Assemble(cands, 2000, prompt.Scoring{Now: now})
	for range 5 {
		r.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
		got := prompt.Assemble(cands, 2000, prompt.Scoring{Now: now})
		if !slices.Equal(keys(got), keys(want)) {
			t.Fatalf("shuffled input selected %v, want %v", keys(got), keys(want))
		}
	}
}

func genCandidates(r *rand.Rand, n int) []layer.Candidate {
	vocab := []string{"page", "pricing", "faq", "hero", "section", "spring", "sale", "invoice", "user", "prefers", "dark", "mode", "billing", "annual", "menu", "footer", "asset", "logo", "publish", "draft"}
	for i := range 500 { // the rest of a realistic vocabulary
		vocab = append(vocab, fmt.Sprintf("w%03d", i))
	}
	out := make([]layer.Candidate, n)
	for i := range out {
		var text string
		for range 8 + r.IntN(12) {
			text += vocab[r.IntN(len(vocab))] + " "
		}
		out[i] = layer.Candidate{
			Layer: []string{"semantic", "episodic", "history_summary"}[i%3], Key: fmt.Sprintf("k%04d", i),
			Text: text, Tokens: 10 + r.IntN(60), Similarity: r.Float64(), Importance: r.Float64(),
			Time: now.Add(-time.Duration(r.IntN(1000)) * time.Hour),
		}
	}
	return out
}

// FuzzAssemble: the selected tokens never exceed the pool, nothing is
// selected twice, and every selected candidate was offered.
func FuzzAssemble(f *testing.F) {
	f.Add(uint64(1), 50, 500)
	f.Add(uint64(2), 0, 10)
	f.Add(uint64(3), 200, 0)
	f.Fuzz(func(t *testing.T, seed uint64, n, pool int) {
		n = min(max(n, 0), 400)
		r := rand.New(rand.NewPCG(seed, seed^0x9e37))
		cands := genCandidates(r, n)
		for i := range cands {
			switch r.IntN(8) {
			case 0:
				cands[i].Tokens = -cands[i].Tokens
			case 1:
				cands[i].Similarity = math.NaN()
			case 2:
				cands[i].Text = ""
			}
		}
		sel := prompt.Assemble(cands, pool, prompt.Scoring{Now: now})
		used := 0
		seen := map[string]bool{}
		for _, s := range sel {
			if s.Tokens < 0 || s.Text == "" || seen[s.Layer+s.Key] {
				t.Fatalf("bad selection %+v", s)
			}
			seen[s.Layer+s.Key] = true
			used += s.Tokens
		}
		if used > max(pool, 0) || pool <= 0 && len(sel) > 0 {
			t.Fatalf("%d tokens (%d candidates) selected for a pool of %d", used, len(sel), pool)
		}
	})
}

// BenchmarkAssemble packs 1,000 candidates into a pool of 4,000 tokens.
func BenchmarkAssemble(b *testing.B) {
	cands := genCandidates(rand.New(rand.NewPCG(7, 8)), 1000)
	b.ReportAllocs()
	for b.Loop() {
		prompt.Assemble(cands, 4000, prompt.Scoring{Now: now})
	}
}

// TestMemory79_ScoreIsTheScoreBeforeRedundancy: Scoring.Score gives what
// Assemble scores a candidate before anything is selected: the first
// selected candidate's score, and an unselected one's base.
func TestMemory79_ScoreIsTheScoreBeforeRedundancy(t *testing.T) {
	cands := []layer.Candidate{
		{Layer: "facts", Key: "a", Text: "the user prefers dark mode", Tokens: 10, Similarity: 0.9, Importance: 0.5, Time: now.Add(-48 * time.Hour)},
		{Layer: "facts", Key: "b", Text: "the user prefers dark mode at night", Tokens: 10, Similarity: 0.8, Importance: 0.7, Time: now},
	}
	for _, s := range []prompt.Scoring{{Now: now}, {Similarity: 1, HalfLife: time.Hour, Now: now}} {
		sel := prompt.Assemble(cands, 10, s)
		if len(sel) != 1 {
			t.Fatalf("selected %v", keys(sel))
		}
		if got := s.Score(sel[0].Candidate); got != sel[0].Score {
			t.Errorf("%+v: Score %v, Assemble %v", s, got, sel[0].Score)
		}
		other := cands[0]
		if sel[0].Key == "a" {
			other = cands[1]
		}
		if s.Score(other) > sel[0].Score {
			t.Errorf("%+v: the unselected candidate scores %v above the selected %v", s, s.Score(other), sel[0].Score)
		}
	}
}

// TestAssembleNoFalseDuplicates packs 2,000 distinct IDs, more words
// than a signature has bits, so many collide: none is a duplicate of
// another, so with room for all, all are selected. Before the novelty
// filter measured suspected duplicates exactly, 256 were kept. Records
// that differ only in their IDs and numbers (two summary lines) are not
// copies either, and a true near-duplicate is still skipped.
func TestAssembleNoFalseDuplicates(t *testing.T) {
	texts := []string{"blk_331a2a8d9866", "blk_1429627cb996"}
	r := rand.New(rand.NewPCG(7, 11))
	for len(texts) < 2000 {
		texts = append(texts, fmt.Sprintf("blk_%012x", r.Uint64()>>16))
	}
	cands := make([]layer.Candidate, len(texts))
	for i, text := range texts {
		cands[i] = layer.Candidate{Layer: "summary", Key: fmt.Sprintf("e%04d", i), Text: text, Tokens: 1, Similarity: 0.5}
	}
	sel := prompt.Assemble(cands, len(cands), prompt.Scoring{Now: now})
	if len(sel) != len(cands) {
		got := map[string]bool{}
		for _, s := range sel {
			got[s.Text] = true
		}
		var lost []string
		for _, text := range texts {
			if !got[text] {
				lost = append(lost, text)
			}
		}
		t.Errorf("selected %d of %d distinct texts; lost as duplicates: %v", len(sel), len(cands), lost[:min(len(lost), 5)])
	}
	lines := []layer.Candidate{
		{Layer: "summary", Key: "a", Text: `- User: Page 2 | createPage (call call_0_0_1) → page_2 "Page 2" | answer: Created page_2.`, Tokens: 5, Similarity: 1},
		{Layer: "summary", Key: "b", Text: `- User: Page 3 | createPage (call call_0_0_2) → page_3 "Page 3" | answer: Created page_3.`, Tokens: 5, Similarity: 1},
	}
	if got := keys(prompt.Assemble(lines, 100, prompt.Scoring{Now: now})); len(got) != 2 {
		t.Errorf("two summary lines about two pages: selected %v, want both", got)
	}
	// A true near-duplicate is still skipped.
	dup := []layer.Candidate{
		{Layer: "facts", Key: "a", Text: "The editor writes in British English.", Tokens: 5, Similarity: 1},
		{Layer: "facts", Key: "b", Text: "the editor writes in British English", Tokens: 5, Similarity: 0.9},
	}
	if got := keys(prompt.Assemble(dup, 100, prompt.Scoring{Now: now})); !slices.Equal(got, []string{"facts/a"}) {
		t.Errorf("near-duplicates: selected %v, want only facts/a", got)
	}
}
