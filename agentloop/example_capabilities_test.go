package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
	"github.com/memlayer/memlayer/storage"
)

// journal is a layer written outside memlayer, with only package layer's
// capabilities: it offers a write tool (layer.EffectWrite), keeps the
// writes routed to it (layer.Keeper, sort "diary"), proposes a lesson
// after each answer (layer.Proposer), offers its entries to scored
// assembly (layer.CandidateSource) and reports figures
// (layer.MetricsReporter).
type journal struct {
	mu      sync.Mutex
	entries []string
	evicted int64
	pending []layer.Write
}

func (j *journal) Spec() layer.Spec {
	return layer.Spec{ID: "journal", Slot: 120, Scope: layer.ScopeGlobal, Budget: layer.Budget{Min: 20, Max: 200}}
}

// Recall shows nothing: the journal's entries reach the prompt through
// scored assembly (Candidates).
func (j *journal) Recall(context.Context, layer.Query) ([]layer.Item, error) { return nil, nil }

func (j *journal) Functions() []layer.Function {
	return []layer.Function{{
		Name:        "note",
		Description: "Write a note in the journal.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"kind":{"type":"string"},` +
			`"importance":{"type":"number"}},"required":["text"]}`),
		Effect: layer.EffectWrite, // routed: the agent calls Keep, not Call
		Call: func(context.Context, json.RawMessage) (string, error) {
			return "", fmt.Errorf("the journal's note is routed, never called")
		},
	}}
}

func (j *journal) Keeps() string { return "diary" }

func (j *journal) Keep(_ context.Context, w layer.Write) (layer.Kept, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.entries = append(j.entries, w.Kind+": "+w.Text)
	return layer.Kept{Reply: "written in the journal"}, nil
}

// Store keeps the newest entry only, and proposes a lesson from an
// answer.
func (j *journal) Store(_ context.Context, t layer.Turn) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n := len(j.entries); n > 1 {
		j.entries = j.entries[n-1:]
		j.evicted += int64(n - 1)
	}
	if t.Response == "" {
		return nil
	}
	j.pending = append(j.pending, layer.Write{Kind: "lesson", Text: "I answered " + t.Response})
	return nil
}

func (j *journal) Proposals() []layer.Write {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.pending
	j.pending = nil
	return out
}

func (j *journal) Candidates(_ context.Context, q layer.Query) ([]layer.Candidate, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []layer.Candidate
	for i, e := range j.entries {
		out = append(out, layer.Candidate{Layer: "journal", Key: fmt.Sprint(i), Text: e, Tokens: q.Count(e), Similarity: 1, Importance: 1})
	}
	return out, nil
}

func (j *journal) Metrics() map[string]int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return map[string]int64{"entries": int64(len(j.entries)), "evictions_total": j.evicted}
}

// A layer of one's own does what the built-in layers do: the model's
// note is routed to it by the sort it keeps, its Store's lesson too, its
// entries compete in scored assembly, and the audit reads its figures.
func Example_layerCapabilities() {
	ctx := context.Background()
	j := &journal{}
	// Notes and lessons go to the diary; the rest as route.Default says.
	router := route.Func(func(ctx context.Context, w layer.Write) route.Route {
		if w.Kind == "note" || w.Kind == "lesson" {
			return route.Route{Layer: "diary", Reason: "the journal keeps notes and lessons"}
		}
		return route.Default.Route(ctx, w)
	})
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("journal_note", map[string]any{"text": "The user drinks green tea.", "kind": "note"}))),
		agenttest.Reply(agenttest.Text("Noted.")),
		agenttest.Reply(agenttest.Text("Green tea.")),
	)
	a, err := agentloop.New(agentloop.Config{Model: model, Store: storage.NewMemoryStore(), Layers: []layer.Layer{j}, Router: router})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, input := range []string{"I drink green tea.", "What do I drink?"} {
		res, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t1", Input: input})
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, e := range res.Audit.Entries {
			switch e.Op {
			case audit.OpRoute, audit.OpWrite, audit.OpEvict:
				fmt.Printf("%s %s %s %q count=%d\n", e.Op, e.Layer, e.Kind, e.Text, e.Count)
			}
		}
	}
	last := model.Requests()[2]
	fmt.Println("assembled into the prompt:", strings.Contains(last.System(), "note: The user drinks green tea."))
	fmt.Println("figures:", j.Metrics())
	// Output:
	// route journal note "The user drinks green tea." count=0
	// write journal note "The user drinks green tea." count=0
	// route journal lesson "I answered Noted." count=0
	// write journal lesson "I answered Noted." count=0
	// evict journal  "" count=1
	// route journal lesson "I answered Green tea." count=0
	// write journal lesson "I answered Green tea." count=0
	// assembled into the prompt: true
	// figures: map[entries:2 evictions_total:1]
}
