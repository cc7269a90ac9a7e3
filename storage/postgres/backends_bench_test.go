package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
	"github.com/memlayer/memlayer/storage/postgres/pgtest"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
)

// benchBackends opens one store of each durable backend: an SQLite file,
// the Redis server of MEMLAYER_REDIS_URL (left out when unset) and the
// PostgreSQL server of pgtest.URL.
func benchBackends(b *testing.B) []struct {
	name string
	st   storage.Store
} {
	b.Helper()
	var out []struct {
		name string
		st   storage.Store
	}
	sq, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sq.Close() })
	out = append(out, struct {
		name string
		st   storage.Store
	}{"sqlite", sq})
	// SQLite with SyncFull waits for fsync on every commit, as
	// PostgreSQL does by default (synchronous_commit=on): the same
	// durability.
	sf, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench-full.db"), Sync: sqlite.SyncFull})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sf.Close() })
	out = append(out, struct {
		name string
		st   storage.Store
	}{"sqlite-syncfull", sf})
	if u := os.Getenv("MEMLAYER_REDIS_URL"); u != "" {
		rd, err := redis.New(redis.Config{URL: u, Namespace: fmt.Sprintf("bench:%d:", time.Now().UnixNano())})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rd.Close() })
		out = append(out, struct {
			name string
			st   storage.Store
		}{"redis", rd})
	} else {
		b.Log("redis: left out, MEMLAYER_REDIS_URL is unset")
	}
	u := pgtest.URL(b)
	pg := open(b, postgres.Config{URL: u, Schema: newSchema(b, u)})
	out = append(out, struct {
		name string
		st   storage.Store
	}{"postgres", pg})
	// The same store without its storage.Batcher: each record of a step
	// is its own write and commit, as on a store that cannot batch.
	out = append(out, struct {
		name string
		st   storage.Store
	}{"postgres-unbatched", struct{ storage.Store }{pg}})
	// AsyncCommit: the durability of SQLite's default, SyncNormal (a
	// server crash loses the last fraction of a second of writes).
	pa := open(b, postgres.Config{URL: u, Schema: newSchema(b, u), AsyncCommit: true})
	out = append(out, struct {
		name string
		st   storage.Store
	}{"postgres-async", pa})
	return out
}

// reportQuantiles reports the p50 and p99 of ds.
func reportQuantiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkBackends measures each durable backend in one run (SQLite
// twice: with its default SyncNormal and with SyncFull, which waits for
// fsync per commit as PostgreSQL does; PostgreSQL three times: as
// configured by default, without its storage.Batcher, and with
// AsyncCommit, the durability of SQLite's default): a Get and
// a compare-and-swap Put of a 2 KB value (p50 and p99), a durable agent
// step (a run of two steps, one a scratchpad update, with its checkpoint
// and layer state written to the store), and, on the backends that
// search, a text query over 100,000 documents of one user.
func BenchmarkBackends(b *testing.B) {
	value := []byte(strings.Repeat("x", 2048))
	for _, be := range benchBackends(b) {
		ctx := context.Background()
		b.Run(be.name+"/get", func(b *testing.B) {
			key := storage.LayerKey("bench", storage.ResourceScope("u"), "get")
			if _, err := be.st.Put(ctx, key, value, storage.AnyVersion); err != nil {
				b.Fatal(err)
			}
			ds := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				if _, err := be.st.Get(ctx, key); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			reportQuantiles(b, ds)
		})
		b.Run(be.name+"/put", func(b *testing.B) {
			key := storage.LayerKey("bench", storage.ResourceScope("u"), "put")
			v, err := be.st.Put(ctx, key, value, storage.AnyVersion)
			if err != nil {
				b.Fatal(err)
			}
			ds := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				if v, err = be.st.Put(ctx, key, value, v); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			reportQuantiles(b, ds)
		})
		b.Run(be.name+"/step", func(b *testing.B) {
			wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
			if err != nil {
				b.Fatal(err)
			}
			st, cnt := counted(be.st)
			a, err := agentloop.New(agentloop.Config{
				Model: agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
					if len(r.ToolResults()) == 0 {
						return agenttest.Calls(agenttest.Call("working_memory_update", `{"task":"bench"}`)), nil
					}
					return agenttest.Text("done"), nil
				}),
				Layers: []layer.Layer{wm},
				Store:  st,
			})
			if err != nil {
				b.Fatal(err)
			}
			ds := make([]time.Duration, 0, 1024)
			n, steps := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				n++
				t0 := time.Now()
				res, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t" + strconv.Itoa(n), ResourceID: "user-1", Input: "go"})
				if err != nil {
					b.Fatal(err)
				}
				steps += max(1, res.Steps)
				ds = append(ds, time.Since(t0)/time.Duration(max(1, res.Steps)))
			}
			reportQuantiles(b, ds)
			// What one step costs the store: calls (each at least a round
			// trip) and commits (each a flush of the log when durable).
			b.ReportMetric(float64(cnt.roundTrips())/float64(steps), "calls/step")
			b.ReportMetric(float64(cnt.commits())/float64(steps), "commits/step")
			b.ReportMetric(float64(cnt.puts.Load()+cnt.deletes.Load()+cnt.batched.Load())/float64(steps), "writes/step")
		})
		b.Run(be.name+"/search100k", func(b *testing.B) {
			s, ok := be.st.(storage.Searcher)
			if !ok {
				b.Skip(be.name + " does not implement storage.Searcher")
			}
			c := storage.IndexName("bench", storage.ResourceScope("user-1"), "docs")
			words := strings.Fields("page hero pricing launch editor banner footer archive invoice meeting draft review budget travel lisbon zurich report design sprint client")
			const n = 100_000
			docs := make([]storage.Document, 0, 1000)
			for i := range n {
				text := fmt.Sprintf("note %d about %s and %s for %s", i, words[i%len(words)], words[(i/7)%len(words)], words[(i/131)%len(words)])
				docs = append(docs, storage.Document{ID: "d" + strconv.Itoa(i), Text: text, Fields: map[string]string{"kind": "fact"}})
				if len(docs) == cap(docs) {
					if err := s.Index(ctx, c, docs...); err != nil {
						b.Fatal(err)
					}
					docs = docs[:0]
				}
			}
			ds := make([]time.Duration, 0, 1024)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				hits, err := s.Search(ctx, c, storage.Query{Text: "pricing lisbon invoice", K: 10})
				if err != nil || len(hits) != 10 {
					b.Fatalf("search: %d hits, %v", len(hits), err)
				}
				ds = append(ds, time.Since(t0))
			}
			reportQuantiles(b, ds)
		})
	}
}
