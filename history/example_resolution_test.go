package history_test

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/thread"
)

// A summary told at each resolution: the turn's steps, its turn line,
// and the thread's line of IDs and names.
func ExampleCoarsen() {
	msgs := []thread.Message{
		{Role: thread.RoleUser, Text: "Create the About page and add a team section"},
		{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{{ID: "c1", Name: "createPage", Arguments: `{"title":"About"}`}}},
		{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "c1", Name: "createPage", Content: `{"page":{"id":"page_101","title":"About"}}`}}},
		{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{{ID: "c2", Name: "addSection", Arguments: `{"pageId":"page_101","heading":"Team"}`}}},
		{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "c2", Name: "addSection", Content: `{"section":{"id":"sec_7","heading":"Team"}}`}}},
		{Role: thread.RoleAssistant, Text: "Created page_101 with the section sec_7."},
	}
	steps, _ := (&history.DeterministicSummarizer{}).Summarize(context.Background(), "", msgs)
	for r := history.Steps; r <= history.Thread; r++ {
		fmt.Printf("%s: %s\n", r, history.Coarsen(steps, r))
	}
	// Output:
	// steps: - User: Create the About page and add a team section | createPage (call c1) → page_101 "About" | addSection (call c2) → page_101, sec_7 "Team" | answer: Created page_101 with the section sec_7.
	// turn: - Turn: Create the About page and add a team section → page_101 "About", sec_7 "Team" | answer: Created page_101 with the section sec_7.
	// thread: Entities seen earlier: page_101 "About"; sec_7 "Team"
}
