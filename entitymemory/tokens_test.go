package entitymemory

import (
	"context"
	"encoding/json"
	"fmt"
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

// perMessage is the framing each chat message costs (role, separators),
// as commonly counted for chat models.
const perMessage = 4

func msgTokens(s string) int { return layer.Query{}.Count(s) + perMessage }

// tokenComparison returns the prompt tokens summed over the steps of c,
// for the prompt of the model call that reads each step's tool result:
//
//   - full: every tool result stays in the history;
//   - compact: the current step's result is in full, older ones are
//     replaced by a one-line reference, and the entity block (recalled
//     after the step's Store) is added to the system prompt.
//
// It also returns the last entity block and the last step's two prompts.
func tokenComparison(t testing.TB, c conversation) (full, compact int, block string, lastFull, lastCompact int) {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
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
		f := msgTokens(c.System)
		p := msgTokens(c.System + "\n\n" + block)
		for j, prev := range c.Steps[:k+1] {
			call := msgTokens(prev.ToolCall.Name + prev.ToolCall.Arguments)
			f += msgTokens(prev.User) + call + msgTokens(prev.Result)
			p += msgTokens(prev.User) + call
			if j == k {
				p += msgTokens(prev.Result)
				break
			}
			ref := fmt.Sprintf("[result of %s (%s), %d bytes, not repeated: its entities are listed under WORKING MEMORY]",
				prev.ToolCall.Name, prev.ToolCall.ID, len(prev.Result))
			p += msgTokens(ref)
			f += msgTokens(prev.Reply)
			p += msgTokens(prev.Reply)
		}
		full += f
		compact += p
		lastFull, lastCompact = f, p
	}
	return full, compact, block, lastFull, lastCompact
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

// TestTokenReduction measures the prompt tokens of the recorded CMS
// conversation with and without old tool results. The seed design
// promised 70% fewer; the test asserts a conservative floor of 45% and
// logs the measured figure.
func TestTokenReduction(t *testing.T) {
	c := loadConversation(t)
	full, compact, block, lastFull, lastCompact := tokenComparison(t, c)
	reduction := 1 - float64(compact)/float64(full)
	t.Logf("prompt tokens summed over 10 steps: full history %d, entity block %d, reduction %.1f%%", full, compact, 100*reduction)
	t.Logf("prompt tokens of step 10 alone: full history %d, entity block %d, reduction %.1f%%",
		lastFull, lastCompact, 100*(1-float64(lastCompact)/float64(lastFull)))
	if reduction < 0.45 {
		t.Errorf("reduction %.1f%% is below the 45%% floor", 100*reduction)
	}
	// The block still resolves what the conversation refers to.
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

// BenchmarkTokenComparison reports the token figures of the recorded
// conversation as metrics (they do not depend on the machine).
func BenchmarkTokenComparison(b *testing.B) {
	c := loadConversation(b)
	var full, compact int
	b.ReportAllocs()
	for b.Loop() {
		full, compact, _, _, _ = tokenComparison(b, c)
	}
	b.ReportMetric(float64(full), "full-tokens")
	b.ReportMetric(float64(compact), "entity-tokens")
	b.ReportMetric(100*(1-float64(compact)/float64(full)), "reduction-%")
}
