package storage

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/memlayer/memlayer/internal/lexical"
)

// MemoryIndex is an in-process [Searcher] that ranks text with
// internal/lexical's BM25. [MemoryStore] stores search through one. Its zero
// value is ready to use.
//
// A text query scores every document of the collection, so its cost grows
// with the collection: it is meant for the in-memory store and for the
// bounded windows that layers keep on stores without a Searcher. A
// filtered listing without text reads only the documents of the filter's
// rarest field value.
type MemoryIndex struct {
	mu    sync.Mutex
	cols  map[string]*memCollection
	seq   int64
	close bool
}

type memCollection struct {
	docs map[string]*memDoc
	// byField holds the documents of each field value (name, then value,
	// then ID), so that a filtered listing reads only the documents of
	// one value.
	byField map[string]map[string]map[string]*memDoc
	// corpus holds the documents in order, rebuilt when a document's
	// text changes or a document is removed; nil until a text query
	// needs it.
	corpus *lexical.Corpus
	order  []*memDoc
}

type memDoc struct {
	Document
	seq int64
	at  int // the document's place in order, while corpus is built
}

// Index implements [Searcher].
func (x *MemoryIndex) Index(ctx context.Context, collection string, docs ...Document) error {
	if err := x.check(ctx, "index", collection); err != nil {
		return err
	}
	for _, d := range docs {
		if err := ValidateDocument(d); err != nil {
			return fmt.Errorf("storage: index %s: %w", Quote(collection), err)
		}
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.close {
		return fmt.Errorf("storage: index %s: %w", Quote(collection), ErrClosed)
	}
	c := x.collection(collection)
	for _, d := range docs {
		x.seq++
		c.add(&memDoc{Document: cloneDoc(d), seq: x.seq})
	}
	return nil
}

// collection returns the collection of that name, created empty when
// it has no documents yet. The caller holds x.mu.
func (x *MemoryIndex) collection(name string) *memCollection {
	if x.cols == nil {
		x.cols = map[string]*memCollection{}
	}
	c := x.cols[name]
	if c == nil {
		c = &memCollection{docs: map[string]*memDoc{}}
		x.cols[name] = c
	}
	return c
}

// add adds md to c, or replaces the document of its ID. A new document
// extends the corpus; a replacement with the same text (a marker's new
// fields, say) takes the old one's place in it; any other replacement
// drops the corpus, to be rebuilt in order.
func (c *memCollection) add(md *memDoc) {
	old, ok := c.docs[md.ID]
	switch {
	case c.corpus == nil:
	case !ok:
		md.at = len(c.order)
		c.corpus.Add(md.ID, md.Text)
		c.order = append(c.order, md)
	case old.Text == md.Text:
		md.at = old.at
		c.order[md.at] = md
	default:
		c.corpus, c.order = nil, nil
	}
	if ok {
		c.unfield(old)
	}
	c.docs[md.ID] = md
	if c.byField == nil {
		c.byField = map[string]map[string]map[string]*memDoc{}
	}
	for name, value := range md.Fields {
		values := c.byField[name]
		if values == nil {
			values = map[string]map[string]*memDoc{}
			c.byField[name] = values
		}
		if values[value] == nil {
			values[value] = map[string]*memDoc{}
		}
		values[value][md.ID] = md
	}
}

// unfield removes d from the documents of its field values.
func (c *memCollection) unfield(d *memDoc) {
	for name, value := range d.Fields {
		docs := c.byField[name][value]
		delete(docs, d.ID)
		if len(docs) == 0 {
			delete(c.byField[name], value)
		}
		if len(c.byField[name]) == 0 {
			delete(c.byField, name)
		}
	}
}

// Unindex implements [Searcher].
func (x *MemoryIndex) Unindex(ctx context.Context, collection string, ids ...string) error {
	if err := x.check(ctx, "unindex", collection); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.close {
		return fmt.Errorf("storage: unindex %s: %w", Quote(collection), ErrClosed)
	}
	c := x.cols[collection]
	if c == nil {
		return nil
	}
	c.remove(ids)
	if len(c.docs) == 0 {
		delete(x.cols, collection)
	}
	return nil
}

// remove removes the documents of ids from c, those it holds. A removal
// drops the corpus, to be rebuilt in order.
func (c *memCollection) remove(ids []string) {
	for _, id := range ids {
		if d, ok := c.docs[id]; ok {
			c.unfield(d)
			delete(c.docs, id)
			c.corpus, c.order = nil, nil
		}
	}
}

// Search implements [Searcher].
func (x *MemoryIndex) Search(ctx context.Context, collection string, q Query) ([]Hit, error) {
	if err := x.check(ctx, "search", collection); err != nil {
		return nil, err
	}
	k, err := ValidateQuery(q)
	if err != nil {
		return nil, fmt.Errorf("storage: search %s: %w", Quote(collection), err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.close {
		return nil, fmt.Errorf("storage: search %s: %w", Quote(collection), ErrClosed)
	}
	c := x.cols[collection]
	if c == nil {
		return nil, nil
	}
	ranked := c.rank(q)
	hits := make([]Hit, 0, min(k, len(ranked)))
	for _, s := range ranked[:min(k, len(ranked))] {
		hits = append(hits, Hit{ID: s.doc.ID, Text: s.doc.Text, Fields: maps.Clone(s.doc.Fields), Score: s.score})
	}
	return hits, nil
}

// rank returns the documents of c that q asks for, best first: by text,
// by vector, by both fused, or newest first when q has neither.
func (c *memCollection) rank(q Query) []scored {
	switch text := strings.TrimSpace(q.Text) != ""; {
	case text && len(q.Vector) > 0:
		return fuse(c.byText(q), c.byVector(q))
	case text:
		return c.byText(q)
	case len(q.Vector) > 0:
		return c.byVector(q)
	default:
		return c.recent(q)
	}
}

// Collections implements [Searcher].
func (x *MemoryIndex) Collections(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: collections: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.close {
		return nil, fmt.Errorf("storage: collections: %w", ErrClosed)
	}
	var names []string
	for n := range x.cols {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Drop implements [Searcher].
func (x *MemoryIndex) Drop(ctx context.Context, collection string) error {
	if err := x.check(ctx, "drop", collection); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.close {
		return fmt.Errorf("storage: drop %s: %w", Quote(collection), ErrClosed)
	}
	delete(x.cols, collection)
	return nil
}

// Close makes every later call fail with [ErrClosed] and frees the index.
func (x *MemoryIndex) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.close, x.cols = true, nil
	return nil
}

func (x *MemoryIndex) check(ctx context.Context, op, collection string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: %s %s: %w", op, Quote(collection), err)
	}
	if err := ValidateKey(collection); err != nil {
		return fmt.Errorf("storage: %s: collection: %w", op, err)
	}
	return nil
}

type scored struct {
	doc   *memDoc
	score float64
}

// byText ranks the documents that share a term with q.Text by BM25.
func (c *memCollection) byText(q Query) []scored {
	if c.corpus == nil {
		c.corpus = &lexical.Corpus{}
		c.order = slices.SortedFunc(maps.Values(c.docs), func(a, b *memDoc) int { return cmp.Compare(a.seq, b.seq) })
		for i, d := range c.order {
			d.at = i
			c.corpus.Add(d.ID, d.Text)
		}
	}
	var out []scored
	for _, h := range c.corpus.Rank(q.Text) {
		d := c.order[h.Doc]
		if h.Score > 0 && Matches(d.Fields, q.Filter) {
			out = append(out, scored{d, h.Score})
		}
	}
	sortScored(out)
	return out
}

// byVector ranks the documents with a vector of q.Vector's length by
// cosine similarity.
func (c *memCollection) byVector(q Query) []scored {
	var out []scored
	for _, d := range c.docs {
		if len(d.Vector) == len(q.Vector) && Matches(d.Fields, q.Filter) {
			out = append(out, scored{d, Cosine(d.Vector, q.Vector)})
		}
	}
	sortScored(out)
	return out
}

// recent lists the documents that pass the filter, newest first. With a
// filter it reads only the documents of the filter's rarest value.
func (c *memCollection) recent(q Query) []scored {
	docs := c.docs
	for name, value := range q.Filter {
		if d := c.byField[name][value]; len(d) < len(docs) {
			docs = d
		}
	}
	var out []scored
	for _, d := range docs {
		if Matches(d.Fields, q.Filter) {
			out = append(out, scored{d, 0})
		}
	}
	sortScored(out)
	if q.Oldest {
		slices.Reverse(out)
	}
	return out
}

// fuse merges rankings by reciprocal rank fusion.
func fuse(rankings ...[]scored) []scored {
	sum := map[*memDoc]float64{}
	for _, r := range rankings {
		for i, s := range r {
			sum[s.doc] += 1 / float64(RRFK+i+1)
		}
	}
	out := make([]scored, 0, len(sum))
	for d, s := range sum {
		out = append(out, scored{d, s})
	}
	sortScored(out)
	return out
}

// sortScored orders by score, then newest first.
func sortScored(s []scored) {
	slices.SortFunc(s, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(b.doc.seq, a.doc.seq)
	})
}

func cloneDoc(d Document) Document {
	d.Fields = maps.Clone(d.Fields)
	d.Vector = slices.Clone(d.Vector)
	return d
}
