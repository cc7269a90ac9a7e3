package agentloop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// assemblyAgent builds an agent with the scratchpad (pinned) and the
// semantic and episodic memories (candidates) over store, with scored
// assembly on at a fixed time.
func assemblyAgent(t *testing.T, store storage.Store, model llms.Model, obs func(agentloop.Event)) *agentloop.Agent {
	t.Helper()
	sem, err := semanticmemory.New(semanticmemory.Config{Budget: layer.Budget{Max: 60}})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := episodicmemory.New(episodicmemory.Config{Scope: layer.ScopeResource, Budget: layer.Budget{Max: 60}})
	if err != nil {
		t.Fatal(err)
	}
	pad, err := workingmemory.New(workingmemory.Config{Template: "Plan: answer about the user's kitchen."})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	return mustAgent(t, agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{pad, sem, eps}, Observer: obs,
		Assembly: agentloop.AssemblyConfig{Scoring: prompt.Scoring{Now: now}}})
}

// fillMemories has the model memorize facts and call a tool, in one run.
func fillMemories(t *testing.T, store storage.Store) {
	t.Helper()
	facts := []string{
		"The user's espresso machine is a Gaggia from 2019.",
		"The user's espresso machine needs descaling every month.",
		"The user's espresso machine makes a double shot each morning.",
		"The user's bicycle has a red frame.",
		"The user's sister lives in Porto.",
		"The user plays tennis on Sundays.",
	}
	// One call a step, so the facts get their IDs in order.
	var steps []agenttest.Step
	for _, f := range facts {
		steps = append(steps, agenttest.Reply(agenttest.Calls(agenttest.Call(semanticmemory.DefaultID+"_memorize", fmt.Sprintf(`{"text":%q,"kind":"profile"}`, f)))))
	}
	model := agenttest.New(append(steps, agenttest.Reply(agenttest.Text("Noted.")))...)
	if _, err := assemblyAgent(t, store, model, nil).Run(t.Context(), agentloop.RunInput{ThreadID: "t1", ResourceID: "u", Input: "Remember these things about me."}); err != nil {
		t.Fatal(err)
	}
}

// TestMemory44_ScoredAssemblySharesOnePool: with scored assembly on, the
// semantic and episodic memories' candidates compete for the pool their
// allocations add up to: the facts about the asked subject win it, the
// blocks together stay within it, the pinned scratchpad keeps its own
// block, and Result.Budgets and each EventStep say what every layer had
// and used. The same inputs give the same prompt, byte for byte.
func TestMemory44_ScoredAssemblySharesOnePool(t *testing.T) {
	prompts := make([]string, 2)
	for i := range prompts {
		store := storage.NewMemory()
		fillMemories(t, store)
		model := agenttest.New(agenttest.Reply(agenttest.Text("It is a Gaggia.")))
		var stepBudgets []agentloop.LayerBudget
		obs := func(e agentloop.Event) {
			if e.Kind == agentloop.EventStep {
				stepBudgets = e.Budgets
			}
		}
		res, err := assemblyAgent(t, store, model, obs).Run(t.Context(), agentloop.RunInput{ThreadID: "t2", ResourceID: "u", Input: "Tell me about my espresso machine."})
		if err != nil {
			t.Fatal(err)
		}
		sys := model.Requests()[0].System()
		prompts[i] = sys
		for _, f := range []string{"Gaggia from 2019", "descaling every month", "double shot each morning"} {
			if !strings.Contains(sys, f) {
				t.Errorf("the prompt lacks the fact %q:\n%s", f, sys)
			}
		}
		for _, f := range []string{"red frame", "Porto", "tennis"} {
			if strings.Contains(sys, f) {
				t.Errorf("the prompt carries the unrelated fact %q", f)
			}
		}
		if !strings.Contains(sys, "Plan: answer about the user's kitchen.") {
			t.Errorf("the pinned scratchpad block is missing:\n%s", sys)
		}
		byLayer := map[string]agentloop.LayerBudget{}
		for _, b := range res.Budgets {
			byLayer[b.Layer] = b
			if b.Left != max(b.Allocated-b.Used, 0) || b.Used < 0 {
				t.Errorf("budget %+v is inconsistent", b)
			}
		}
		sem, eps, pad := byLayer[semanticmemory.DefaultID], byLayer[episodicmemory.DefaultID], byLayer[workingmemory.DefaultID]
		if !sem.Assembled || !eps.Assembled || pad.Assembled {
			t.Errorf("assembled: semantic %v, episodic %v, scratchpad %v; want true, true, false", sem.Assembled, eps.Assembled, pad.Assembled)
		}
		// The semantic block took more than its own 60 tokens: it won part
		// of the episodic layer's share.
		if sem.Allocated != eps.Allocated || sem.Allocated != 120 || sem.Used+eps.Used > sem.Allocated || sem.Used <= 60 || pad.Used == 0 {
			t.Errorf("the pool: semantic %+v, episodic %+v (they share one pool), scratchpad %+v", sem, eps, pad)
		}
		if fmt.Sprint(stepBudgets) != fmt.Sprint(res.Budgets) {
			t.Errorf("EventStep budgets %v, Result %v", stepBudgets, res.Budgets)
		}
	}
	if prompts[0] != prompts[1] {
		t.Errorf("the same inputs gave two prompts:\n%s\n---\n%s", prompts[0], prompts[1])
	}
}

// TestMemory45_AssemblyOffKeepsEachBudget: with AssemblyConfig.Disabled
// every layer fills its own budget, and Result.Budgets marks none
// assembled.
func TestMemory45_AssemblyOffKeepsEachBudget(t *testing.T) {
	sem, err := semanticmemory.New(semanticmemory.Config{Budget: layer.Budget{Max: 60}})
	if err != nil {
		t.Fatal(err)
	}
	model := agenttest.New(agenttest.Reply(agenttest.Text("ok")))
	res, err := mustAgent(t, agentloop.Config{Model: model, Layers: []layer.Layer{sem}, Assembly: agentloop.AssemblyConfig{Disabled: true}}).Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, b := range res.Budgets {
		if b.Assembled {
			t.Errorf("budget %+v is assembled with assembly off", b)
		}
		if b.Layer == semanticmemory.DefaultID {
			found = b.Allocated == 60
		}
	}
	if !found {
		t.Errorf("Budgets = %+v, want the semantic layer's own 60 tokens", res.Budgets)
	}
}

// episodeLines returns the refs of the episodes in the episodic block of
// a system prompt, in order.
func episodeLines(sys string) []string {
	var refs []string
	_, block, ok := strings.Cut(sys, "<"+layer.FenceTag(episodicmemory.DefaultID)+">")
	if !ok {
		return nil
	}
	block, _, _ = strings.Cut(block, "</"+layer.FenceTag(episodicmemory.DefaultID)+">")
	for _, line := range strings.Split(block, "\n") {
		if ref, _, ok := strings.Cut(strings.TrimPrefix(line, "["), "]"); ok && strings.HasPrefix(line, "[") {
			refs = append(refs, ref)
		}
	}
	return refs
}

// TestMemory93_AssemblySkipsEpisodesTheWindowShows: scored assembly does
// not pack the episode of a tool call the request's history already
// carries, so the prompt does not say the same call twice; the episodes
// of calls the window no longer holds are still packed. With assembly
// off the episodic layer's own Recall shows them all. In a full history
// that outgrows its share of the context window, the calls left out are
// not in the history, so their episodes are packed.
func TestMemory93_AssemblySkipsEpisodesTheWindowShows(t *testing.T) {
	run := func(t *testing.T, cfg agentloop.Config, turns int) (calls []string, last agenttest.Request) {
		t.Helper()
		model := agenttest.NewFunc(pagesPolicy)
		eps, err := episodicmemory.New(episodicmemory.Config{MaxRecall: 20})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Model, cfg.Store, cfg.Layers, cfg.Tools = model, storage.NewMemory(), []layer.Layer{eps}, []agentloop.Tool{pagesTool(cfg.ContextWindow / 4)}
		a := mustAgent(t, cfg)
		for i := 1; i <= turns; i++ {
			model.Reset()
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("Page %d", i)}); err != nil {
				t.Fatal(err)
			}
			reqs := model.Requests()
			for _, r := range reqs[len(reqs)-1].ToolResults() {
				calls = append(calls, r.ToolCallID)
			}
		}
		return calls, model.Requests()[0]
	}
	sentCalls := func(r agenttest.Request) map[string]bool {
		ids := map[string]bool{}
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				if c, ok := p.(llms.ToolCall); ok {
					ids[c.ID] = true
				}
			}
		}
		return ids
	}
	// check runs turns turns; wantSkipped: assembly is on. exact: the
	// history is the window, which the step sends whole, so no call is
	// both in it and in the block (in a full history projected newest
	// first, the calls beyond the history's own share may be both).
	check := func(t *testing.T, cfg agentloop.Config, turns int, wantSkipped, exact bool) {
		t.Helper()
		calls, last := run(t, cfg, turns)
		sent, shown := sentCalls(last), episodeLines(last.System())
		inBlock := map[string]bool{}
		for _, ref := range shown {
			inBlock[ref] = true
		}
		var kept, skipped int
		for _, id := range calls[:len(calls)-1] { // the last turn's call is made after its first request
			switch {
			case !sent[id] && !inBlock[id]:
				t.Errorf("call %s is neither in the history nor in the episodic block:\n%s", id, last.System())
			case sent[id] && inBlock[id] && wantSkipped && exact:
				t.Errorf("call %s is in the history and again in the episodic block", id)
			case sent[id] && inBlock[id]:
			case sent[id]:
				skipped++
			case !sent[id]:
				kept++
			}
		}
		if wantSkipped && (skipped == 0 || kept == 0) {
			t.Errorf("%d episodes skipped (in the history) and %d packed (not in it), want some of each; calls %v, history %v, block %v", skipped, kept, calls, sent, shown)
		}
		if !wantSkipped && skipped != 0 {
			t.Errorf("assembly off: %d episodes of calls in the history left out of the block %v", skipped, shown)
		}
	}
	t.Run("window", func(t *testing.T) {
		check(t, agentloop.Config{History: agentloop.HistoryConfig{MaxTurns: 2, SummarizeAfter: 1}}, 6, true, true)
	})
	t.Run("assembly off", func(t *testing.T) {
		check(t, agentloop.Config{History: agentloop.HistoryConfig{MaxTurns: 2, SummarizeAfter: 1}, Assembly: agentloop.AssemblyConfig{Disabled: true}}, 6, false, true)
	})
	t.Run("full history over its share", func(t *testing.T) {
		check(t, agentloop.Config{History: agentloop.HistoryConfig{Full: true}, KeepToolResults: true, ContextWindow: 8000}, 8, true, false)
	})
}
