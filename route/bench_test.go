package route_test

import (
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
)

// benchWrites are the routing fixture's first 64 writes that are shorter
// than 400 bytes (the size of a memorize call), each against 10 stored
// items, as semantic memory offers them.
func benchWrites(b *testing.B) []gateItem {
	items := loadFile(b, "testdata/routing.jsonl")
	var out []gateItem
	for i, it := range items {
		if len(it.Text) >= 400 {
			continue
		}
		stored := make([]layer.Candidate, 10)
		for j := range stored {
			o := items[(i+1+j*7)%len(items)]
			stored[j] = layer.Candidate{Key: "f" + string(rune('a'+j)), Text: "[f" + string(rune('a'+j)) + " fact] " + o.Text}
		}
		out = append(out, gateItem{layer.Write{Kind: it.Kind, Text: it.Text, Importance: 0.5}, stored})
		if len(out) == 64 {
			break
		}
	}
	return out
}

// benchEach runs f on the bench writes in turn, one per iteration.
func benchEach(b *testing.B, f func(it gateItem)) {
	ws := benchWrites(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		f(ws[i%len(ws)])
		i++
	}
}

// BenchmarkRoute is Default's route of one write (the table or the text).
func BenchmarkRoute(b *testing.B) {
	benchEach(b, func(it gateItem) { _ = route.Default.Route(b.Context(), it.w) })
}

// BenchmarkGate is Default's gate of one write against 10 stored items:
// importance, novelty and size.
func BenchmarkGate(b *testing.B) {
	g := route.Default.(route.Admitter)
	benchEach(b, func(it gateItem) { _ = g.Admit(b.Context(), it.w, it.stored) })
}

// BenchmarkImportance is the importance heuristic of one write.
func BenchmarkImportance(b *testing.B) {
	benchEach(b, func(it gateItem) { _ = route.Importance(it.w) })
}

// BenchmarkNovelty is the novelty of one write against 10 stored items.
func BenchmarkNovelty(b *testing.B) {
	benchEach(b, func(it gateItem) { _, _ = route.Novelty(it.w.Text, it.stored) })
}
