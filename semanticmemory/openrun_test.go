package semanticmemory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
)

type openRunBackend struct {
	name string
	open func(b testing.TB, n int) storage.Store
}

// openRunBackends are the stores BenchmarkOpenRun measures: the
// in-memory store (a storage.Searcher: BM25 over every document) and
// SQLite always, Redis when MEMLAYER_REDIS_URL names a server
// (.ci/with-redis starts one). A store that is a storage.Searcher is
// searched through its index; the others through the layer's private
// index of the newest facts.
func openRunBackends() []openRunBackend {
	backends := []openRunBackend{
		{"memory", func(testing.TB, int) storage.Store { return storage.NewMemory() }},
		{"sqlite", func(b testing.TB, n int) storage.Store {
			s, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(b.TempDir(), "m.db")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
	if u := os.Getenv("MEMLAYER_REDIS_URL"); u != "" {
		backends = append(backends, openRunBackend{"redis", func(b testing.TB, n int) storage.Store {
			s, err := redis.New(redis.Config{URL: u, Namespace: fmt.Sprintf("bench-openrun-sem-%d-%d:", n, time.Now().UnixNano())})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}})
	}
	backends = append(backends, postgresOpenRun()...) // openrun_postgres_test.go
	return backends
}

// seedFacts writes n facts of resource "user-1" directly, 100 per record
// (a bulk import; a run writes one per record), the first a preference
// that shares no word with the benchmark's message, with index documents
// and marker on a store that can search.
func seedFacts(b testing.TB, st storage.Store, n int) {
	ctx := context.Background()
	tmpl, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	scope := storage.ResourceScope("user-1")
	l := tmpl.bind(st, scope, layer.Env{})
	rng := rand.New(rand.NewPCG(7, 7))
	word := func() string { return "w" + strconv.Itoa(rng.IntN(3000)) }
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const per = 100
	var docs []storage.Document
	m := marker{}
	for seq := int64(0); int(seq)*per < n; seq++ {
		r := record{Version: FormatVersion, Seq: seq}
		for j := 0; j < per && int(seq)*per+j < n; j++ {
			i := int(seq)*per + j
			f := Fact{ID: "f" + strconv.FormatInt(seq, 10) + "." + strconv.Itoa(j), Kind: "fact", Importance: 0.5,
				Source: Source{By: "code"}, Created: t0.Add(time.Duration(i) * time.Second), Version: 1}
			if i == 0 {
				f.Text, f.Kind = "The user prefers British spelling", "preference"
			} else {
				ws := make([]string, 8)
				for k := range ws {
					ws[k] = word()
				}
				f.Text = fmt.Sprintf("Fact %d: %s.", i, strings.Join(ws, " "))
			}
			f.Updated = f.Created
			r.Facts = append(r.Facts, f)
			docs = append(docs, l.doc(&f, seq))
			m.Live++
		}
		if _, err := st.Put(ctx, l.log.Key(recName(seq)), encode(r), storage.AnyVersion); err != nil {
			b.Fatal(err)
		}
		m.Next = seq + 1
	}
	if _, err := st.Put(ctx, l.log.Key("head"), encode(head{Version: FormatVersion, Next: m.Next}), storage.AnyVersion); err != nil {
		b.Fatal(err)
	}
	if x, ok := st.(storage.Searcher); ok {
		docs = append(docs, m.doc())
		for len(docs) > 0 {
			k := min(len(docs), 512)
			if err := x.Index(ctx, l.col, docs[:k]...); err != nil {
				b.Fatal(err)
			}
			docs = docs[k:]
		}
	}
}

// openRunQuery is the benchmark's message: it names nothing stored, so
// the pinned preference must come from the filtered query.
var openRunQuery = layer.Query{Text: "Add a hero section to it w17 w2500", Situation: "Add a hero section to it w17 w2500\ngoal: landing page"}

// BenchmarkOpenRun opens a run on a user's 100 and 100,000 facts (Init,
// resource scope) and makes its first Recall. The bar: at
// 100,000 at most twice the time at 100, on SQLite (with its index).
func BenchmarkOpenRun(b *testing.B) {
	ctx := context.Background()
	for _, be := range openRunBackends() {
		for _, n := range []int{100, 100_000} {
			b.Run(fmt.Sprintf("%s/facts=%d", be.name, n), func(b *testing.B) {
				st := be.open(b, n)
				seedFacts(b, st, n)
				tmpl, err := New(Config{})
				if err != nil {
					b.Fatal(err)
				}
				env := layer.Env{ThreadID: "t-new", ResourceID: "user-1", Store: st}
				b.ReportAllocs()
				for b.Loop() {
					l, err := tmpl.Init(ctx, env)
					if err != nil {
						b.Fatal(err)
					}
					items, err := l.Recall(ctx, openRunQuery)
					if err != nil || len(items) != 1 {
						b.Fatalf("Recall = %v, %v", items, err)
					}
				}
			})
		}
	}
}

// TestOpenRunSeed checks the seeded facts are ones the layer reads: the
// pinned preference is recalled for a message that shares no word with
// it, and a fact is found by its words.
func TestOpenRunSeed(t *testing.T) {
	ctx := context.Background()
	for _, st := range []storage.Store{storage.NewMemory(), struct{ storage.Store }{storage.NewMemory()}} {
		seedFacts(t, st, 1000)
		tmpl, _ := New(Config{})
		l, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", ResourceID: "user-1", Store: st})
		if err != nil {
			t.Fatal(err)
		}
		items, err := l.Recall(ctx, openRunQuery)
		if err != nil || len(items) != 1 || !strings.Contains(items[0].Text, "British spelling") {
			t.Fatalf("Recall = %v, %v", items, err)
		}
		if m := l.(*Layer).Metrics()["entries"]; m != 1000 {
			t.Errorf("entries = %d, want 1000", m)
		}
	}
}
