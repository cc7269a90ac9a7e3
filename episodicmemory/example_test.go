package episodicmemory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// The layer records a step's tool call, recalls it for an input naming
// the page, and returns its result by reference through the read tool.
func Example() {
	ctx := context.Background()
	tmpl, err := episodicmemory.New(episodicmemory.Config{
		Now: func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		panic(err)
	}
	l, err := tmpl.Init(ctx, layer.Env{ThreadID: "thread-1", Store: storage.NewMemoryStore()})
	if err != nil {
		panic(err)
	}
	ep := l.(*episodicmemory.Layer)
	err = ep.Store(ctx, layer.Turn{
		Step: 0,
		ToolCalls: []layer.ToolCall{
			{ID: "call_1", Name: "cms_createPage", Arguments: `{"title":"About Us"}`},
		},
		Results: []layer.ToolResult{{ToolCall: layer.ToolCall{ID: "call_1", Name: "cms_createPage", Arguments: `{"title":"About Us"}`},
			Content: `{"page":{"id":"page-123","title":"About Us"}}`}},
	})
	if err != nil {
		panic(err)
	}
	items, _ := ep.Recall(ctx, layer.Query{Text: "publish page-123"})
	fmt.Println(items[0].Text)
	read := ep.Functions()[0]
	out, _ := read.Call(ctx, json.RawMessage(`{"ref":"call_1"}`))
	fmt.Println(layer.ToolName(ep.Spec().ID, read.Name), "→", out)
	// Output:
	// <episodic_memory>
	// Earlier tool calls and turns, oldest first. [ref] is the reference: call episodic_memory_read with {"ref": "..."} to read a full result.
	// [call_1] step 0 cms_createPage {"title":"About Us"} → ok, 45 bytes: About Us, page-123
	// </episodic_memory>
	// episodic_memory_read → {"page":{"id":"page-123","title":"About Us"}}
}
