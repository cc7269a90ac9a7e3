package sqlite_test

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// BenchmarkSQLitePut2KB measures a compare-and-swap write of a 2 KB value
// (a typical layer state) to one key, and reports the median and p99 of
// the individual writes next to the mean.
func BenchmarkSQLitePut2KB(b *testing.B) {
	for _, mode := range []struct {
		name string
		sync sqlite.SyncMode
	}{{"sync=normal", sqlite.SyncNormal}, {"sync=full", sqlite.SyncFull}} {
		b.Run(mode.name, func(b *testing.B) {
			s := open(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db"), Sync: mode.sync})
			ctx := b.Context()
			key := storage.LayerKey("working-memory", "thread-1", "state")
			value := make([]byte, 2048)
			for i := range value {
				value[i] = byte('a' + i%26)
			}
			version := storage.NoVersion
			var times []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				v, err := s.Put(ctx, key, value, version)
				times = append(times, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				version = v
			}
			reportPercentiles(b, times)
		})
	}
}

// BenchmarkSQLiteGet reads a 2 KB value from a store holding 1,000 keys.
func BenchmarkSQLiteGet(b *testing.B) {
	s := open(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	ctx := b.Context()
	value := make([]byte, 2048)
	for i := range 1000 {
		if _, err := s.Put(ctx, storage.LayerKey("working-memory", "thread-"+strconv.Itoa(i), "state"), value, storage.AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
	key := storage.LayerKey("working-memory", "thread-42", "state")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSQLiteList lists one scope of 20 keys among 1,000.
func BenchmarkSQLiteList(b *testing.B) {
	s := open(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	ctx := b.Context()
	for i := range 1000 {
		key := storage.LayerKey("kv", "scope-"+strconv.Itoa(i/20), "k"+strconv.Itoa(i))
		if _, err := s.Put(ctx, key, []byte("v"), storage.AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
	prefix := storage.LayerPrefix("kv", "scope-7")
	b.ReportAllocs()
	for b.Loop() {
		keys, err := s.List(ctx, prefix)
		if err != nil || len(keys) != 20 {
			b.Fatalf("List = %d keys, %v", len(keys), err)
		}
	}
}

func reportPercentiles(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(times[len(times)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkSQLiteSearch100k is a three-term text query for the top 10
// over 100,000 documents of one user in a file (its term index).
func BenchmarkSQLiteSearch100k(b *testing.B) {
	storagetest.BenchmarkSearch(b, open(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")}))
}

// BenchmarkSQLiteIndex is the cost of indexing a document, in batches of
// 100 (one transaction each).
func BenchmarkSQLiteIndex(b *testing.B) {
	storagetest.BenchmarkIndex(b, open(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")}))
}
