package redis_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
)

// TestSearchRanksAsMemoryIndex: the Redis index scores text with the
// same tokenizer, stemmer and BM25 as storage.MemoryIndex, so the two
// return the same hits in the same order with the same scores.
func TestSearchRanksAsMemoryIndex(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, redis.Config{})
	var mem storage.MemoryIndex
	c := storage.IndexName("notes", storage.ResourceScope("u1"), "docs")
	words := []string{"pricing", "page", "nonprofit", "tier", "hero", "banner", "draft", "published", "Lisbon", "café", "footer", "gallery", "webinar", "roadmap", "careers", "partner", "launch", "brand", "review", "invoice"}
	var docs []storage.Document
	for i := range 200 {
		text := ""
		for j := range 1 + i%7 {
			text += words[(i*(j+3)+j*j)%len(words)] + " "
		}
		docs = append(docs, storage.Document{ID: fmt.Sprintf("d%03d", i), Text: text, Fields: map[string]string{"kind": []string{"a", "b", "c"}[i%3]}})
	}
	for _, idx := range []storage.Searcher{s, &mem} {
		if err := idx.Index(ctx, c, docs[:120]...); err != nil {
			t.Fatal(err)
		}
		if err := idx.Index(ctx, c, docs[80:]...); err != nil { // replaces 80-119
			t.Fatal(err)
		}
		if err := idx.Unindex(ctx, c, "d005", "d150"); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []storage.Query{
		{Text: "pricing page", K: 50},
		{Text: "Café nonprofit tiers", K: 20},
		{Text: "published", Filter: map[string]string{"kind": "b"}, K: 20},
		{K: 30},
		{K: 30, Oldest: true, Filter: map[string]string{"kind": "c"}},
	} {
		got, err := s.Search(ctx, c, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := mem.Search(ctx, c, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("query %+v: %d hits, MemoryIndex %d", q, len(got), len(want))
		}
		for i := range got {
			if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-9 || got[i].Text != want[i].Text {
				t.Errorf("query %+v: hit %d = %s %.6f, MemoryIndex %s %.6f", q, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
			}
		}
	}
}

// TestSearchKeysStayOutOfRecords: the index's keys are not records: List
// does not return them, and the records of a prefix are unchanged by
// indexing under the same name.
func TestSearchKeysStayOutOfRecords(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, redis.Config{})
	c := storage.IndexName("notes", storage.ResourceScope("u1"), "docs")
	if _, err := s.Put(ctx, c, []byte("record"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := s.Index(ctx, c, storage.Document{ID: "a", Text: "indexed text"}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != c {
		t.Errorf("List = %q, want only the record %s", keys, c)
	}
	if err := s.Drop(ctx, c); err != nil {
		t.Fatal(err)
	}
	if it, err := s.Get(ctx, c); err != nil || string(it.Value) != "record" {
		t.Errorf("the record after Drop of the collection of the same name = %q, %v", it.Value, err)
	}
	raw := rawClient(t, serverURL(t))
	n, err := raw.Keys(ctx, s.Namespace()+"\x00*").Result()
	if err != nil || len(n) != 0 {
		t.Errorf("index keys left after Drop of the only collection: %q, %v", n, err)
	}
}
