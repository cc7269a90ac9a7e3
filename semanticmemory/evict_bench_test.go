package semanticmemory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
	"github.com/memlayer/memlayer/storage/storagetest/allstores"
)

// opCounter counts the index's queries and writes beside what
// storagetest.Counting counts.
type opCounter struct {
	*storagetest.Counting
	searches, indexes atomic.Int64
}

func (c *opCounter) Search(ctx context.Context, col string, q storage.Query) ([]storage.Hit, error) {
	c.searches.Add(1)
	return c.Counting.Search(ctx, col, q)
}

func (c *opCounter) Index(ctx context.Context, col string, docs ...storage.Document) error {
	c.indexes.Add(1)
	return c.Counting.Index(ctx, col, docs...)
}

func (c *opCounter) Unindex(ctx context.Context, col string, ids ...string) error {
	c.indexes.Add(1)
	return c.Counting.Unindex(ctx, col, ids...)
}

// rememberCapacities are BenchmarkRemember's cases: far below the
// default capacity, and at a capacity of 1,000 facts, where every write
// evicts one.
var rememberCapacities = []struct {
	name string
	cap  semanticmemory.Capacity
}{
	{"below-capacity", semanticmemory.Capacity{}},
	{"at-capacity", semanticmemory.Capacity{MaxFacts: 1000}},
}

// BenchmarkRemember writes one new fact into a user's 1,000 facts: below
// the capacity, and at it (each write evicts the fact of lowest utility
// density). It reports the index's queries and writes and the bytes
// written to the store per fact.
func BenchmarkRemember(b *testing.B) {
	for _, c := range rememberCapacities {
		b.Run("memory/"+c.name, func(b *testing.B) {
			st := &opCounter{Counting: &storagetest.Counting{MemoryStore: storage.NewMemoryStore()}}
			benchRemember(b, st, c.cap, func() {
				b.ReportMetric(float64(st.searches.Load())/float64(b.N), "searches/op")
				b.ReportMetric(float64(st.indexes.Load())/float64(b.N), "index-writes/op")
				b.ReportMetric(float64(st.Bytes.Load())/float64(b.N), "bytes-written/op")
			}, func() { st.searches.Store(0); st.indexes.Store(0); st.Bytes.Store(0) })
		})
	}
	for _, be := range allstores.Backends("bench-remember-sem")[1:] {
		for _, c := range rememberCapacities {
			b.Run(be.Name+"/"+c.name, func(b *testing.B) {
				benchRemember(b, be.Open(b, 0), c.cap, func() {}, func() {})
			})
		}
	}
}

// benchRemember seeds 1,000 facts through the layer, calls reset, then
// times writing new ones, and calls report.
func benchRemember(b *testing.B, st storage.Store, c semanticmemory.Capacity, report, reset func()) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	text := func(i int) string {
		ws := make([]string, 8)
		for j := range ws {
			ws[j] = fmt.Sprintf("w%d", rng.IntN(3000))
		}
		return fmt.Sprintf("Fact %d: %s.", i, strings.Join(ws, " "))
	}
	l := bind(b, semanticmemory.Config{Capacity: c}, st, "bench")
	for i := range 1000 {
		if _, err := l.Remember(ctx, semanticmemory.Memo{Text: text(i), Importance: 0.5}); err != nil {
			b.Fatal(err)
		}
	}
	reset()
	b.ReportAllocs()
	b.ResetTimer()
	i := 1000
	for b.Loop() {
		if _, err := l.Remember(ctx, semanticmemory.Memo{Text: text(i), Importance: 0.5}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.StopTimer()
	report()
}
