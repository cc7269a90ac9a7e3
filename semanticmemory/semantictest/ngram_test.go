package semantictest

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
)

// dot is the cosine similarity of two unit vectors.
func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func embedOne(t *testing.T, e NGramEmbedder, text string) []float32 {
	t.Helper()
	v, err := e.EmbedQuery(t.Context(), text)
	if err != nil {
		t.Fatalf("EmbedQuery(%q): %v", text, err)
	}
	return v
}

func TestMemory51_NGramEmbedderDeterministic(t *testing.T) {
	texts := []string{"Alice prefers dark mode in the editor", "The Q3 launch moved to October", "déjà vu, naïve café"}
	docs, err := NGramEmbedder{}.EmbedDocuments(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(texts) {
		t.Fatalf("EmbedDocuments returned %d vectors for %d texts", len(docs), len(texts))
	}
	for i, text := range texts {
		// A fresh value, a query instead of a document, and a batch of
		// one: always the same vector.
		if q := embedOne(t, NGramEmbedder{}, text); !slices.Equal(q, docs[i]) {
			t.Errorf("%q: EmbedQuery differs from EmbedDocuments", text)
		}
		alone, err := NGramEmbedder{Dim: DefaultDim}.EmbedDocuments(t.Context(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(alone[0], docs[i]) {
			t.Errorf("%q: vector depends on the other texts of the batch", text)
		}
	}
	// Case and punctuation do not matter; words do.
	if a, b := embedOne(t, NGramEmbedder{}, "Dark mode!"), embedOne(t, NGramEmbedder{}, "dark   MODE"); !slices.Equal(a, b) {
		t.Error(`"Dark mode!" and "dark   MODE" differ`)
	}
}

// TestMemory52_NGramEmbedderPinned pins the hashing: the positions and
// signs of one short word must never change, or every figure measured with
// the embedder would silently change with it.
func TestMemory52_NGramEmbedderPinned(t *testing.T) {
	v := embedOne(t, NGramEmbedder{}, "CMS")
	// "<cms>" gives five n-grams: <cm cms ms> <cms cms>.
	got := map[int]float32{}
	for i, x := range v {
		if x != 0 {
			got[i] = x
		}
	}
	const r = 0.4472136 // 1/√5
	want := map[int]float32{76: r, 186: -r, 351: r, 452: r, 477: r}
	if len(got) != len(want) {
		t.Fatalf("non-zero positions: got %v, want %v", got, want)
	}
	for i, x := range want {
		if math.Abs(float64(got[i]-x)) > 1e-6 {
			t.Errorf("position %d: got %v, want %v (all: %v)", i, got[i], x, got)
		}
	}
}

func TestMemory53_NGramEmbedderUnitNorm(t *testing.T) {
	for _, e := range []NGramEmbedder{{}, {Dim: 16}, {Dim: 1024, MinN: 2, MaxN: 5}, {MinN: 1, MaxN: 1}} {
		for _, text := range []string{"a", "Invoice INV-2291 was paid", "日本語のテキスト", "x y z 1 2 3"} {
			v := embedOne(t, e, text)
			wantDim := e.Dim
			if wantDim == 0 {
				wantDim = DefaultDim
			}
			if len(v) != wantDim {
				t.Errorf("%+v %q: length %d, want %d", e, text, len(v), wantDim)
			}
			if n := math.Sqrt(dot(v, v)); math.Abs(n-1) > 1e-5 {
				t.Errorf("%+v %q: norm %v, want 1", e, text, n)
			}
		}
	}
}

func TestMemory54_NGramEmbedderSimilarCloser(t *testing.T) {
	e := NGramEmbedder{}
	cases := []struct{ anchor, similar, unrelated string }{
		{"the invoice was paid", "invoices are paid monthly", "Bob likes hiking in the mountains"},
		{"Alice prefers dark mode", "dark mode preferred by Alice", "the deployment pipeline failed"},
		{"publish the landing page", "publishing landing pages", "quarterly budget review"},
		{"colour", "color", "umbrella"},
	}
	for _, c := range cases {
		a := embedOne(t, e, c.anchor)
		sim := dot(a, embedOne(t, e, c.similar))
		unr := dot(a, embedOne(t, e, c.unrelated))
		if sim <= unr {
			t.Errorf("%q: similar %q scores %.3f, not above unrelated %q %.3f", c.anchor, c.similar, sim, c.unrelated, unr)
		}
		if sim < 0.3 {
			t.Errorf("%q ~ %q: cosine %.3f, want ≥ 0.3", c.anchor, c.similar, sim)
		}
	}
	if s := dot(embedOne(t, e, "same text"), embedOne(t, e, "same text")); math.Abs(s-1) > 1e-5 {
		t.Errorf("identical texts: cosine %v, want 1", s)
	}
}

func TestMemory55_NGramEmbedderEmptyText(t *testing.T) {
	for _, text := range []string{"", "   ", "?!, -- ..."} {
		v := embedOne(t, NGramEmbedder{}, text)
		if len(v) != DefaultDim {
			t.Errorf("%q: length %d, want %d", text, len(v), DefaultDim)
		}
		if slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
			t.Errorf("%q: want the zero vector", text)
		}
	}
	docs, err := NGramEmbedder{}.EmbedDocuments(t.Context(), nil)
	if err != nil || len(docs) != 0 {
		t.Errorf("EmbedDocuments(nil) = %d vectors, %v; want none, nil", len(docs), err)
	}
}

func TestMemory56_NGramEmbedderErrors(t *testing.T) {
	for _, e := range []NGramEmbedder{{Dim: -1}, {MinN: -2}, {MinN: 5, MaxN: 3}} {
		if _, err := e.EmbedQuery(t.Context(), "x"); !errors.Is(err, errConfig) {
			t.Errorf("%+v EmbedQuery: err %v, want a configuration error", e, err)
		}
		if _, err := e.EmbedDocuments(t.Context(), []string{"x"}); !errors.Is(err, errConfig) {
			t.Errorf("%+v EmbedDocuments: err %v, want a configuration error", e, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := (NGramEmbedder{}).EmbedQuery(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Errorf("EmbedQuery on a cancelled ctx: err %v, want context.Canceled", err)
	}
	if _, err := (NGramEmbedder{}).EmbedDocuments(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("EmbedDocuments on a cancelled ctx: err %v, want context.Canceled", err)
	}
}

func TestMemory57_NGramEmbedderConcurrent(t *testing.T) {
	e := NGramEmbedder{Dim: 64}
	want := embedOne(t, e, "shared embedder")
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 16 {
		wg.Go(func() {
			for range 50 {
				v, err := e.EmbedQuery(context.Background(), "shared embedder")
				if err != nil || !slices.Equal(v, want) {
					errs <- "concurrent EmbedQuery gave another vector or an error"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Error(msg)
	}
}

// FuzzMemory63_NGramEmbedder checks on any text: no panic, the configured
// length, unit norm or the zero vector (for a text with no word), and the
// same vector twice.
func FuzzMemory63_NGramEmbedder(f *testing.F) {
	for _, s := range []string{"", "a", "Alice prefers dark mode", "\xff\xfe broken", "日本語", "x-y_z/1.2", "  \t\n"} {
		f.Add(s, 0, 0, 0)
	}
	f.Add("short", 8, 1, 6)
	f.Fuzz(func(t *testing.T, text string, dim, minN, maxN int) {
		e := NGramEmbedder{Dim: dim % 2048, MinN: minN % 8, MaxN: maxN % 8}
		v, err := e.EmbedQuery(t.Context(), text)
		if err != nil {
			if !errors.Is(err, errConfig) {
				t.Fatalf("%+v: unexpected error %v", e, err)
			}
			return
		}
		d, _, _, _ := e.config()
		if len(v) != d {
			t.Fatalf("%+v: length %d, want %d", e, len(v), d)
		}
		n := math.Sqrt(dot(v, v))
		if n != 0 && math.Abs(n-1) > 1e-4 {
			t.Fatalf("%+v %q: norm %v, want 1 or 0", e, text, n)
		}
		if again, _ := e.EmbedQuery(t.Context(), text); !slices.Equal(again, v) {
			t.Fatalf("%+v %q: two calls differ", e, text)
		}
	})
}
