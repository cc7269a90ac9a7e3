package history_test

import (
	"strings"
	"testing"

	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/thread"
)

// cms50Summary returns the summary of the first n turns of the cms50
// conversation, summarized two turns at a time in the default budget,
// and the messages of the turn after them.
func cms50Summary(b *testing.B, n int) (string, []thread.Message) {
	b.Helper()
	msgs := cms50Messages(b)
	starts := turnStarts(msgs)
	s := &history.DeterministicSummarizer{}
	sum := ""
	for i := 0; i < n; i += 2 {
		var err error
		if sum, err = s.Summarize(b.Context(), sum, msgs[starts[i]:starts[min(i+2, n)]]); err != nil {
			b.Fatal(err)
		}
	}
	return sum, msgs[starts[n]:starts[n+1]]
}

// BenchmarkSummaryRecall is what the history_summary layer's Recall
// costs a step, with the summary of 48 turns of the cms50 conversation:
// in the layer's budget (the default), and over a step's budget of 250
// tokens (fitted, the same summary at the same budget fitted once).
func BenchmarkSummaryRecall(b *testing.B) {
	sum, _ := cms50Summary(b, 48)
	l := history.NewLayer(history.DefaultSummaryTokens)
	l.Set(sum)
	for _, budget := range []int{0, 250} {
		name := "fits"
		if budget > 0 {
			name = "fitted"
		}
		b.Run(name, func(b *testing.B) {
			q := layer.Query{Budget: budget}
			b.ReportAllocs()
			for b.Loop() {
				items, err := l.Recall(b.Context(), q)
				if err != nil || len(items) != 1 || budget > 0 && items[0].Tokens > budget {
					b.Fatalf("%+v, %v", items, err)
				}
			}
		})
	}
}

// BenchmarkSummarize is one compaction of the deterministic summarizer
// at turn 48 of the cms50 conversation: a turn added to a summary that
// fills the default budget, which then tells its older turns more
// coarsely.
func BenchmarkSummarize(b *testing.B) {
	sum, next := cms50Summary(b, 48)
	s := &history.DeterministicSummarizer{}
	b.ReportAllocs()
	for b.Loop() {
		out, err := s.Summarize(b.Context(), sum, next)
		if err != nil || !strings.Contains(out, "Pricing") {
			b.Fatalf("%q, %v", out, err)
		}
	}
}
