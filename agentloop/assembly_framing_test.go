package agentloop_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// framingFacts are what the first thread memorizes: no two alike, so
// that none is a near-duplicate of another.
var framingFacts = []string{
	"The user's espresso machine is a Gaggia from 2019.",
	"The user's sister lives in Porto.",
	"The user plays tennis on Sundays.",
	"Invoices go to billing@acme.example by the fifth.",
}

// framingTopics are the second thread's messages, one run each: no two
// alike, so that neither their episodes nor the summary's lines are
// near-duplicates.
var framingTopics = []string{
	"Draft a welcome note for the kitchen team",
	"Which tennis club is closest to Porto",
	"Summarise yesterday's invoice dispute briefly",
	"Plan a descaling routine for old espresso machines",
	"Tell me about my espresso machine",
}

// framingPrompts runs the same two threads of one user on a new store,
// with assembly as given, and returns the system prompt of every model
// call of the second thread. The first thread memorizes facts, one call
// a step (facts and call episodes); the second has a conversation whose
// older turns are summarized, so the semantic and episodic memories and
// the history summary (with SummaryCandidates) all offer candidates. The
// second thread calls no tool: the history never carries a result whose
// episode assembly would leave out. budget is the semantic and episodic
// memories' each.
func framingPrompts(t *testing.T, asm agentloop.AssemblyConfig, budget int) []string {
	t.Helper()
	store := storage.NewMemoryStore()
	newAgent := func(model llms.Model) *agentloop.Agent {
		sem, err := semanticmemory.New(semanticmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource, Budget: layer.Budget{Min: budget, Max: budget}}})
		if err != nil {
			t.Fatal(err)
		}
		eps, err := episodicmemory.New(episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource, Budget: layer.Budget{Min: budget, Max: budget}}})
		if err != nil {
			t.Fatal(err)
		}
		pad, err := workingmemory.New(workingmemory.Config{Template: "Plan: help the user with their kitchen."})
		if err != nil {
			t.Fatal(err)
		}
		return mustAgent(t, agentloop.Config{Model: model, Store: store, ContextWindow: 32000, Layers: []layer.Layer{pad, sem, eps},
			History: history.Config{MaxTurns: 1, SummarizeAfter: 1, SummaryTokens: 400}, Assembly: asm})
	}
	var steps []agenttest.Step
	for _, f := range framingFacts {
		steps = append(steps, agenttest.Reply(agenttest.Calls(agenttest.Call(semanticmemory.DefaultID+"_memorize", fmt.Sprintf(`{"text":%q,"kind":"profile"}`, f)))))
	}
	seed := newAgent(agenttest.New(append(steps, agenttest.Reply(agenttest.Text("Noted.")))...))
	if _, err := seed.Run(t.Context(), agentloop.RunInput{ThreadID: "t0", ResourceID: "u", Input: "Remember these things about me."}); err != nil {
		t.Fatal(err)
	}
	model := agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Text("Done: " + strings.ToLower(r.LastUser()) + "."), nil
	})
	a := newAgent(model)
	for _, in := range framingTopics {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t1", ResourceID: "u", Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, r := range model.Requests() {
		out = append(out, r.System())
	}
	return out
}

// TestAssemblyRoomForAllIsTheLayersOwn: with room for every candidate,
// scored assembly (the default, the summary included) sends the prompt
// the layers send on their own (assembly off), byte for byte, at every
// step: the semantic block, the episodic block with its header and in
// its order, and the summary with its header. The last prompt has all
// three blocks, so the comparison covers each.
func TestAssemblyRoomForAllIsTheLayersOwn(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	own := framingPrompts(t, agentloop.AssemblyConfig{Disabled: true}, 2000)
	for _, tc := range []struct {
		name string
		asm  agentloop.AssemblyConfig
	}{
		{"default", agentloop.AssemblyConfig{Scoring: prompt.Scoring{Now: now}}},
		{"summary candidates", agentloop.AssemblyConfig{SummaryCandidates: true, Scoring: prompt.Scoring{Now: now}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := framingPrompts(t, tc.asm, 2000)
			if len(got) != len(own) {
				t.Fatalf("%d prompts, want %d", len(got), len(own))
			}
			for i := range own {
				if got[i] != own[i] {
					t.Errorf("prompt %d differs from the layers' own.\nassembled:\n%s\n---\nown:\n%s", i, got[i], own[i])
				}
			}
		})
	}
	last := own[len(own)-1]
	for _, want := range []string{
		"<" + fence.Tag(semanticmemory.DefaultID) + ">\n",
		"<" + fence.Tag(episodicmemory.DefaultID) + ">\nEarlier tool calls and turns, oldest first.",
		"Summary of the earlier conversation",
		"Gaggia from 2019",
	} {
		if !strings.Contains(last, want) {
			t.Errorf("the last prompt lacks %q: the comparison does not cover it\n%s", want, last)
		}
	}
	if n := len(episodeLines(last)); n < 6 {
		t.Errorf("the last prompt shows %d episodes, want the 6 or more the log holds:\n%s", n, last)
	}
}

// TestAssemblyDropsItemsKeepsHeader: when the pool cannot hold every
// episode, scored assembly leaves some out, but the episodic block keeps
// its header line (what the block is, how to read an episode whole) and
// shows the episodes it keeps oldest first, as the layer does; facts
// stay in their fenced block. With assembly off, the layer's Recall
// fills the same budget with its own picks under the same header.
func TestAssemblyDropsItemsKeepsHeader(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	all := framingPrompts(t, agentloop.AssemblyConfig{Disabled: true}, 2000)
	tight := framingPrompts(t, agentloop.AssemblyConfig{Scoring: prompt.Scoring{Now: now}}, 90)
	full, short := all[len(all)-1], tight[len(tight)-1]
	header := "<" + fence.Tag(episodicmemory.DefaultID) + ">\nEarlier tool calls and turns, oldest first. [ref] is the reference: call " +
		episodicmemory.DefaultID + "_read with {\"ref\": \"...\"} to read a full result.\n"
	if !strings.Contains(full, header) {
		t.Fatalf("the layer's own block has no header %q:\n%s", header, full)
	}
	every, kept := episodeLines(full), episodeLines(short)
	if len(kept) == 0 || len(kept) >= len(every) {
		t.Fatalf("assembly kept %d of %d episodes; want some left out, some kept:\n%s", len(kept), len(every), short)
	}
	if !strings.Contains(short, header) {
		t.Errorf("the assembled episodic block lost its header:\n%s", short)
	}
	// The episodes kept are in the layer's order (the log's): a
	// subsequence of its own block.
	k := 0
	for _, ref := range kept {
		for k < len(every) && every[k] != ref {
			k++
		}
		if k == len(every) {
			t.Errorf("episodes %v are not in the log's order %v", kept, every)
			break
		}
	}
	if strings.Contains(short, " profile] ") && !strings.Contains(short, "<"+fence.Tag(semanticmemory.DefaultID)+">\n[f") {
		t.Errorf("facts outside a fenced semantic block:\n%s", short)
	}
	// The control: a block that lost its header fails the check above.
	if strings.Contains(strings.Replace(short, header, "<"+fence.Tag(episodicmemory.DefaultID)+">\n", 1), header) {
		t.Error("the header check cannot fail")
	}
	if slices.Equal(kept, every) {
		t.Error("nothing was dropped")
	}
}
