package history_test

import (
	"strings"
	"testing"

	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/thread"
)

// TestHistory04_DeterministicSummarizerKeepsIDs: the summary keeps the
// request, each tool with its call ID and the entities (ID and name) its
// result mentions, also from a truncated result, and the outcome; when
// it outgrows its budget, the oldest lines fold into a list that still
// has every ID.
func TestHistory04_DeterministicSummarizerKeepsIDs(t *testing.T) {
	cut := `{"pages":[{"id":"page_7","title":"Team"},{"id":"page_8","title":"Jobs"},{"id":"page_9","ti`
	msgs := []thread.Message{
		{Role: thread.RoleUser, Text: "Create the About page"},
		{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{{ID: "c1", Name: "createPage", Arguments: `{"title":"About"}`}}},
		{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "c1", Name: "createPage", Content: `{"page":{"id":"page_101","title":"About"}}`}}},
		{Role: thread.RoleAssistant, Text: "Created page_101."},
		{Role: thread.RoleUser, Text: "List the pages"},
		{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{{ID: "c2", Name: "listPages", Arguments: `{}`}}},
		{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "c2", Name: "listPages", Content: cut}}},
		{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{{ID: "c3", Name: "deletePage", Arguments: `{"pageId":"page_7"}`}}},
		{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "c3", Name: "deletePage", Content: "error: page_7 is locked"}}},
		{Role: thread.RoleAssistant, Text: "Three pages; page_7 could not be deleted."},
	}
	s := &history.DeterministicSummarizer{}
	got, err := s.Summarize(t.Context(), "", msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := `- User: Create the About page | createPage (call c1) → page_101 "About" | answer: Created page_101.
- User: List the pages | listPages (call c2) → page_7 "Team", page_8 "Jobs", page_9 | deletePage (call c3) failed → page_7 | answer: Three pages; page_7 could not be deleted.`
	if got != want {
		t.Errorf("summary:\n%s\nwant\n%s", got, want)
	}
	// The same input gives the same summary; a later call extends it.
	again, _ := s.Summarize(t.Context(), "", msgs)
	if again != got {
		t.Errorf("not deterministic:\n%s\n%s", again, got)
	}
	// A small budget folds the oldest lines and keeps their IDs.
	small := &history.DeterministicSummarizer{MaxTokens: 40}
	folded, _ := small.Summarize(t.Context(), got, msgs[:4])
	for _, id := range []string{"page_101", "page_7", "page_8", "page_9"} {
		if !strings.Contains(folded, id) {
			t.Errorf("folded summary lost %s:\n%s", id, folded)
		}
	}
	if !strings.HasPrefix(folded, "Entities seen earlier: ") {
		t.Errorf("folded summary:\n%s", folded)
	}
}

// The summary pairs a name only with the ID of the object that bears it:
// a section added to a page is listed as the section's ID with its
// heading, and the page it refers to alone; request IDs are left out.
func TestHistory13_SummaryPairsNamesWithTheirOwnIDs(t *testing.T) {
	msgs := []thread.Message{
		{Role: thread.RoleUser, Text: "Add a Pricing FAQ section"},
		{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{{ID: "c1", Name: "addSection", Arguments: `{"pageId":"page_P","heading":"Pricing FAQ"}`}}},
		{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "c1", Name: "addSection", Content: `{"requestId":"req_91","section":{"pageId":"page_P","heading":"Pricing FAQ","id":"sec_S"}}`}}},
		{Role: thread.RoleAssistant, Text: "Added."},
	}
	got, err := (&history.DeterministicSummarizer{}).Summarize(t.Context(), "", msgs)
	if err != nil {
		t.Fatal(err)
	}
	if want := `addSection (call c1) → page_P, sec_S "Pricing FAQ" |`; !strings.Contains(got, want) {
		t.Errorf("summary:\n%s\nwant it to hold %s", got, want)
	}
	if strings.Contains(got, `page_P "`) || strings.Contains(got, "req_91") {
		t.Errorf("summary pairs the page with the section's name or keeps the request ID:\n%s", got)
	}
}
