package semanticmemory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
	"github.com/memlayer/memlayer/storage/storagetest/allstores"
)

// seedFacts writes n facts of resource "user-1" directly, 100 per record
// (a bulk import; a run writes one per record), the first a preference
// that shares no word with the benchmark's message, with index documents
// and marker on a store that can search. The message's two words are in
// one fact of five and one of seven, so that its recall has as many
// matches to rank and show at 100 facts as at 100,000: the benchmark
// compares the same work on a small and a large memory.
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
				// The message's words are in a fixed share of the facts,
				// so that the first recall finds TopK facts at any size.
				if i%5 == 1 {
					ws[0] = "w17"
				}
				if i%7 == 2 {
					ws[1] = "w2500"
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

// openRunQuery is the benchmark's message: its words w17 and w2500 are in
// many facts (see seedFacts), and none is in the pinned preference, which
// must come from the filtered query.
var openRunQuery = layer.Query{Text: "Add a hero section to it w17 w2500", Situation: "Add a hero section to it w17 w2500\ngoal: landing page"}

// BenchmarkOpenRun opens a run on a user's 100 and 100,000 facts (Init,
// resource scope) and makes its first Recall. The bar: at
// 100,000 at most twice the time at 100, on SQLite (with its index).
func BenchmarkOpenRun(b *testing.B) {
	ctx := context.Background()
	tmpl, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	// Stores that search are searched through their index, the others
	// through the layer's private index of the newest facts.
	backends := allstores.Backends("bench-openrun-sem")
	storagetest.BenchmarkOpenRun(b, backends, "facts", func(b *testing.B, st storage.Store, n int) { seedFacts(b, st, n) }, func(st storage.Store) error {
		_, err := layertest.FirstRecall(ctx, tmpl, layer.Env{ThreadID: "t-new", ResourceID: "user-1", Store: st}, openRunQuery)
		return err
	})
}

// TestOpenRunSeed checks the seeded facts are ones the layer reads: the
// pinned preference is recalled for a message that shares no word with
// it, and a fact is found by its words.
func TestOpenRunSeed(t *testing.T) {
	ctx := context.Background()
	for _, st := range []storage.Store{storage.NewMemoryStore(), struct{ storage.Store }{storage.NewMemoryStore()}} {
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
