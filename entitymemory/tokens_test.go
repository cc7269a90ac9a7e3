package entitymemory

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// conversation is testdata/cms-conversation.json: one user turn, one tool
// call and its JSON result, and the assistant's reply per step.
type conversation struct {
	Description string `json:"description"`
	System      string `json:"system"`
	Steps       []struct {
		User     string         `json:"user"`
		ToolCall layer.ToolCall `json:"toolCall"`
		Result   string         `json:"toolResult"`
		Reply    string         `json:"assistant"`
	} `json:"steps"`
}

func loadConversation(t testing.TB) conversation {
	t.Helper()
	var c conversation
	if err := json.Unmarshal([]byte(readFixture(t, filepath.Join("testdata", "cms-conversation.json"))), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// conversationBlock feeds the steps of c through the layer's Store and
// returns the block Recall gives after the last one.
func conversationBlock(t testing.TB, c conversation) string {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var block string
	for k, st := range c.Steps {
		res := layer.ToolResult{ToolCall: layer.ToolCall{ID: st.ToolCall.ID, Name: st.ToolCall.Name, Arguments: st.ToolCall.Arguments}, Content: st.Result}
		if err := l.Store(ctx, layer.Turn{Step: k, Query: st.User, Results: []layer.ToolResult{res}}); err != nil {
			t.Fatal(err)
		}
		items, err := l.Recall(ctx, layer.Query{Text: st.User, Step: k})
		if err != nil || len(items) != 1 {
			t.Fatalf("step %d: recall %v, %v", k+1, items, err)
		}
		block = items[0].Text
	}
	return block
}

func TestConversationFixture(t *testing.T) {
	c := loadConversation(t)
	if len(c.Steps) != 10 {
		t.Fatalf("%d steps, want 10", len(c.Steps))
	}
	for i, st := range c.Steps {
		if n := (layer.Query{}).Count(st.Result); n < 300 || n > 800 {
			t.Errorf("step %d: tool result is %d tokens, want 300 to 800", i+1, n)
		}
		if !json.Valid([]byte(st.Result)) || !json.Valid([]byte(st.ToolCall.Arguments)) {
			t.Errorf("step %d: result or arguments are not JSON", i+1)
		}
	}
}

// TestConversationBlock: after the recorded 10-step CMS conversation the
// block still resolves what the conversation refers to, newest type
// first. (The token reduction this file used to estimate with an
// imitation of the loop is measured on a real 50-turn run of the agent:
// agentloop's TestHistory51_CMS50TokenReduction.)
func TestConversationBlock(t *testing.T) {
	block := conversationBlock(t, loadConversation(t))
	for _, want := range []string{`"About Our Team" (page-123, slug: about-our-team)`, `"Our story" (sec-457, parent: page-123)`,
		`"Meet the team" (sec-456, parent: page-123)`, `"team-offsite-2026.jpg" (med-789)`, `"Five days in Sintra: our 2026 offsite" (entry-42`} {
		if !strings.Contains(block, want) {
			t.Errorf("final block lacks %s:\n%s", want, block)
		}
	}
	if strings.Index(block, "pages:") > strings.Index(block, "sections:") {
		t.Errorf("pages (published last) should come before sections:\n%s", block)
	}
}
