package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
)

// TestHistory02_TruncationNoteNamesTheCall: the note of a result cut in
// the history names the tool call's ID, by which the episodic layer's
// tool reads the whole result.
func TestHistory02_TruncationNoteNamesTheCall(t *testing.T) {
	big := agentloop.Tool{Name: "fetch", Call: func(context.Context, json.RawMessage) (string, error) { return strings.Repeat("x", 300), nil }}
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("fetch", `{}`))), agenttest.Reply(agenttest.Text("ok")))
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{big}, MaxToolResultBytes: 100})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	var id, content string
	for _, m := range res.Messages {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				id, content = r.ToolCallID, r.Content
			}
		}
	}
	want := "\n[agentloop: result truncated: 300 bytes, of which the first 100 are shown; full result: call " + id + "]"
	if id == "" || !strings.HasSuffix(content, want) {
		t.Errorf("truncated result ends %q, want the note %q", content[min(len(content), 100):], want)
	}
}
