package semanticmemory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// A semantic memory shared by the threads of one user: facts written in
// one thread (by code here; by the model through the memorize tool) are
// recalled in another, and a restated fact supersedes the old one.
func Example() {
	ctx := context.Background()
	store := storage.NewMemoryStore() // or storage/sqlite, storage/redis
	tmpl, err := semanticmemory.New(semanticmemory.Config{
		Now: func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	first, err := tmpl.Init(ctx, layer.Env{ThreadID: "monday", ResourceID: "ana", Store: store})
	if err != nil {
		panic(err)
	}
	mem := first.(*semanticmemory.Layer)
	for _, text := range []string{"Ana's favourite colour is blue.", "Ana is allergic to peanuts.", "Ana's favourite colour is green."} {
		if _, err := mem.Remember(ctx, semanticmemory.Memo{Text: text, Kind: "profile", Importance: 0.8}); err != nil {
			panic(err)
		}
	}

	second, err := tmpl.Init(ctx, layer.Env{ThreadID: "tuesday", ResourceID: "ana", Store: store})
	if err != nil {
		panic(err)
	}
	items, err := second.Recall(ctx, layer.Query{Text: "What is Ana's favourite colour?", Budget: 200})
	if err != nil {
		panic(err)
	}
	fmt.Println(items[0].Text)
	versions, _ := second.(*semanticmemory.Layer).Versions(ctx, "f0")
	fmt.Println(len(versions), "versions; first:", versions[0].Text)
	// Output:
	// <semantic_memory>
	// [f0 profile] Ana's favourite colour is green.
	// [f1 profile] Ana is allergic to peanuts.
	// </semantic_memory>
	// 2 versions; first: Ana's favourite colour is blue.
}
