package episodicmemory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// benchLayer returns a layer whose log holds n episodes (a 2 KB result
// each), compacted as the defaults say.
func benchLayer(b *testing.B, n int) *episodicmemory.Layer {
	l := bound(b, episodicmemory.Config{}, storage.NewMemoryStore(), "t", "")
	for i := range n {
		store(b, l, benchStep(i))
	}
	return l
}

var benchResult = func() string {
	s := `{"page":{"id":"page-%d","title":"Page %d","sections":[`
	for i := range 40 {
		s += fmt.Sprintf(`{"id":"sec-%d","heading":"Section %d"},`, i, i)
	}
	return s + `{}]}}`
}()

func benchStep(i int) layer.Turn {
	return toolStep(i, fmt.Sprintf("call-%d", i), "cms_getPage", fmt.Sprintf(`{"id":"page-%d"}`, i), fmt.Sprintf(benchResult, i, i))
}

// BenchmarkRecall recalls for an input naming one page, with a log of
// 10 and of 10,000 episodes.
func BenchmarkRecall(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("episodes=%d", n), func(b *testing.B) {
			l := benchLayer(b, n)
			q := layer.Query{Text: "open page-7 again and fix its hero section", Budget: 2000}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Recall(context.Background(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStoreRecall is one step of a run: Store then Recall, so the
// recall index is rebuilt after each change.
func BenchmarkStoreRecall(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("episodes=%d", n), func(b *testing.B) {
			l := benchLayer(b, n)
			q := layer.Query{Text: "open page-7 again", Budget: 2000}
			i := n
			b.ReportAllocs()
			for b.Loop() {
				store(b, l, benchStep(i))
				i++
				if _, err := l.Recall(context.Background(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStoreSQLite appends one step to a log of 10 and of 10,000
// episodes in a SQLite file, compactions included.
func BenchmarkStoreSQLite(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("episodes=%d", n), func(b *testing.B) {
			st, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			l := bound(b, episodicmemory.Config{}, st, "t", "")
			for i := range n {
				store(b, l, benchStep(i))
			}
			i := n
			b.ReportAllocs()
			for b.Loop() {
				store(b, l, benchStep(i))
				i++
			}
		})
	}
}

// BenchmarkStore appends one step (one tool call, 2 KB result) to a log
// of 10 and of 10,000 episodes, compactions included.
func BenchmarkStore(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("episodes=%d", n), func(b *testing.B) {
			l := benchLayer(b, n)
			i := n
			b.ReportAllocs()
			for b.Loop() {
				store(b, l, benchStep(i))
				i++
			}
		})
	}
}

// BenchmarkSnapshot measures the snapshot agentloop puts in each
// checkpoint, with a log of 10 and of 10,000 episodes (bytes/snapshot).
func BenchmarkSnapshot(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("episodes=%d", n), func(b *testing.B) {
			l := benchLayer(b, n)
			b.ReportAllocs()
			var size int
			for b.Loop() {
				data, err := l.Snapshot(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.ReportMetric(float64(size), "bytes/snapshot")
		})
	}
}
