package episodicmemory

import (
	"context"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
	"github.com/memlayer/memlayer/storage/storagetest/allstores"
)

// TestOpenRunRoundTrips: a run (Init, its first Recall with the store's
// index, and the Store of its turn, which loads the view) reads the head
// and then all the raw segments not yet folded in one GetMany, however
// many there are. A store without GetMany is read one Get per segment,
// and the run recalls and stores the same.
func TestOpenRunRoundTrips(t *testing.T) {
	ctx := context.Background()
	tmpl, q := backRef(t)
	for _, n := range []int{10, 100, 1000} {
		raw := n - max(n-32, 0)/32*32 // the raw segments seedLog leaves
		var recalled [2]string
		for i, many := range []bool{true, false} {
			c := &storagetest.Counting{MemoryStore: storage.NewMemoryStore()}
			var st storage.Store = c
			if !many {
				st = struct {
					storage.Store
					storage.Searcher
				}{c, c} // search, but no GetMany
			}
			seedLog(t, st, n)
			c.Gets.Store(0)
			c.Trips.Store(0)
			l, err := layertest.FirstRecall(ctx, tmpl, layer.Env{ThreadID: "t-new", ResourceID: "user-1", Store: st}, q)
			if err != nil {
				t.Fatal(err)
			}
			items, err := l.Recall(ctx, q)
			if err != nil || len(items) != 1 {
				t.Fatalf("Recall = %v, %v", items, err)
			}
			recalled[i] = items[0].Text
			turn := layer.Turn{Step: 1, Results: []layer.ToolResult{{ToolCall: layer.ToolCall{ID: "new-1", Name: "cms_getPage", Arguments: `{"id":"page-1"}`}, Content: `{"id":"page-1"}`}}}
			if err := l.(*Layer).Store(ctx, turn); err != nil {
				t.Fatal(err)
			}
			if got := len(l.(*Layer).Episodes()); got != raw+1 {
				t.Errorf("%d episodes: the view holds %d raw episodes after the turn, want %d", n, got, raw+1)
			}
			trips, records := c.Trips.Load(), c.Gets.Load()
			t.Logf("%d episodes, %d raw segments, GetMany %v: %d records read in %d round trips", n, raw, many, records, trips)
			if records < int64(raw+1) {
				t.Errorf("%d episodes: %d records read, want the head and the %d raw segments at least", n, records, raw)
			}
			if many && trips > 3 {
				t.Errorf("%d episodes (%d raw segments): a run took %d round trips, want at most 3", n, raw, trips)
			}
			if !many && trips != records {
				t.Errorf("%d episodes without GetMany: %d round trips for %d records, want one each", n, trips, records)
			}
		}
		if recalled[0] != recalled[1] {
			t.Errorf("%d episodes: recall with GetMany differs from recall without:\n%s\n---\n%s", n, recalled[0], recalled[1])
		}
	}
}

// backRef returns a resource-scoped template and a message that goes back
// to a page of the start of seedLog's log.
func backRef(tb testing.TB) (*Layer, layer.Query) {
	tmpl, err := New(Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		tb.Fatal(err)
	}
	return tmpl, layer.Query{Text: `Go back to the page from turn 2 ("Pricing for Nonprofits 2") and publish it`}
}

// BenchmarkOpenRunView opens a run on a user's log of 1,000 episodes (40
// raw segments not yet folded) and reads what the run's first Store
// reads: Init, the first Recall, and the view (head and raw segments),
// without writing. On every backend of allstores.
func BenchmarkOpenRunView(b *testing.B) {
	ctx := context.Background()
	tmpl, q := backRef(b)
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
