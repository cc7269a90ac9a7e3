package semantictest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode"

	"github.com/tmc/langchaingo/embeddings"
)

// Defaults of [NGramEmbedder]'s zero fields.
const (
	DefaultDim  = 512 // vector length
	DefaultMinN = 3   // shortest n-gram, in runes
	DefaultMaxN = 4   // longest n-gram, in runes
)

// NGramEmbedder is an [embeddings.Embedder] for tests: it embeds a text as
// hashed character n-grams, with no model and no network.
//
// The text is lowercased and split into words at every rune that is not a
// letter or a digit. Each word is wrapped in boundary markers ("<" and ">")
// and every run of MinN to MaxN runes of the wrapped word is hashed (FNV-1a)
// to one of Dim positions, adding +1 or −1 there by another bit of the same
// hash; a wrapped word shorter than MinN counts as one n-gram. The vector is
// then scaled to unit length (L2 norm 1), so the cosine similarity of two
// vectors is their dot product.
//
// Texts that share words or word fragments ("invoice", "invoices",
// "invoicing") get a high cosine similarity; texts that share none get one
// near 0. It captures spelling, not meaning: a paraphrase in other words
// scores like an unrelated text. A text with no letter or digit embeds to
// the zero vector (so, rarely, can one whose signed n-grams cancel out,
// with a tiny Dim), whose cosine similarity with anything callers should
// take as 0.
//
// The result depends only on the text and the three fields, never on other
// texts, so it is the same across calls, processes and machines. The zero
// value is ready to use (512 dimensions, 3- and 4-grams). An NGramEmbedder
// holds no state: it is safe for concurrent use.
type NGramEmbedder struct {
	// Dim is the length of every vector; zero means DefaultDim.
	Dim int
	// MinN is the shortest n-gram, in runes; zero means DefaultMinN.
	MinN int
	// MaxN is the longest n-gram, in runes; zero means DefaultMaxN
	// (or MinN if MinN is larger).
	MaxN int
}

var _ embeddings.Embedder = NGramEmbedder{}

// EmbedDocuments returns one vector for each text, in order. It fails only
// on an invalid configuration or a done ctx.
func (e NGramEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	dim, minN, maxN, err := e.config()
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("semantictest: embed documents: %w", err)
		}
		out[i] = vector(t, dim, minN, maxN)
	}
	return out, nil
}

// EmbedQuery returns the vector of text. A query and a document with the
// same text get the same vector. It fails only on an invalid configuration
// or a done ctx.
func (e NGramEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	dim, minN, maxN, err := e.config()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("semantictest: embed query: %w", err)
	}
	return vector(text, dim, minN, maxN), nil
}

// errConfig is wrapped by every configuration error.
var errConfig = errors.New("semantictest: invalid NGramEmbedder")

// config returns the fields with their defaults applied, or an error if
// they make no sense.
func (e NGramEmbedder) config() (dim, minN, maxN int, err error) {
	dim, minN = cmp.Or(e.Dim, DefaultDim), cmp.Or(e.MinN, DefaultMinN)
	maxN = cmp.Or(e.MaxN, max(DefaultMaxN, minN))
	switch {
	case dim < 0 || minN < 0 || maxN < 0:
		return 0, 0, 0, fmt.Errorf("%w: negative field (Dim %d, MinN %d, MaxN %d)", errConfig, e.Dim, e.MinN, e.MaxN)
	case minN > maxN:
		return 0, 0, 0, fmt.Errorf("%w: MinN %d is larger than MaxN %d", errConfig, minN, maxN)
	}
	return dim, minN, maxN, nil
}

// vector computes the unit vector of text (the zero vector if text has no
// word).
func vector(text string, dim, minN, maxN int) []float32 {
	acc := make([]float64, dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		addGrams(acc, w, minN, maxN)
	}
	return unit(acc)
}

// addGrams adds to acc the character n-grams of word, marked "<word>",
// for n from minN to maxN; the marked word whole when it is shorter than
// minN.
func addGrams(acc []float64, word string, minN, maxN int) {
	runes := []rune("<" + word + ">")
	if len(runes) < minN {
		add(acc, string(runes))
		return
	}
	for n := minN; n <= maxN && n <= len(runes); n++ {
		for i := 0; i+n <= len(runes); i++ {
			add(acc, string(runes[i:i+n]))
		}
	}
}

// unit returns acc scaled to length 1, or the zero vector.
func unit(acc []float64) []float32 {
	var sum float64
	for _, v := range acc {
		sum += v * v
	}
	out := make([]float32, len(acc))
	if sum == 0 {
		return out
	}
	norm := math.Sqrt(sum)
	for i, v := range acc {
		out[i] = float32(v / norm)
	}
	return out
}

// add hashes gram to a position of acc and adds ±1 there.
func add(acc []float64, gram string) {
	h := fnv.New64a()
	h.Write([]byte(gram)) // never fails
	s := h.Sum64()
	sign := 1.0
	if s>>63 == 1 {
		sign = -1
	}
	acc[(s&(1<<63-1))%uint64(len(acc))] += sign
}
