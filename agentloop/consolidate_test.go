package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// TestConsolidationInTheLoop: semantic memory's model-based
// consolidation gets the turn as the loop masks it, masks what the model
// writes, and its writes are in the run's audit (Result.Writes and the
// committed turn) when the run returns.
func TestConsolidationInTheLoop(t *testing.T) {
	var proposeInput string
	extractor := agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		in := r.LastUser()
		time.Sleep(20 * time.Millisecond)
		if strings.HasPrefix(in, "<turn>") {
			proposeInput = in
			b, _ := json.Marshal(map[string]any{"facts": []map[string]any{
				{"kind": "preference", "text": "The user prefers oolong tea."},
				{"kind": "profile", "text": "The user's backup email is alice@example.org."},
			}})
			return &llms.ContentChoice{Content: string(b)}, nil
		}
		return &llms.ContentChoice{Content: `{"decisions":[{"fact":1,"op":"add"},{"fact":2,"op":"add"}]}`}, nil
	})
	sem, err := semanticmemory.New(semanticmemory.Config{Consolidate: &semanticmemory.Consolidator{Model: extractor}})
	if err != nil {
		t.Fatal(err)
	}
	store := storage.NewMemoryStore()
	a := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("Noted."))), Store: store, Layers: []layer.Layer{sem}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "I prefer oolong tea. Mail me at bob@example.com."})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(proposeInput, "bob@example.com") || !strings.Contains(proposeInput, "oolong") {
		t.Errorf("the extractor read %q, want the turn masked", proposeInput)
	}
	var written []string
	for _, e := range res.Writes {
		if e.Op == audit.OpWrite && e.Layer == semanticmemory.DefaultID && strings.Contains(e.Source, "by="+semanticmemory.ByExtractor) {
			written = append(written, e.Text)
		}
	}
	if len(written) != 2 || strings.Contains(strings.Join(written, " "), "alice@example.org") {
		t.Errorf("writes %q, want both facts, masked", written)
	}
	if res.Audit == nil || len(ops(res.Audit.Entries, audit.OpWrite)) != 2 {
		t.Errorf("committed audit %+v, want the two writes", res.Audit)
	}
	bound, err := sem.Init(t.Context(), layer.Env{ThreadID: "t1", ResourceID: "u1", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	facts, err := bound.(*semanticmemory.Layer).Facts(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 2 || strings.Contains(facts[1].Text, "alice@example.org") {
		t.Errorf("facts %+v, want both, masked", facts)
	}
}

// TestConsolidationInAChild: what a child agent's semantic memory
// consolidates is in the top-level run's audit, at the child's depth.
func TestConsolidationInAChild(t *testing.T) {
	extractor := agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		in := r.LastUser()
		if !strings.HasPrefix(in, "<turn>") {
			return agenttest.Text(`{"decisions":[{"fact":1,"op":"add"}]}`), nil
		}
		time.Sleep(20 * time.Millisecond)
		if strings.Contains(in, "oolong") {
			return agenttest.Text(`{"facts":[{"kind":"preference","text":"The user prefers oolong tea."}]}`), nil
		}
		return agenttest.Text(`{"facts":[]}`), nil
	})
	sem, err := semanticmemory.New(semanticmemory.Config{Consolidate: &semanticmemory.Consolidator{Model: extractor}})
	if err != nil {
		t.Fatal(err)
	}
	model := agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		switch {
		case len(r.ToolResults()) > 0:
			return agenttest.Text("done"), nil
		case r.LastUser() == "I now prefer oolong tea.":
			return agenttest.Text("ok"), nil
		}
		return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, map[string]string{"input": "I now prefer oolong tea."})), nil
	})
	a := mustAgent(t, agentloop.Config{Model: model, Store: storage.NewMemoryStore(), Layers: []layer.Layer{sem}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "Ask a helper."})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, e := range res.Writes {
		if e.Op == audit.OpWrite && e.Depth == 1 && e.Text == "The user prefers oolong tea." && strings.Contains(e.Source, "by="+semanticmemory.ByExtractor) {
			found = true
		}
	}
	if !found {
		t.Errorf("writes %+v, want the child's consolidated fact at depth 1", res.Writes)
	}
}
