package writepath_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// benchKeep keeps b.N new facts through router in a semantic memory that
// holds 200 facts already.
func benchKeep(b *testing.B, router route.Router) {
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	st := looptest.NewInitStackOn(b, layer.Env{ThreadID: "t1", ResourceID: "u1", Store: storage.NewMemoryStore()}, sem)
	k := &writepath.Keeper{Stack: st, Router: router, Logger: slog.Default(),
		Recovered: func(_ context.Context, where string, p any) error { return fmt.Errorf("%s: %v", where, p) }}
	topics := []string{"tea", "invoices", "the pricing page", "deploys", "Lisbon", "the newsletter", "page pg-7", "order 7781"}
	for i := range 200 {
		w := layer.Write{Kind: "fact", Importance: 0.5, Text: fmt.Sprintf("Fact %d about "+topics[i%len(topics)]+" and its owner number %d.", i, i, i)}
		if _, err := k.Keep(b.Context(), w, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	i := 1000
	for b.Loop() {
		w := layer.Write{Kind: "preference", Importance: 0.5, Text: fmt.Sprintf("The user %d prefers "+topics[i%len(topics)]+" on day %d.", i, i, i)}
		if _, err := k.Keep(b.Context(), w, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkKeepGated is a write kept through route.Default: routed,
// gated against the semantic memory's candidates, kept.
func BenchmarkKeepGated(b *testing.B) { benchKeep(b, route.Default) }

// BenchmarkKeepUngated is the same write routed the same way with no
// gate (a route.Func), for the gate's share of a write.
func BenchmarkKeepUngated(b *testing.B) {
	benchKeep(b, route.Func(func(ctx context.Context, w layer.Write) route.Route { return route.Default.Route(ctx, w) }))
}
