package entitymemory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

func ExampleExtract() {
	ents := entitymemory.Extract("cms_addSection", `{"pageId":"page-123","heading":"Hero"}`,
		`{"section":{"id":"sec-456","heading":"Hero","order":1}}`)
	for _, e := range ents {
		fmt.Printf("%s %s %q parent=%s\n", e.Type, e.ID, e.Name, e.Parent)
	}
	// Output: section sec-456 "Hero" parent=page-123
}

func ExampleExtract_list() {
	// A Stripe list: "object" names each entity's type; at most 3 are taken.
	res := `{"object":"list","data":[{"id":"cus_1","object":"customer","name":"Jenny Rosen"},
		{"id":"cus_2","object":"customer","email":"ann@example.com"},{"id":"cus_3","object":"customer"},
		{"id":"cus_4","object":"customer","name":"Too many"}],"has_more":false}`
	for _, e := range entitymemory.Extract("stripe_list_customers", "", res) {
		fmt.Println(e.Type, e.ID, e.Name)
	}
	// Output:
	// customer cus_1 Jenny Rosen
	// customer cus_2 ann@example.com
	// customer cus_3 cus_3
}

func ExampleNewExtractor() {
	x := entitymemory.NewExtractor(entitymemory.Config{
		Rules:      entitymemory.Rules{Types: map[string]string{"cms_put": "landing page"}},
		NameFields: []string{"label", "title"},
	})
	for _, e := range x.Extract("cms_put", "", `{"id":"lp-1","title":"Spring sale","label":"Spring"}`) {
		fmt.Println(e.Type, e.ID, e.Name)
	}
	// Output: landing_page lp-1 Spring
}

func ExampleTypeFromToolName() {
	for _, name := range []string{"cms_createPage", "create_page", "pages.create", "get-section-content", "listEntries"} {
		fmt.Println(name, "→", entitymemory.TypeFromToolName(name))
	}
	// Output:
	// cms_createPage → page
	// create_page → page
	// pages.create → page
	// get-section-content → section
	// listEntries → entry
}

func ExampleNew() {
	ctx := context.Background()
	tmpl, err := entitymemory.New(entitymemory.Config{
		Instructions: `Resolve "it" to the most recent entity of the right type.`,
	})
	if err != nil {
		panic(err)
	}
	// New returns a template; Init binds it to a run (here without a
	// store: the entities live in memory).
	run, err := tmpl.Init(ctx, layer.Env{ThreadID: "thread-1"})
	if err != nil {
		panic(err)
	}
	mem := run.(*entitymemory.Layer)
	// After a step with two tool calls, the layer has learned two entities.
	_ = mem.Store(ctx, layer.Turn{Results: []layer.ToolResult{
		{ToolCall: layer.ToolCall{Name: "cms_createPage", Arguments: `{"title":"About Us"}`}, Content: `{"page":{"id":"page-123","title":"About Us"}}`},
		{ToolCall: layer.ToolCall{Name: "cms_addSection", Arguments: `{"pageId":"page-123"}`}, Content: `{"section":{"id":"sec-456","heading":"Hero"}}`},
	}})
	// Renaming moves the page to the front with its new name.
	_ = mem.Store(ctx, layer.Turn{Results: []layer.ToolResult{
		{ToolCall: layer.ToolCall{Name: "cms_updatePage", Arguments: `{"pageId":"page-123","title":"About Our Team"}`}, Content: `{"page":{"id":"page-123","title":"About Our Team"}}`},
	}})
	items, _ := mem.Recall(ctx, layer.Query{Text: "add a gallery to it"})
	fmt.Println(items[0].Text)
	// Output:
	// <entity_memory>
	// [RECENT ENTITIES]
	// pages:
	//   - "About Our Team" (page-123)
	// sections:
	//   - "Hero" (sec-456, parent: page-123)
	//
	// Resolve "it" to the most recent entity of the right type.
	// </entity_memory>
}

func ExampleLayer_Init() {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	tmpl, _ := entitymemory.New(entitymemory.Config{NoInstructions: true})
	env := layer.Env{ThreadID: "thread-1", Store: st}

	// First process: learn an entity; Store saves it under the thread.
	run1, _ := tmpl.Init(ctx, env)
	_ = run1.(layer.Storer).Store(ctx, layer.Turn{Results: []layer.ToolResult{
		{ToolCall: layer.ToolCall{Name: "cms_createPage"}, Content: `{"page":{"id":"page-123","title":"About Us"}}`},
	}})

	// A new process on the same thread recalls it.
	run2, _ := tmpl.Init(ctx, env)
	items, _ := run2.Recall(ctx, layer.Query{})
	fmt.Println(items[0].Text)
	// Output:
	// <entity_memory>
	// [RECENT ENTITIES]
	// pages:
	//   - "About Us" (page-123)
	// </entity_memory>
}

func ExampleLayer_Snapshot() {
	ctx := context.Background()
	now := func() time.Time { return time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC) }
	tmpl, _ := entitymemory.New(entitymemory.Config{Now: now})
	run, _ := tmpl.Init(ctx, layer.Env{ThreadID: "thread-1"})
	mem := run.(*entitymemory.Layer)
	mem.Add(entitymemory.Entity{Type: "page", ID: "page-123", Name: "About Us"})
	snap, _ := mem.Snapshot(ctx)
	fmt.Println(string(snap))

	// A snapshot from a newer version is refused and changes nothing.
	err := mem.Restore(ctx, []byte(`{"version":9,"entities":[]}`))
	fmt.Println(err)
	fmt.Println(len(mem.Entities()))
	// Output:
	// {"version":2,"clock":1,"entities":[{"type":"page","id":"page-123","name":"About Us","seenAt":"2026-11-22T14:00:00Z","seq":1}]}
	// entitymemory: restore: entitymemory: unsupported state version: version 9, this build reads up to 2
	// 1
}

func ExampleConfig_disabled() {
	// MEMLAYER_ENTITY_MEMORY=off in the examples sets Disabled: the layer
	// stays in the stack and does nothing.
	mem, _ := entitymemory.New(entitymemory.Config{Disabled: true})
	ctx := context.Background()
	_ = mem.Store(ctx, layer.Turn{Results: []layer.ToolResult{{ToolCall: layer.ToolCall{Name: "cms_createPage"}, Content: `{"id":"page-1"}`}}})
	items, _ := mem.Recall(ctx, layer.Query{})
	fmt.Println(len(items))
	// Output: 0
}

func ExampleNormalizeType() {
	for _, t := range []string{"Page", "BlogPost", "blog-posts", "drive#file", "categories"} {
		fmt.Println(entitymemory.NormalizeType(t))
	}
	// Output:
	// page
	// blog_post
	// blog_post
	// file
	// category
}

func ExampleLayer_ByType() {
	tmpl, _ := entitymemory.New(entitymemory.Config{})
	run, _ := tmpl.Init(context.Background(), layer.Env{ThreadID: "thread-1"})
	mem := run.(*entitymemory.Layer)
	mem.Add(entitymemory.Entity{Type: "page", ID: "page-1", Name: "Home"})
	mem.Add(entitymemory.Entity{Type: "section", ID: "sec-1", Name: "Hero"})
	mem.Add(entitymemory.Entity{Type: "page", ID: "page-2", Name: "Pricing"})
	for _, e := range mem.ByType("pages") {
		fmt.Println(e.ID, e.Name)
	}
	for _, e := range mem.Recent(1) {
		fmt.Println("newest:", e.Type, e.ID)
	}
	// Output:
	// page-2 Pricing
	// page-1 Home
	// newest: page page-2
}

func ExampleConfig_legacyHeader() {
	tmpl, _ := entitymemory.New(entitymemory.Config{Header: entitymemory.LegacyHeader, NoInstructions: true})
	run, _ := tmpl.Init(context.Background(), layer.Env{ThreadID: "thread-1"})
	mem := run.(*entitymemory.Layer)
	mem.Add(entitymemory.Entity{Type: "page", ID: "page-123", Name: "About Us"})
	items, _ := mem.Recall(context.Background(), layer.Query{})
	fmt.Println(items[0].Text)
	// Output:
	// <entity_memory>
	// [WORKING MEMORY]
	// pages:
	//   - "About Us" (page-123)
	// </entity_memory>
}
