package storage_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

func hitIDs(hs []storage.Hit) []string {
	var ids []string
	for _, h := range hs {
		ids = append(ids, h.ID)
	}
	return ids
}

func TestMemoryIndex(t *testing.T) {
	ctx := context.Background()
	var x storage.MemoryIndex
	col := storage.IndexName("episodic", storage.ResourceScope("u1"), "log")
	other := storage.IndexName("episodic", storage.ResourceScope("u1/x"), "log")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(x.Index(ctx, col,
		storage.Document{ID: "a", Text: "Pricing for nonprofits page created", Fields: map[string]string{"kind": "tool"}},
		storage.Document{ID: "b", Text: "Hero section added to the landing page", Fields: map[string]string{"kind": "turn"}},
		storage.Document{ID: "c", Text: "The user prefers British spelling", Fields: map[string]string{"kind": "turn"}},
	))
	must(x.Index(ctx, other, storage.Document{ID: "a", Text: "pricing secret of another user"}))

	hits, err := x.Search(ctx, col, storage.Query{Text: "nonprofit pricing"})
	must(err)
	if got := hitIDs(hits); !slices.Equal(got, []string{"a"}) {
		t.Errorf("text query: got %v, want [a]", got)
	}
	hits, err = x.Search(ctx, col, storage.Query{Text: "page", Filter: map[string]string{"kind": "turn"}})
	must(err)
	if got := hitIDs(hits); !slices.Equal(got, []string{"b"}) {
		t.Errorf("filtered query: got %v, want [b]", got)
	}
	hits, err = x.Search(ctx, col, storage.Query{K: 2})
	must(err)
	if got := hitIDs(hits); !slices.Equal(got, []string{"c", "b"}) {
		t.Errorf("recent: got %v, want [c b]", got)
	}
	// Replacing a document makes it the newest and changes its text.
	must(x.Index(ctx, col, storage.Document{ID: "a", Text: "Archive renamed"}))
	hits, err = x.Search(ctx, col, storage.Query{Text: "pricing"})
	must(err)
	if len(hits) != 0 {
		t.Errorf("replaced text still found: %v", hitIDs(hits))
	}
	hits, err = x.Search(ctx, col, storage.Query{K: 1})
	must(err)
	if got := hitIDs(hits); !slices.Equal(got, []string{"a"}) {
		t.Errorf("replaced doc not newest: %v", got)
	}
	must(x.Unindex(ctx, col, "a", "missing"))
	hits, err = x.Search(ctx, col, storage.Query{Text: "archive"})
	must(err)
	if len(hits) != 0 {
		t.Errorf("unindexed doc found: %v", hitIDs(hits))
	}
	// Vectors rank by cosine; fused with text by RRF.
	must(x.Index(ctx, col, storage.Document{ID: "v1", Text: "north", Vector: []float32{1, 0}}, storage.Document{ID: "v2", Text: "east", Vector: []float32{0, 1}}))
	hits, err = x.Search(ctx, col, storage.Query{Vector: []float32{0.1, 0.9}, K: 1})
	must(err)
	if got := hitIDs(hits); !slices.Equal(got, []string{"v2"}) {
		t.Errorf("vector: got %v, want [v2]", got)
	}
	// Erasing u1's scope leaves u1/x's collection.
	dropped, err := storage.DropIndexes(ctx, &x, storage.LayerPrefix("episodic", storage.ResourceScope("u1")))
	must(err)
	if !slices.Equal(dropped, []string{col}) {
		t.Errorf("dropped %v, want [%s]", dropped, col)
	}
	hits, err = x.Search(ctx, other, storage.Query{Text: "pricing"})
	must(err)
	if got := hitIDs(hits); !slices.Equal(got, []string{"a"}) {
		t.Errorf("other user's index after erase: %v", got)
	}
	for _, bad := range []storage.Document{{}, {ID: "x", Fields: map[string]string{"Bad-Name": "v"}}, {ID: string(make([]byte, storage.MaxDocIDLen+1))}} {
		if err := x.Index(ctx, other, bad); !errors.Is(err, storage.ErrInvalidDocument) {
			t.Errorf("Index(%.20q) = %v, want ErrInvalidDocument", bad.ID, err)
		}
	}
	hits, err = x.Search(ctx, other, storage.Query{})
	must(err)
	if len(hits) != 1 {
		t.Errorf("a rejected batch changed the index: %v", hitIDs(hits))
	}
}
