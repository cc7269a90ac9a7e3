package entitymemory_test

import (
	"testing"

	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// The entity layer's part of the situation: the names of the newest
// entities, newest first, no IDs.
func TestSituation_RecentNames(t *testing.T) {
	ctx := t.Context()
	tmpl, err := entitymemory.New(entitymemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", Store: storage.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	l := bound.(*entitymemory.Layer)
	if s, _ := l.Situation(ctx, layer.Query{}); s != "" {
		t.Fatalf("no entity: %q", s)
	}
	for _, e := range []entitymemory.Entity{
		{Type: "page", ID: "page-1", Name: "About"},
		{Type: "page", ID: "page-2", Name: "Pricing"},
		{Type: "page", ID: "page-3", Name: "Blog"},
		{Type: "post", ID: "post-4", Name: "Spring Sale"},
	} {
		l.Add(e)
	}
	if s, _ := l.Situation(ctx, layer.Query{}); s != "Spring Sale Blog Pricing" {
		t.Fatalf("Situation = %q", s)
	}
}
