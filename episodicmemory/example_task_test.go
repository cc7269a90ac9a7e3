package episodicmemory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// Two threads of one user share a resource-scoped log. Each run (one
// per request, as agentloop makes them) groups its entries into task
// episodes; the second thread's task touches the page the first one
// created, so it is linked to it.
func ExampleLayer_Links() {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	tmpl, err := episodicmemory.New(episodicmemory.Config{
		Spec: layer.Spec{Scope: layer.ScopeResource},
		Now:  func() time.Time { return time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	run := func(thread, query, tool, args, result string) *episodicmemory.Layer {
		l, err := tmpl.Init(ctx, layer.Env{ThreadID: thread, ResourceID: "user-1", Store: store})
		if err != nil {
			panic(err)
		}
		ep := l.(*episodicmemory.Layer)
		call := layer.ToolCall{ID: "call_1", Name: tool, Arguments: args}
		if err := ep.Store(ctx, layer.Turn{Query: query, ToolCalls: []layer.ToolCall{call},
			Results: []layer.ToolResult{{ToolCall: call, Content: result}}}); err != nil {
			panic(err)
		}
		return ep
	}
	run("thread-1", "Create the Summer Launch page", "cms_createPage", `{"title":"Summer Launch"}`, `{"page":{"id":"page-7"}}`)
	run("thread-1", "Order 48 chairs for the office", "shop_order", `{"item":"chair","quantity":48}`, `{"order":{"id":"ord-3301"}}`)
	ep := run("thread-2", "Publish page-7", "cms_publishPage", `{"id":"page-7"}`, `{"ok":true}`)

	n, why, _ := ep.Task(ctx)
	fmt.Println("thread-2 is in task", n, "("+why+")")
	links, _ := ep.Links(ctx)
	for _, ln := range links {
		fmt.Printf("linked to task %d of %s, sharing %v\n", ln.Task, ln.Thread, ln.Shared)
	}
	// Output:
	// thread-2 is in task 1 (first)
	// linked to task 1 of thread-1, sharing [page-7]
}
