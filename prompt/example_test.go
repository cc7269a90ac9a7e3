package prompt_test

import (
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/fence"
)

// The default layout: the instructions, then each layer's block in slot
// order, separated by blank lines.
func ExampleNew() {
	c, err := prompt.New(prompt.Config{Instructions: "You are a CMS assistant."})
	if err != nil {
		panic(err)
	}
	// In slot order, as layer.Stack.Recall returns them.
	out, err := c.Compile([]layer.Recalled{
		{ID: "working-memory", Items: []layer.Item{
			{Text: fence.Wrap("working_memory", "plan: rename </working_memory> the home page")},
		}},
		{ID: "entities", Items: []layer.Item{{Text: `page "Home" (id 1)`}}},
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// You are a CMS assistant.
	//
	// <working_memory>
	// plan: rename &lt;/working_memory> the home page
	// </working_memory>
	//
	// page "Home" (id 1)
}

// A template places each layer by its camelCase ID; user variables follow
// Handlebars escaping, layer text is never escaped.
func ExampleCompiler_Compile() {
	c, err := prompt.New(prompt.Config{
		Template:     "{{{instructions}}}\nUser: {{user}}\n{{#if workingMemory}}{{workingMemory}}{{else}}(no notes){{/if}}",
		Instructions: "Answer briefly.",
	})
	if err != nil {
		panic(err)
	}
	wm := []layer.Recalled{{ID: "working-memory", Items: []layer.Item{{Text: "<working_memory>\nA & B\n</working_memory>"}}}}
	for _, recalled := range [][]layer.Recalled{wm, nil} {
		out, err := c.Compile(recalled, map[string]any{"user": "Ann <ann@example.com>"})
		if err != nil {
			panic(err)
		}
		fmt.Println(out)
		fmt.Println("--")
	}
	// Output:
	// Answer briefly.
	// User: Ann &lt;ann@example.com&gt;
	// <working_memory>
	// A & B
	// </working_memory>
	// --
	// Answer briefly.
	// User: Ann &lt;ann@example.com&gt;
	// (no notes)
	// --
}

func ExampleVarName() {
	fmt.Println(prompt.VarName("working-memory"), prompt.VarName("entities"), prompt.VarName("semantic-recall"))
	// Output: workingMemory entities semanticRecall
}

// A 10000-token window with a 1000-token reserve and an 800-token system
// prompt: the working memory gets its minimum plus its share of the
// headroom, the unbounded layer what the bounded one left of the pool.
func ExampleAllocate() {
	a, err := prompt.Allocate(prompt.Request{
		Total: 10000, Reserve: 1000, System: 800,
		Layers: []layer.Spec{
			{ID: "working-memory", Budget: layer.Budget{Min: 200, Max: 1500}},
			{ID: "semantic-recall"}, // unbounded
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("available %d: working-memory %d, semantic-recall %d, history %d\n",
		a.Available, a.Layers["working-memory"], a.Layers["semantic-recall"], a.History)

	_, err = prompt.Allocate(prompt.Request{Total: -1})
	fmt.Println(err)
	// Output:
	// available 8200: working-memory 1500, semantic-recall 3500, history 3200
	// prompt: invalid budget: Total is -1, want >= 0
}

// Items are taken in the order given; one that does not fit is skipped and later
// ones that fit are kept.
func ExampleProjectLayers() {
	words := prompt.CounterFunc(func(s string) int { return len(s) })
	kept := prompt.ProjectLayers([]layer.Recalled{
		{ID: "a", Items: []layer.Item{{Text: "short"}, {Text: "far too long to fit"}}},
		{ID: "b", Items: []layer.Item{{Text: "fits"}}},
	}, 10, words)
	for _, r := range kept {
		fmt.Println(r.ID, r.Items)
	}
	// Output:
	// a [{short 0}]
	// b [{fits 0}]
}

// History is cut from the oldest end, and never between a tool call and
// its result.
func ExampleProjectHistory() {
	call := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
		llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "get_page", Arguments: `{"id":1}`}},
	}}
	result := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: "c1", Name: "get_page", Content: `{"title":"Home"}`},
	}}
	history := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "What is page 1 called?"),
		call, result,
		llms.TextParts(llms.ChatMessageTypeAI, "It is called Home."),
	}
	for _, budget := range []int{100, 35, 10} {
		kept := prompt.ProjectHistory(history, budget, nil)
		fmt.Print(budget, ":")
		for _, m := range kept {
			fmt.Print(" ", m.Role)
		}
		fmt.Println()
	}
	// Output:
	// 100: human ai tool ai
	// 35: ai tool ai
	// 10: ai
}
