package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// TestMemory94_StoreProposalsAreRouted: the writes a layer's Store
// proposes are routed by kind like memorize calls — a preference to
// semantic memory, reasoning to the scratchpad, an outcome to the episode
// log as a note — redacted on the way, audited with their source, listed
// in Result.Writes, and in the next run's prompt; a write the gate finds
// unimportant and an empty text are refused with their reason in the
// audit. A Proposer that
// panics loses its proposals and not the run.
func TestMemory94_StoreProposalsAreRouted(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	d := &looptest.Distiller{Propose: func(t layer.Turn) []layer.Write {
		return []layer.Write{
			{Kind: "Preference", Text: "The user prefers oolong tea; mail them at tea.lover@example.com."},
			{Kind: "plan", Text: "Ask which kettle the user has."},
			{Kind: "outcome", Text: "Ordered 200 g of oolong for the user."},
			{Kind: "color", Text: "green", Importance: 0.05},
			{Text: "  "},
			{Kind: "fact", Text: "The user is very sure.", Importance: math.NaN()},
		}
	}}
	layers := func() []layer.Layer { return append(looptest.GateLayers(t), d) }
	model := agenttest.New(agenttest.Reply(agenttest.Text("Oolong is on its way.")), agenttest.Reply(agenttest.Text("Oolong, as you like it.")))
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Layers: layers()})
	res, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "Order me some oolong tea."})
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]audit.Entry{}
	for _, w := range res.Writes {
		if w.Op == audit.OpWrite && strings.HasPrefix(w.Source, "by=layer:distiller") {
			kept[w.Kind] = w
		}
	}
	for kind, layerID := range map[string]string{"preference": semanticmemory.DefaultID, "plan": workingmemory.DefaultID, "outcome": episodicmemory.DefaultID} {
		if w, ok := kept[kind]; !ok || w.Layer != layerID {
			t.Errorf("the %s write: %+v, want it kept by %s; writes %+v", kind, w, layerID, res.Writes)
		}
	}
	if strings.Contains(kept["preference"].Text, "tea.lover@example.com") {
		t.Errorf("the preference was kept unredacted: %q", kept["preference"].Text)
	}
	var reasons []string
	for _, e := range res.Audit.Entries {
		if e.Op == audit.OpRoute && e.Refused {
			reasons = append(reasons, e.Reason)
		}
	}
	if len(reasons) != 3 || !strings.Contains(reasons[0], "importance 0.05") || reasons[1] != "empty text" || reasons[2] != "importance NaN is not in [0, 1]" {
		t.Errorf("refusals %q, want the unimportant write, the empty text and the NaN importance", reasons)
	}
	keys, err := store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		if it, _ := store.Get(ctx, key); strings.Contains(string(it.Value), "tea.lover@example.com") {
			t.Errorf("store key %s holds the e-mail address", key)
		}
	}
	// The next run sees all three where the router put them.
	d.Broken = true
	if _, err := mustAgent(t, agentloop.Config{Model: model, Store: store, Layers: layers()}).Run(ctx, agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "Which tea do I like?"}); err != nil {
		t.Fatalf("a panicking Proposer failed the run: %v", err)
	}
	sys := model.Requests()[1].System()
	for _, want := range []string{"The user prefers oolong tea", "Ask which kettle the user has.", "note (outcome): Ordered 200 g of oolong for the user."} {
		if !strings.Contains(sys, want) {
			t.Errorf("the next run's prompt lacks %q:\n%s", want, sys)
		}
	}
}

// TestMemory95_KeyValueWritesAudited: what the run's tools write to the
// key-value memory is in the audit, counted in the step that wrote it
// (the first step included), with the layer and source "code".
func TestMemory95_KeyValueWritesAudited(t *testing.T) {
	kvl, err := kv.NewLayer(kv.LayerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	note := agentloop.Tool{Name: "note_order", Description: "Notes the order.", CallContext: func(ctx context.Context, run *agentloop.ToolContext, _ json.RawMessage) (string, error) {
		mem, err := kv.From(run.Stack(), "")
		if err != nil {
			return "", err
		}
		if err := kv.Set(mem, "order", "oolong"); err != nil {
			return "", err
		}
		if err := kv.Set(mem, "grams", 200); err != nil {
			return "", err
		}
		_, err = mem.Remove("grams")
		return "noted", err
	}}
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("note_order", `{}`))),
		agenttest.Reply(agenttest.Calls(agenttest.Call("note_order", `{}`))),
		agenttest.Reply(agenttest.Text("Noted.")),
	)
	res, err := mustAgent(t, agentloop.Config{Model: model, Store: storage.NewMemoryStore(), Layers: []layer.Layer{kvl}, Tools: []agentloop.Tool{note}}).
		Run(t.Context(), agentloop.RunInput{ThreadID: "t1", Input: "Order oolong."})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range res.Writes {
		if w.Layer == kv.DefaultLayerID {
			got = append(got, fmt.Sprintf("step %d: %s %d by %s", w.Step, w.Kind, w.Count, w.Source))
		}
	}
	if want := []string{"step 0: kv 3 by code", "step 1: kv 3 by code"}; !slices.Equal(got, want) {
		t.Errorf("key-value writes in the audit %q, want %q", got, want)
	}
}

// TestMemory96_SpawnFromCodeAudited: a child agent started from code
// (Agent.Spawn) has its memory operations committed as a turn of the
// parent thread's audit, and listed in its Result.Writes, at depth 1.
func TestMemory96_SpawnFromCodeAudited(t *testing.T) {
	ctx := t.Context()
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(memorize("The user's kettle is a gooseneck.", "profile"))),
		agenttest.Reply(agenttest.Text("Noted the kettle.")),
	)
	a := mustAgent(t, agentloop.Config{Model: model, Store: storage.NewMemoryStore(), Layers: looptest.GateLayers(t)})
	res, err := a.Spawn(ctx, agentloop.SpawnInput{ThreadID: "t1", ResourceID: "u1", Input: "Note my kettle."})
	if err != nil {
		t.Fatal(err)
	}
	var kept *audit.Entry
	for i, w := range res.Writes {
		if w.Op == audit.OpWrite && w.Layer == semanticmemory.DefaultID {
			kept = &res.Writes[i]
		}
	}
	if kept == nil || kept.Depth != 1 || !strings.Contains(kept.Text, "gooseneck") {
		t.Fatalf("Result.Writes %+v, want the child's fact at depth 1", res.Writes)
	}
	turns, err := a.Audit(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || res.Audit == nil || fmt.Sprint(turns[0].Entries) != fmt.Sprint(res.Audit.Entries) {
		t.Fatalf("thread t1's audit has %d turns; Result.Audit %+v", len(turns), res.Audit)
	}
}
