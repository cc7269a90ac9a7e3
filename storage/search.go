package storage

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Searcher is implemented by stores that keep a search index beside their
// records. A layer indexes small documents in a collection and queries the
// top k, so that recall covers everything a user's memory holds without
// loading it into the process.
//
// Without it, a layer that searches keeps an in-process [MemoryIndex]
// filled from the records it loads, and recalls only from those.
//
// A collection is named like a key, by [IndexName], so that it lives under
// one layer's scope: erasing a scope drops its collections (see
// [DropIndexes]). Implementations must be safe for concurrent use.
type Searcher interface {
	// Index adds docs to collection, replacing any document of the same
	// ID. A replaced document counts as newly indexed.
	Index(ctx context.Context, collection string, docs ...Document) error

	// Unindex removes the documents of the given IDs. Missing IDs are no
	// error.
	Unindex(ctx context.Context, collection string, ids ...string) error

	// Search returns at most q.K documents of collection, best first.
	// See [Query] for what matches and how hits are ordered. A collection
	// that does not exist has no hits.
	Search(ctx context.Context, collection string, q Query) ([]Hit, error)

	// Collections returns the names of the non-empty collections that
	// start with prefix, sorted.
	Collections(ctx context.Context, prefix string) ([]string, error)

	// Drop deletes a collection and all its documents. Dropping a
	// collection that does not exist is no error.
	Drop(ctx context.Context, collection string) error
}

// Limits of a [Document] and a [Query], the same on every backend.
const (
	// MaxDocIDLen is the longest document ID, in bytes.
	MaxDocIDLen = 512
	// MaxDocTextLen is the longest document text, in bytes.
	MaxDocTextLen = 64 << 10
	// MaxFields is the most filter fields a document or query may have.
	MaxFields = 8
	// MaxFieldValueLen is the longest field value, in bytes.
	MaxFieldValueLen = 256
	// MaxVectorDims is the longest vector.
	MaxVectorDims = 4096
	// DefaultK is the number of hits of a query whose K is zero.
	DefaultK = 10
	// MaxK is the most hits one query returns.
	MaxK = 1000
)

// ErrInvalidDocument means a document or a query breaks a limit of
// [Searcher]: an empty or over-long ID, text over [MaxDocTextLen], a bad
// field name, a vector with a NaN. Nothing was indexed.
var ErrInvalidDocument = errors.New("storage: invalid document")

// Document is one searchable item of a collection.
type Document struct {
	// ID names the document in its collection: non-empty, valid UTF-8,
	// at most MaxDocIDLen bytes.
	ID string
	// Text is what a text query matches.
	Text string
	// Fields are exact-match filters, such as a kind or a thread. A
	// name is 1 to 32 bytes of a-z, 0-9 and '_'.
	Fields map[string]string
	// Vector is an optional embedding, compared by cosine similarity
	// with a query's vector of the same length.
	Vector []float32
}

// Query asks a collection for its best documents.
//
// A text query matches documents that share at least one term with it
// (terms are tokenized and stemmed by the backend; case does not count).
// A vector query ranks the documents that have a vector of its length by
// cosine similarity. With both, the two rankings are fused by reciprocal
// rank fusion. With neither, every document that passes the filter
// matches, most recently indexed first (oldest first with Oldest). Ties
// go to the more recently indexed document.
//
// A backend may bound what a text query reads so that its cost does not
// grow with the collection: storage/sqlite, storage/redis and
// storage/postgres read each term's newest documents only, as many as K
// at least (see each one's Store.Search), and a filtered text query
// checks a bounded number of each term's documents against the filter.
// A term in more documents than that weighs little beside a rarer one; a
// document that shares only such a term with the query, and is older
// than that term's newest, is not found.
type Query struct {
	// Text is the query's words.
	Text string
	// Vector is an optional embedding of the query.
	Vector []float32
	// Filter keeps only documents whose fields equal every entry.
	Filter map[string]string
	// K is the most hits to return: DefaultK when zero, at most MaxK.
	K int
	// Oldest lists a query without text or vector oldest first, as an
	// eviction of the least recently indexed documents needs.
	Oldest bool
}

// Hit is one document a query found.
type Hit struct {
	ID     string
	Text   string
	Fields map[string]string
	// Score orders the hits of one query: higher is better. Scores of
	// different queries or backends are not comparable.
	Score float64
}

// RRFK is the constant of reciprocal rank fusion: a document ranked r
// (from 1) by one ranking scores 1/(RRFK+r) from it.
const RRFK = 60

// IndexName returns the name of a layer's collection in a scope. It is
// [LayerKey] of the same parts, so that a collection sits under the
// scope's [LayerPrefix] as the scope's records do.
func IndexName(layerID, scopeKey, name string) string {
	return LayerKey(layerID, scopeKey, name)
}

// DropIndexes drops every collection of s whose name starts with prefix,
// such as a scope's [LayerPrefix], and returns the names it dropped.
func DropIndexes(ctx context.Context, s Searcher, prefix string) ([]string, error) {
	names, err := s.Collections(ctx, prefix)
	if err != nil {
		return nil, err
	}
	for i, n := range names {
		if err := s.Drop(ctx, n); err != nil {
			return names[:i], err
		}
	}
	return names, nil
}

// ValidateDocument reports whether d is within the limits every
// [Searcher] accepts. Backends call it before indexing.
func ValidateDocument(d Document) error {
	switch {
	case d.ID == "":
		return fmt.Errorf("%w: empty ID", ErrInvalidDocument)
	case len(d.ID) > MaxDocIDLen:
		return fmt.Errorf("%w: ID %s longer than %d bytes", ErrInvalidDocument, Quote(d.ID), MaxDocIDLen)
	case !utf8.ValidString(d.ID):
		return fmt.Errorf("%w: ID %s is not valid UTF-8", ErrInvalidDocument, Quote(d.ID))
	case len(d.Text) > MaxDocTextLen:
		return fmt.Errorf("%w: text of %s is %d bytes, over %d", ErrInvalidDocument, Quote(d.ID), len(d.Text), MaxDocTextLen)
	case !utf8.ValidString(d.Text):
		return fmt.Errorf("%w: text of %s is not valid UTF-8", ErrInvalidDocument, Quote(d.ID))
	}
	if err := validateFields(d.Fields); err != nil {
		return fmt.Errorf("document %s: %w", Quote(d.ID), err)
	}
	return validateVector(d.Vector)
}

// ValidateQuery reports whether q is within the limits every [Searcher]
// accepts, and returns the number of hits it asks for.
func ValidateQuery(q Query) (k int, err error) {
	if len(q.Text) > MaxDocTextLen || !utf8.ValidString(q.Text) {
		return 0, fmt.Errorf("%w: query text is over %d bytes or not valid UTF-8", ErrInvalidDocument, MaxDocTextLen)
	}
	if err := validateFields(q.Filter); err != nil {
		return 0, fmt.Errorf("query filter: %w", err)
	}
	if err := validateVector(q.Vector); err != nil {
		return 0, err
	}
	switch {
	case q.K < 0:
		return 0, fmt.Errorf("%w: negative K %d", ErrInvalidDocument, q.K)
	case q.K == 0:
		return DefaultK, nil
	}
	return min(q.K, MaxK), nil
}

func validateFields(f map[string]string) error {
	if len(f) > MaxFields {
		return fmt.Errorf("%w: %d fields, over %d", ErrInvalidDocument, len(f), MaxFields)
	}
	for name, v := range f {
		if !fieldName(name) {
			return fmt.Errorf("%w: field name %s is not 1-32 bytes of a-z, 0-9, '_'", ErrInvalidDocument, Quote(name))
		}
		if len(v) > MaxFieldValueLen || !utf8.ValidString(v) {
			return fmt.Errorf("%w: field %s is over %d bytes or not valid UTF-8", ErrInvalidDocument, name, MaxFieldValueLen)
		}
	}
	return nil
}

func fieldName(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := range len(s) {
		if strings.IndexByte(fieldNameBytes, s[i]) < 0 {
			return false
		}
	}
	return true
}

// fieldNameBytes are the bytes a field name is made of.
const fieldNameBytes = "abcdefghijklmnopqrstuvwxyz0123456789_"

func validateVector(v []float32) error {
	if len(v) > MaxVectorDims {
		return fmt.Errorf("%w: vector of %d dimensions, over %d", ErrInvalidDocument, len(v), MaxVectorDims)
	}
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: vector holds NaN or Inf", ErrInvalidDocument)
		}
	}
	return nil
}

// Matches reports whether fields hold every entry of filter.
func Matches(fields, filter map[string]string) bool {
	for k, v := range filter {
		if got, ok := fields[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Cosine returns the cosine similarity of a and b, which must have the
// same length; 0 when either is all zeros.
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}
