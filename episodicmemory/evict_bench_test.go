package episodicmemory_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// opCount is a store with search that counts its operations: Put calls
// and their bytes, round trips of reads (Get, GetMany) and calls of its
// index (Index, Unindex, Search).
type opCount struct {
	searchStore
	puts, bytes, trips, ix atomic.Int64
}

func (c *opCount) Get(ctx context.Context, key string) (storage.Item, error) {
	c.trips.Add(1)
	return c.searchStore.Get(ctx, key)
}

func (c *opCount) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	c.trips.Add(1)
	return storage.GetMany(ctx, c.searchStore, keys)
}

func (c *opCount) Put(ctx context.Context, key string, value []byte, v int64) (int64, error) {
	c.puts.Add(1)
	c.bytes.Add(int64(len(value)))
	return c.searchStore.Put(ctx, key, value, v)
}

func (c *opCount) Index(ctx context.Context, col string, docs ...storage.Document) error {
	c.ix.Add(1)
	return c.searchStore.Index(ctx, col, docs...)
}

func (c *opCount) Unindex(ctx context.Context, col string, ids ...string) error {
	c.ix.Add(1)
	return c.searchStore.Unindex(ctx, col, ids...)
}

func (c *opCount) Search(ctx context.Context, col string, q storage.Query) ([]storage.Hit, error) {
	c.ix.Add(1)
	return c.searchStore.Search(ctx, col, q)
}

// BenchmarkStepCapacity appends one step (one tool call, 2 KB result) to
// a log of 1,000 episodes, below its capacity (the defaults) and at it
// (MaxEpisodes 1,000: the steps evict, 16 episodes every 16 steps), in
// memory and in
// SQLite, compactions included. It reports per step the writes (Put
// calls) and their bytes, the read round trips and the index calls.
func BenchmarkStepCapacity(b *testing.B) {
	const n = 1000
	for _, backend := range []string{"memory", "sqlite"} {
		for _, at := range []bool{false, true} {
			name := backend + "/below"
			cfg := episodicmemory.Config{}
			if at {
				name = backend + "/at"
				cfg.Capacity.MaxEpisodes = n
			}
			b.Run(name, func(b *testing.B) {
				var inner searchStore = storage.NewMemoryStore()
				if backend == "sqlite" {
					st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
					if err != nil {
						b.Fatal(err)
					}
					defer st.Close()
					inner = st
				}
				c := &opCount{searchStore: inner}
				l := bound(b, cfg, c, "t", "")
				for i := range n {
					store(b, l, benchStep(i))
				}
				if used, _, _ := l.CapacityUsed(); used != n {
					b.Fatalf("%d episodes indexed, want %d", used, n)
				}
				c.puts.Store(0)
				c.bytes.Store(0)
				c.trips.Store(0)
				c.ix.Store(0)
				i := n
				b.ReportAllocs()
				for b.Loop() {
					store(b, l, benchStep(i))
					i++
				}
				steps := float64(i - n)
				b.ReportMetric(float64(c.puts.Load())/steps, "writes/step")
				b.ReportMetric(float64(c.bytes.Load())/steps, "bytes/step")
				b.ReportMetric(float64(c.trips.Load())/steps, "trips/step")
				b.ReportMetric(float64(c.ix.Load())/steps, "ixcalls/step")
				if used, _, _ := l.CapacityUsed(); at && (used > n || used < n-n/64) {
					b.Errorf("%d episodes indexed after the steps, want %d to %d", used, n-n/64, n)
				}
			})
		}
	}
}
