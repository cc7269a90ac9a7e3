package chainmemory_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/chainmemory"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

func newInitStack(t *testing.T, layers ...layer.Layer) *layer.Stack {
	t.Helper()
	return looptest.NewInitStackOn(t, layer.Env{ThreadID: "t", Store: storage.NewMemoryStore()}, layers...)
}

func TestMemoryPlugsIntoConversationChain(t *testing.T) {
	notes := looptest.NewNotes("entities", layer.ScopeThread)
	st := newInitStack(t, notes)
	// Seed a note through the exported tool, as an Executor would.
	tls := chainmemory.ExportTools(st)
	if len(tls) != 1 || tls[0].Name() != "entities_note" || !strings.HasPrefix(tls[0].Description(), "Write a note to remember.\n\nInput: a JSON object matching this JSON Schema: {") {
		t.Fatalf("exported tools: %v", tls)
	}
	if out, err := tls[0].Call(t.Context(), `{"text":"the user likes tea"}`); err != nil || out != "noted" {
		t.Fatalf("tool call: %q, %v", out, err)
	}
	// A bad call is text for the agent, not an error that aborts it.
	out, err := tls[0].Call(t.Context(), `{"text":""}`)
	if err != nil || !strings.HasPrefix(out, "error: invalid tool arguments") {
		t.Fatalf("bad tool call: %q, %v", out, err)
	}

	// What chains.Call does with a schema.Memory (importing chains would
	// pull sprig and a dozen more modules into go.mod for this test):
	// load the memory variables into the inputs, render the prompt, call
	// the model, save the context.
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Text("Tea it is."), nil
	})
	var mem schema.Memory = chainmemory.New(st, chainmemory.Config{})
	inputs := map[string]any{"input": "What do I like?"}
	vars, err := mem.LoadMemoryVariables(t.Context(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	prompt := "Conversation so far:\n" + vars["history"].(string) + "\nHuman: " + inputs["input"].(string)
	got, err := llms.GenerateFromSinglePrompt(t.Context(), model, prompt)
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.SaveContext(t.Context(), inputs, map[string]any{"text": got}); err != nil {
		t.Fatal(err)
	}
	if got != "Tea it is." {
		t.Errorf("chain output %q", got)
	}
	if h := vars["history"].(string); !strings.Contains(h, "note: the user likes tea") || !strings.HasPrefix(h, "<notes>") {
		t.Errorf("the memory variable lacks the layer memory:\n%s", h)
	}
	if mem.GetMemoryKey(t.Context()) != "history" || strings.Join(mem.MemoryVariables(t.Context()), ",") != "history" {
		t.Errorf("memory keys")
	}
	// SaveContext reached the layer's Store: a tool-less turn stores no
	// entity, so check through a layer that records turns.
	var turns []layer.Turn
	rec := layer.Func(layer.Spec{ID: "rec"}, nil)
	recorder := &turnRecorder{Layer: rec, turns: &turns}
	st2 := newInitStack(t, recorder)
	mem2 := chainmemory.New(st2, chainmemory.Config{InputKey: "question", OutputKey: "answer"})
	if err := mem2.SaveContext(t.Context(), map[string]any{"question": "q1", "other": 1}, map[string]any{"answer": "a1"}); err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || turns[0].Query != "q1" || turns[0].Response != "a1" {
		t.Errorf("turns %+v", turns)
	}
	if err := mem.Clear(t.Context()); err != nil {
		t.Errorf("Clear: %v", err)
	}
}

type turnRecorder struct {
	layer.Layer
	turns *[]layer.Turn
}

func (r *turnRecorder) Store(ctx context.Context, t layer.Turn) error {
	*r.turns = append(*r.turns, t)
	return nil
}
