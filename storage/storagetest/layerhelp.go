package storagetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// Counting is an in-memory store that keeps its capabilities (it embeds
// *storage.MemoryStore, so storage.Searcher and storage.MultiGetter are
// forwarded) and counts the records read, the round trips that read
// them and the bytes written. A layer's test uses it to show what a step
// costs. Hide its GetMany to count a store without storage.MultiGetter:
// struct{ storage.Store; storage.Searcher }{c, c}.
type Counting struct {
	*storage.MemoryStore
	// Gets counts the records asked for, by Get or GetMany; Trips the
	// calls of Get and GetMany, each one round trip to a server.
	Gets, Trips, Lists, Bytes atomic.Int64
}

// Get counts one read.
func (c *Counting) Get(ctx context.Context, key string) (storage.Item, error) {
	c.Gets.Add(1)
	c.Trips.Add(1)
	return c.MemoryStore.Get(ctx, key)
}

// GetMany counts a read of every key, in one trip.
func (c *Counting) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	c.Gets.Add(int64(len(keys)))
	c.Trips.Add(1)
	return c.MemoryStore.GetMany(ctx, keys)
}

// List counts one listing.
func (c *Counting) List(ctx context.Context, prefix string) ([]string, error) {
	c.Lists.Add(1)
	return c.MemoryStore.List(ctx, prefix)
}

// Put counts the bytes of value.
func (c *Counting) Put(ctx context.Context, key string, value []byte, v int64) (int64, error) {
	c.Bytes.Add(int64(len(value)))
	return c.MemoryStore.Put(ctx, key, value, v)
}

// Hidden hides a store's search capability, as a user's own store
// without one does.
type Hidden struct{ storage.Store }

// Erase erases what store holds under prefix as an operator does: it
// drops the prefix's collections and deletes its records. It fails t
// when anything is left.
func Erase(t testing.TB, store interface {
	storage.Store
	storage.Searcher
}, prefix string) {
	t.Helper()
	ctx := context.Background()
	if _, err := storage.DropIndexes(ctx, store, prefix); err != nil {
		t.Fatal(err)
	}
	keys, _ := store.List(ctx, prefix)
	for _, k := range keys {
		if err := store.Delete(ctx, k, storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	if keys, _ := store.List(ctx, prefix); len(keys) != 0 {
		t.Errorf("records left after erase: %v", keys)
	}
	if cols, _ := store.Collections(ctx, prefix); len(cols) != 0 {
		t.Errorf("collections left after erase: %v", cols)
	}
}

// Backend is a store a cross-backend benchmark opens by name. Open gets
// a number that keeps the stores of its sub-benchmarks apart.
type Backend struct {
	Name string
	Open func(tb testing.TB, n int) storage.Store
}

// Closer is a store that holds resources until it is closed.
type Closer interface {
	storage.Store
	Close() error
}

// Backends returns the in-memory store, a SQLite store that openSQLite
// opens at a path in a temporary directory and, when the environment
// variable MEMLAYER_REDIS_URL names a server (.ci/with-redis starts
// one), a Redis store that openRedis opens under a new namespace that
// starts with ns. The stores opened are closed when their test ends.
func Backends(ns string, openSQLite func(path string) (Closer, error), openRedis func(url, namespace string) (Closer, error)) []Backend {
	backends := []Backend{
		{"memory", func(testing.TB, int) storage.Store { return storage.NewMemoryStore() }},
		{"sqlite", func(tb testing.TB, _ int) storage.Store {
			return closing(tb)(openSQLite(filepath.Join(tb.TempDir(), "m.db")))
		}},
	}
	if u := os.Getenv("MEMLAYER_REDIS_URL"); u != "" {
		backends = append(backends, Backend{"redis", func(tb testing.TB, n int) storage.Store {
			return closing(tb)(openRedis(u, fmt.Sprintf("%s-%d-%d:", ns, n, time.Now().UnixNano())))
		}})
	}
	return backends
}

// closing returns a function that fails tb on an error to open a store
// and otherwise closes the store when tb ends.
func closing(tb testing.TB) func(Closer, error) storage.Store {
	return func(s Closer, err error) storage.Store {
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { s.Close() })
		return s
	}
}

// BenchmarkOpenRun measures opening a run on a store of 100 and of
// 100,000 entries, on each backend. Before the timed loop, seed fills
// the store with n entries; open opens a run on it and makes its first
// use, which is what each iteration measures. A sub-benchmark is named
// by the backend and "unit=n".
func BenchmarkOpenRun(b *testing.B, backends []Backend, unit string, seed func(b *testing.B, st storage.Store, n int), open func(st storage.Store) error) {
	for _, be := range backends {
		for _, n := range []int{100, 100_000} {
			b.Run(fmt.Sprintf("%s/%s=%d", be.Name, unit, n), func(b *testing.B) {
				st := be.Open(b, n)
				seed(b, st, n)
				b.ReportAllocs()
				for b.Loop() {
					if err := open(st); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
