package semanticmemory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// corpus returns a layer holding n synthetic facts of one resource (8
// words each from a vocabulary of 3,000, fixed seed), and queries made
// of 3 vocabulary words.
func corpus(b *testing.B, n int) (*semanticmemory.Layer, []string) {
	b.Helper()
	return corpusOn(b, storage.NewMemoryStore(), n)
}

func corpusOn(b *testing.B, store storage.Store, n int) (*semanticmemory.Layer, []string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string { return fmt.Sprintf("w%d", rng.IntN(3000)) }
	l := bind(b, semanticmemory.Config{}, store, "bench")
	ctx := context.Background()
	for i := range n {
		ws := make([]string, 8)
		for j := range ws {
			ws[j] = word()
		}
		if _, err := l.Remember(ctx, semanticmemory.Memo{Text: fmt.Sprintf("Fact %d: %s.", i, strings.Join(ws, " ")), Kind: "fact", Importance: 0.5}); err != nil {
			b.Fatal(err)
		}
	}
	if st := int(l.Metrics()["entries"]); st != n {
		b.Fatalf("%d live facts, want %d (some superseded)", st, n)
	}
	qs := make([]string, 64)
	for i := range qs {
		qs[i] = word() + " " + word() + " " + word()
	}
	return l, qs
}

// BenchmarkRetrieve ranks 10,000 facts of one resource for a query,
// sparse only (the floor: 5 ms): the head check, BM25, fusion
// and the top 8.
func BenchmarkRetrieve(b *testing.B) {
	l, qs := corpus(b, 10_000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		hits, err := l.Search(ctx, qs[i%len(qs)], 8)
		if err != nil || len(hits) == 0 {
			b.Fatalf("Search = %d hits, %v", len(hits), err)
		}
	}
}

// BenchmarkRecall is one Recall over 10,000 facts: retrieval and the
// fenced block of the top 8 within a 500-token budget.
func BenchmarkRecall(b *testing.B) {
	l, qs := corpus(b, 10_000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		items, err := l.Recall(ctx, layer.Query{Text: qs[i%len(qs)], Budget: 500})
		if err != nil || len(items) != 1 {
			b.Fatalf("Recall = %d items, %v", len(items), err)
		}
	}
}

// BenchmarkInit rebuilds the index of 10,000 facts (10,000 stored
// records) from a memory store, as a new process does.
func BenchmarkInit(b *testing.B) {
	store := storage.NewMemoryStore()
	corpusOn(b, store, 10_000)
	tmpl, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	env := layer.Env{ThreadID: "t", ResourceID: "user-1", Store: store}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := tmpl.Init(context.Background(), env); err != nil {
			b.Fatal(err)
		}
	}
}
