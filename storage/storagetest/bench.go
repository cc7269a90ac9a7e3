package storagetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

// SearchBenchDocs is the size of the collection [BenchmarkSearch] queries.
const SearchBenchDocs = 100_000

// benchVocab is the vocabulary benchmark documents are drawn from; the
// words are ranked by frequency (Zipf), so a query mixes common and rare
// terms as natural text does.
var benchVocab = sync.OnceValue(func() []string {
	syll := []string{"ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "su", "do", "gra"}
	words := make([]string, 0, 5000)
	for i := range cap(words) {
		var b strings.Builder
		for n := i; ; n /= len(syll) {
			b.WriteString(syll[n%len(syll)])
			if n < len(syll) {
				break
			}
		}
		words = append(words, b.String())
	}
	return words
})

// benchDoc returns the i-th benchmark document: 12 words of a Zipf
// distribution over benchVocab, the same for a given i on every run.
func benchDoc(i int) storage.Document {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	vocab := benchVocab()
	z := rand.NewZipf(r, 1.1, 1, uint64(len(vocab)-1))
	var b strings.Builder
	for w := range 12 {
		if w > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(vocab[z.Uint64()])
	}
	return storage.Document{ID: fmt.Sprintf("doc-%06d", i), Text: b.String(), Fields: map[string]string{"kind": []string{"fact", "turn"}[i%2]}}
}

// BenchmarkSearch indexes [SearchBenchDocs] documents of one user in one
// collection of s, then measures text queries of three terms for the top
// 10: "common" holds a word found in a third of the documents, "rare"
// only words found in 0.1% or fewer.
func BenchmarkSearch(b *testing.B, s storage.Searcher) {
	ctx := b.Context()
	c := col("bench-user")
	indexBenchDocs(b, s, c)
	vocab := benchVocab()
	for _, bq := range []struct{ name, text string }{
		// A word in about a third of the documents, one in 2%, one in 0.1%.
		{"common", vocab[3] + " " + vocab[60] + " " + vocab[900]},
		// Three words in about 0.1%, 0.03% and 0.01% of the documents.
		{"rare", vocab[900] + " " + vocab[2000] + " " + vocab[4000]},
	} {
		b.Run(bq.name, func(b *testing.B) {
			q := storage.Query{Text: bq.text, K: 10}
			b.ReportAllocs()
			for b.Loop() {
				hits, err := s.Search(ctx, c, q)
				if err != nil {
					b.Fatal(err)
				}
				if len(hits) != 10 {
					b.Fatalf("%d hits, want 10", len(hits))
				}
			}
		})
	}
}

// indexBenchDocs indexes the [SearchBenchDocs] benchmark documents into
// the collection c of s, in batches of 500.
func indexBenchDocs(b *testing.B, s storage.Searcher, c string) {
	batch := make([]storage.Document, 0, 500)
	for i := range SearchBenchDocs {
		batch = append(batch, benchDoc(i))
		if len(batch) == cap(batch) {
			if err := s.Index(b.Context(), c, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkIndex measures indexing documents in batches of 100 into one
// collection of s that grows as it runs; it reports ns/doc.
func BenchmarkIndex(b *testing.B, s storage.Searcher) {
	ctx := b.Context()
	c := col("bench-user")
	const n = 100
	batch := make([]storage.Document, n)
	next := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range batch {
			batch[i] = benchDoc(next)
			next++
		}
		if err := s.Index(ctx, c, batch...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(next), "ns/doc")
}
