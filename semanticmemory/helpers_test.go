package semanticmemory_test

import (
	"context"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// clock returns a Now that starts at a fixed time and advances one
// second per call. It is safe for concurrent use, as Config.Now must be:
// runs of several users call it at once.
func clock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// bind returns cfg's layer bound to resource "user-1", thread thread, on
// store.
func bind(t testing.TB, cfg semanticmemory.Config, store storage.Store, thread string) *semanticmemory.Layer {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = clock()
	}
	tmpl, err := semanticmemory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tmpl.Init(context.Background(), layer.Env{ThreadID: thread, ResourceID: "user-1", Store: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return l.(*semanticmemory.Layer)
}

func remember(t testing.TB, l *semanticmemory.Layer, kind, text string) semanticmemory.Fact {
	t.Helper()
	f, err := l.Remember(context.Background(), semanticmemory.Memo{Text: text, Kind: kind, Importance: 0.5})
	if err != nil {
		t.Fatalf("Remember(%q): %v", text, err)
	}
	return f
}

// recall returns the text Recall gives for query (unbounded), or "".
func recall(t testing.TB, l *semanticmemory.Layer, query string) string {
	t.Helper()
	items, err := l.Recall(context.Background(), layer.Query{Text: query, Budget: layer.Unbounded})
	if err != nil {
		t.Fatalf("Recall(%q): %v", query, err)
	}
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.Text)
	}
	return b.String()
}

// ngramEmbedder is a test embedder that does not know the queries: the
// hashed character trigrams of each token, in 64 dimensions.
type ngramEmbedder struct{ calls int }

func (e *ngramEmbedder) vec(text string) []float32 {
	v := make([]float32, 64)
	for _, tok := range lexical.Tokens(nil, text) {
		w := "^" + tok + "$"
		for i := 0; i+3 <= len(w); i++ {
			h := fnv.New32a()
			h.Write([]byte(w[i : i+3]))
			v[h.Sum32()%64]++
		}
	}
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	if n > 0 {
		for i := range v {
			v[i] /= float32(math.Sqrt(n))
		}
	}
	return v
}

func (e *ngramEmbedder) EmbedDocuments(_ context.Context, texts []string) ([][]float32, error) {
	e.calls += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.vec(t)
	}
	return out, nil
}

func (e *ngramEmbedder) EmbedQuery(_ context.Context, text string) ([]float32, error) {
	return e.vec(text), nil
}

// countingStore counts the calls made to a store.
type countingStore struct {
	storage.Store
	gets, lists int
}

func (c *countingStore) Get(ctx context.Context, key string) (storage.Item, error) {
	c.gets++
	return c.Store.Get(ctx, key)
}

func (c *countingStore) List(ctx context.Context, prefix string) ([]string, error) {
	c.lists++
	return c.Store.List(ctx, prefix)
}
