package agentloop_test

import (
	"strings"
	"testing"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/workingmemory"
)

// TestFit01_LegacyUpdateCallIsTheTool: a legacy updateWorkingMemory call
// through the agent loop behaves as the update tool: the model gets the
// tool's result (not "unknown tool"), and the update is applied once (a
// "$delete" of an array index applied twice would remove two items).
func TestFit01_LegacyUpdateCallIsTheTool(t *testing.T) {
	wm, err := workingmemory.New(workingmemory.Config{
		Schema:   `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}},"n":{"type":"integer"}}}`,
		Template: map[string]any{"items": []any{"a", "b", "c"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call(workingmemory.LegacyFunction, `{"$delete":["items/0"]}`))),
		agenttest.Reply(agenttest.Calls(agenttest.Call(workingmemory.LegacyFunction, `{"n":"not a number"}`))),
		agenttest.Reply(agenttest.Text("done")),
	)
	a := mustAgent(t, agentloop.Config{Model: model, Layers: []layer.Layer{wm}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "drop the first item"})
	if err != nil {
		t.Fatal(err)
	}
	results := toolContents(res.Messages)
	if len(results) != 2 || results[0] != "Working memory updated." {
		t.Fatalf("tool results %q, want the update tool's result first", results)
	}
	if !strings.Contains(results[1], "/n") || strings.Contains(results[1], "unknown tool") {
		t.Fatalf("rejected legacy update: result %q, want the schema error naming /n", results[1])
	}
	sys := model.Requests()[2].System()
	if !strings.Contains(strings.Join(strings.Fields(sys), ""), `"items":["b","c"]`) {
		t.Fatalf("the update was not applied exactly once; the prompt shows:\n%s", sys)
	}
}
