package semanticmemory_test

import (
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// BenchmarkConsolidateStep measures the step's Store of a turn that
// ends, on a layer of 100 facts: without consolidation ("off"); with it,
// the step's own cost, the turn only queued ("on/step"); and the whole
// consolidation of the turn, Store and Flush, with a model that answers
// at once, proposing one fact and deciding nothing ("on/turn": two model
// calls, one search, no write).
func BenchmarkConsolidateStep(b *testing.B) {
	model := &consolidationModel{propose: proposals("preference", "The user prefers green tea."), decide: decisions(func(string) []map[string]any {
		return []map[string]any{{"fact": 1, "op": "none"}}
	})}
	turn := layer.Turn{Step: 1, Query: "I switched to green tea this spring.", Response: "Noted, green tea it is."}
	setup := func(b *testing.B, c *semanticmemory.Consolidator) *semanticmemory.Layer {
		l := bindConsolidating(b, semanticmemory.Config{Consolidate: c, NoSkills: true}, storage.NewMemoryStore(), "a")
		for i := range 100 {
			remember(b, l, "fact", "The user mentioned topic number "+string(rune('a'+i%26))+" in passing.")
		}
		return l
	}
	b.Run("off", func(b *testing.B) {
		l := setup(b, nil)
		b.ReportAllocs()
		for b.Loop() {
			_ = l.Store(b.Context(), turn)
		}
	})
	b.Run("on/step", func(b *testing.B) {
		l := setup(b, &semanticmemory.Consolidator{Model: model})
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			_ = l.Store(b.Context(), turn)
			if n++; n%32 == 0 { // below the queue's cap
				b.StopTimer()
				_ = l.Flush(b.Context())
				b.StartTimer()
			}
		}
		_ = l.Flush(b.Context())
	})
	b.Run("on/turn", func(b *testing.B) {
		l := setup(b, &semanticmemory.Consolidator{Model: model})
		b.ReportAllocs()
		for b.Loop() {
			_ = l.Store(b.Context(), turn)
			_ = l.Flush(b.Context())
		}
	})
}
