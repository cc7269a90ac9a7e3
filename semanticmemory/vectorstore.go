package semanticmemory

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/vectorstores"
)

// Metadata keys of the documents the layer mirrors into a vector store.
const (
	MetaLayer   = "memlayer_layer"
	MetaScope   = "memlayer_scope"
	MetaFactID  = "memlayer_fact_id"
	MetaVersion = "memlayer_fact_version"
	MetaKind    = "memlayer_fact_kind"
)

// DefaultSearchK is how many documents one search asks the vector store
// for when VectorStore.K is 0.
const DefaultSearchK = 64

// VectorStore adapts a langchaingo vectorstores.VectorStore (pgvector,
// Qdrant, Redis vector search, Chroma ...) to the layer, for corpora
// beyond one machine: every fact version the layer writes is mirrored
// into it as a document (the fact text, with the layer ID, scope key,
// fact ID, version and kind in its metadata), and its SimilaritySearch is
// the dense ranker of Recall, Candidates and Search (in place of
// Config.Embedder's cosine). The facts themselves stay in the
// storage.Store, which remains the source of truth: a document whose
// fact is superseded, forgotten, cleared or of another layer or scope is
// ignored, so a vector store that cannot delete stays correct. A failed
// mirror is logged (the fact is stored all the same); a failed search
// is logged and the Recall falls back to sparse retrieval.
type VectorStore struct {
	// Store is the user's vector store. Required.
	Store vectorstores.VectorStore
	// Options are passed to every AddDocuments and SimilaritySearch call
	// (a namespace, an embedder, filters).
	Options []vectorstores.Option
	// K is how many documents one search asks for. Zero means
	// DefaultSearchK.
	K int
}

// mirror adds the live versions among facts to the vector store.
func (l *Layer) mirror(ctx context.Context, facts []Fact) {
	vs := l.cfg.VectorStore
	if vs == nil {
		return
	}
	var docs []schema.Document
	for _, f := range facts {
		if f.gone() {
			continue
		}
		docs = append(docs, schema.Document{PageContent: f.Text, Metadata: map[string]any{
			MetaLayer: l.cfg.StorageName(), MetaScope: l.log.Scope, MetaFactID: f.ID, MetaVersion: f.Version, MetaKind: f.Kind,
		}})
	}
	if len(docs) == 0 {
		return
	}
	if _, err := vs.Store.AddDocuments(ctx, docs, vs.Options...); err != nil {
		l.log.Logger.LogAttrs(ctx, slog.LevelWarn, "semanticmemory: mirroring facts into the vector store failed",
			slog.String("layer", l.cfg.ID), slog.Int("facts", len(docs)), slog.Any("error", err))
	}
}

// search returns the live facts the vector store finds for query, in its
// order, each once, with the store's Document.Score as their similarity
// (the stores langchaingo wraps report a similarity, higher is closer;
// the caller clamps it to [0, 1]).
func (vs *VectorStore) search(ctx context.Context, l *Layer, query string) ([]denseHit, error) {
	k := cmp.Or(max(vs.K, 0), DefaultSearchK) // DefaultSearchK when not positive
	docs, err := vs.Store.SimilaritySearch(ctx, query, k, vs.Options...)
	if err != nil {
		return nil, fmt.Errorf("vector store search: %w", err)
	}
	var hits []denseHit
	seen := map[string]bool{}
	for _, d := range docs {
		id := str(d.Metadata[MetaFactID])
		if seen[id] {
			continue
		}
		f, ok, err := l.mirrored(ctx, d)
		if err != nil {
			return nil, err
		}
		if ok {
			seen[id] = true
			hits = append(hits, denseHit{f, float64(d.Score)})
		}
	}
	return hits, nil
}

// mirrored returns the live fact d mirrors, and false when d is not a
// mirror of the live version of one of l's facts.
func (l *Layer) mirrored(ctx context.Context, d schema.Document) (view, bool, error) {
	meta := d.Metadata
	if str(meta[MetaLayer]) != l.cfg.StorageName() || str(meta[MetaScope]) != l.log.Scope {
		return view{}, false, nil
	}
	f, ok, err := l.lookup(ctx, str(meta[MetaFactID]))
	if err != nil || !ok {
		return view{}, false, err
	}
	return f, str(meta[MetaVersion]) == strconv.Itoa(f.Version), nil
}

// str renders a metadata value as text: backends return numbers as int,
// int64, float64 or strings.
func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'f', -1, 32)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
