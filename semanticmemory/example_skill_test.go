package semanticmemory_test

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// The layer learns a skill from two turns that published a page the same
// way (agentloop calls Store after every step; here the steps are
// handed over by hand), and a later request to publish recalls it.
func ExampleLayer_Store_skills() {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	tmpl, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		panic(err)
	}
	for i, request := range []string{"Publish the About page", "Please publish the Careers page"} {
		bound, err := tmpl.Init(ctx, layer.Env{ThreadID: fmt.Sprint("t", i), ResourceID: "ana", Store: store})
		if err != nil {
			panic(err)
		}
		mem := bound.(*semanticmemory.Layer)
		id := fmt.Sprint("page-", 100+i)
		get := layer.ToolCall{ID: fmt.Sprint("call_", i, "_0"), Name: "cms_getPage", Arguments: `{"id":"` + id + `"}`}
		update := layer.ToolCall{ID: fmt.Sprint("call_", i, "_1"), Name: "cms_updatePage", Arguments: `{"id":"` + id + `","status":"published"}`}
		for _, t := range []layer.Turn{
			{Step: 0, Query: request, ToolCalls: []layer.ToolCall{get}, Results: []layer.ToolResult{{ToolCall: get, Content: `{"page":{"id":"` + id + `"}}`}}},
			{Step: 1, Query: request, ToolCalls: []layer.ToolCall{update}, Results: []layer.ToolResult{{ToolCall: update, Content: `{"page":{"status":"published"}}`}}},
			{Step: 2, Query: request, Response: "Done: the page is live."},
		} {
			if err := mem.Store(ctx, t); err != nil {
				panic(err)
			}
		}
	}

	later, err := tmpl.Init(ctx, layer.Env{ThreadID: "t9", ResourceID: "ana", Store: store})
	if err != nil {
		panic(err)
	}
	items, err := later.Recall(ctx, layer.Query{Text: "publish the pricing page", Budget: 300})
	if err != nil {
		panic(err)
	}
	fmt.Println(items[0].Text)
	// Output:
	// <semantic_memory>
	// [f0 skill] Skill "publish page" (succeeded 2 times; for requests like "Please publish the Careers page", "Publish the About page"): cms_getPage {"id":"<id>"} → cms_updatePage {"id":"<id>","status":"published"}
	// </semantic_memory>
}
