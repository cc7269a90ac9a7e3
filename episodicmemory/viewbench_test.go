package episodicmemory

import (
	"context"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
	"github.com/memlayer/memlayer/storage/storagetest/allstores"
)

// BenchmarkOpenRunView opens a run on a user's log of 1,000 episodes (40
// raw segments not yet folded) and reads what the run's first Store
// reads: Init, the first Recall, and the view (head and raw segments),
// without writing. On every backend of allstores.
func BenchmarkOpenRunView(b *testing.B) {
	ctx := context.Background()
	tmpl, err := New(Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		b.Fatal(err)
	}
	q := layer.Query{Text: `Go back to the page from turn 2 ("Pricing for Nonprofits 2") and publish it`}
	for _, be := range allstores.Backends("bench-view-ep") {
		b.Run(be.Name, func(b *testing.B) {
			st := be.Open(b, 1000)
			seedLog(b, st, 1000)
			b.ReportAllocs()
			for b.Loop() {
				l, err := layertest.FirstRecall(ctx, tmpl, layer.Env{ThreadID: "t-new", ResourceID: "user-1", Store: st}, q)
				if err != nil {
					b.Fatal(err)
				}
				if n := len(l.(*Layer).Episodes()); n != 40 {
					b.Fatalf("the view holds %d raw episodes, want 40", n)
				}
				if err := l.(layer.Closer).Close(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
