package agentloop_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// assemblyAgent builds an agent with the scratchpad (pinned) and the
// semantic and episodic memories (candidates) over store, with scored
// assembly on at a fixed time.
func assemblyAgent(t *testing.T, store storage.Store, model llms.Model, obs func(agentloop.Event)) *agentloop.Agent {
	t.Helper()
	// No kind is pinned: the test is about what scored assembly picks.
	sem, err := semanticmemory.New(semanticmemory.Config{Spec: layer.Spec{Budget: layer.Budget{Max: 60}}, PinKinds: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := episodicmemory.New(episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource, Budget: layer.Budget{Max: 60}}})
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
		store := storage.NewMemoryStore()
		fillMemories(t, store)
		model := agenttest.New(agenttest.Reply(agenttest.Text("It is a Gaggia.")))
		var stepBudgets []prompt.LayerBudget
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
		byLayer := map[string]prompt.LayerBudget{}
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
	// No kind is pinned: the test is about what scored assembly picks.
	sem, err := semanticmemory.New(semanticmemory.Config{Spec: layer.Spec{Budget: layer.Budget{Max: 60}}, PinKinds: []string{}})
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
	_, block, ok := strings.Cut(sys, "<"+fence.Tag(episodicmemory.DefaultID)+">")
	if !ok {
		return nil
	}
	block, _, _ = strings.Cut(block, "</"+fence.Tag(episodicmemory.DefaultID)+">")
	for _, line := range strings.Split(block, "\n") {
		if ref, _, ok := strings.Cut(strings.TrimPrefix(line, "["), "]"); ok && strings.HasPrefix(line, "[") {
			refs = append(refs, ref)
		}
	}
	return refs
}

// TestMemory93_AssemblySkipsEpisodesTheWindowShows: scored assembly does
// not pack the episode of a tool call whose whole result the request's
// history already carries, so the prompt does not say the same call
// twice (with assembly off, the episodic layer's own Recall does); the
// episodes of calls whose result it holds compacted are packed (the
// episode keeps what the compaction dropped), and so are those of calls
// beyond the history's own share of a full history, which the step may
// not send.
func TestMemory93_AssemblySkipsEpisodesTheWindowShows(t *testing.T) {
	// Each turn's call has an ID of its own: "call-Page 3".
	policy := func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if len(r.ToolResults()) > 0 {
			return pagesPolicy(ctx, r)
		}
		c := agenttest.Call("createPage", map[string]string{"title": r.LastUser()})
		c.ID = "call-" + r.LastUser()
		return agenttest.Calls(c), nil
	}
	run := func(t *testing.T, cfg agentloop.Config, turns int) (calls []string, last agenttest.Request) {
		t.Helper()
		model := agenttest.NewFunc(policy)
		eps, err := episodicmemory.New(episodicmemory.Config{MaxRecall: 20, Spec: layer.Spec{Budget: layer.Budget{Min: 800}}})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Model, cfg.Store, cfg.Layers, cfg.Tools = model, storage.NewMemoryStore(), []layer.Layer{eps}, []agentloop.Tool{pagesTool(cmp.Or(cfg.ContextWindow/4, 100))}
		a := mustAgent(t, cfg)
		for i := 1; i <= turns; i++ {
			model.Reset()
			in := fmt.Sprintf("Page %d", i)
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: in}); err != nil {
				t.Fatal(err)
			}
			calls = append(calls, "call-"+in)
		}
		return calls[:turns-1], model.Requests()[0] // the last turn's call comes after its first request
	}
	// inHistory returns the IDs of the calls whose result r's history
	// carries, and whether it carries it whole.
	inHistory := func(r agenttest.Request) map[string]bool {
		ids := map[string]bool{}
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				if res, ok := p.(llms.ToolCallResponse); ok {
					ids[res.ToolCallID] = !strings.HasPrefix(res.Content, "[compacted]")
				}
			}
		}
		return ids
	}
	// count runs turns turns and counts the calls of the last request
	// whose episode is in its episodic block and whose result its
	// history carries whole, and compacted.
	count := func(t *testing.T, cfg agentloop.Config, turns int) (whole, compacted int) {
		t.Helper()
		calls, last := run(t, cfg, turns)
		hist, shown := inHistory(last), episodeLines(last.System())
		if len(shown) == 0 {
			t.Fatalf("no episodic block:\n%s", last.System())
		}
		for _, id := range calls {
			w, sent := hist[id]
			switch {
			case sent && w && slices.Contains(shown, id):
				whole++
			case sent && !w && slices.Contains(shown, id):
				compacted++
			}
		}
		return whole, compacted
	}
	window := history.Config{MaxTurns: 4} // no summary yet
	// Assembly leaves out the episodes of calls whose whole result the
	// window carries; the layer's own Recall does not.
	if whole, _ := count(t, agentloop.Config{History: window, KeepToolResults: true}, 4); whole != 0 {
		t.Errorf("%d calls are in the window whole and their episodes in the block again", whole)
	}
	if whole, _ := count(t, agentloop.Config{History: window, KeepToolResults: true, Assembly: agentloop.AssemblyConfig{Disabled: true}}, 4); whole == 0 {
		t.Error("assembly off: no episode of a call in the window is in the block")
	}
	// A compacted result says less than its episode, which is packed.
	if _, compacted := count(t, agentloop.Config{History: window}, 4); compacted == 0 {
		t.Error("no episode of a call whose result the window holds compacted is in the block")
	}
	// A full history over its own share of the window is projected
	// newest first: the calls beyond that share are not surely sent, so
	// their episodes are packed (the step happens to send some of them).
	if whole, _ := count(t, agentloop.Config{History: history.Config{Full: true}, KeepToolResults: true, ContextWindow: 16000}, 8); whole == 0 {
		t.Error("full history over its share: every call in the history was taken as surely sent")
	}
}

// rivalLayer offers n candidates of about 20 tokens, each better than a
// summary part the input does not name and worse than one it names, for
// a pool it adds budget tokens to.
type rivalLayer struct {
	budget, n int
	now       time.Time
}

func (l rivalLayer) Spec() layer.Spec {
	return layer.Spec{ID: "rival", Slot: 600, Budget: layer.Budget{Max: l.budget}}
}

func (l rivalLayer) Recall(context.Context, layer.Query) ([]layer.Item, error) { return nil, nil }

func (l rivalLayer) Candidates(_ context.Context, q layer.Query) ([]layer.Candidate, error) {
	words := strings.Fields("amber basil cedar delta ember fjord garnet harbor iris juniper kestrel lagoon maple nectar orchid pebble quartz raven saffron tundra umber violet willow xenon yarrow zephyr acorn birch cobalt dune")
	var out []layer.Candidate
	for i := range l.n {
		// Distinct words, so that no note is a near-duplicate of another.
		var b strings.Builder
		for k := range 5 {
			b.WriteString(" " + words[(i*5+k)%len(words)] + fmt.Sprint(i))
		}
		text := fmt.Sprintf("note %d:%s.", i, b.String())
		out = append(out, layer.Candidate{Key: fmt.Sprint(i), Text: text, Tokens: q.Count(text), Similarity: 0.5, Importance: 0.5, Time: l.now})
	}
	return out, nil
}

// TestMemory97_SummaryCompetesInThePool: with scored assembly on and
// AssemblyConfig.SummaryCandidates, the history summary offers its parts
// (each entity of its "Entities seen earlier" line, each other line) as
// candidates in the pool it shares with the other candidate layers. When the pool is short, the part the
// user's message names stays and parts it does not name give way to
// better candidates; the parts shown keep the summary's order, the audit
// counts the parts and lists those left out, and Result.Budgets marks
// the summary assembled. With the pool large enough, with assembly off,
// or without AssemblyConfig.SummaryCandidates (the default), the whole
// summary is sent as it is stored.
func TestMemory97_SummaryCompetesInThePool(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	titles := []string{"Pricing", "Blog", "Contact", "Support", "Careers", "Press", "Legal", "Team", "Shop", "Events"}
	run := func(t *testing.T, rival rivalLayer, disabled bool, pin ...bool) (sys, stored string, res *agentloop.Result) {
		t.Helper()
		candidates := len(pin) == 0 || !pin[0]
		model := agenttest.NewFunc(pagesPolicy)
		a := mustAgent(t, agentloop.Config{Model: model, Store: storage.NewMemoryStore(), Tools: []agentloop.Tool{pagesTool(10)},
			Layers:   []layer.Layer{rival},
			History:  history.Config{MaxTurns: 1, SummarizeAfter: 1, SummaryTokens: 120},
			Assembly: agentloop.AssemblyConfig{Disabled: disabled, SummaryCandidates: candidates, Scoring: prompt.Scoring{Now: now}}})
		for _, title := range titles {
			if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: title}); err != nil {
				t.Fatal(err)
			}
		}
		ck, err := a.LoadCheckpoint(t.Context(), "t")
		if err != nil {
			t.Fatal(err)
		}
		model.Reset()
		res, err = a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Rename the Pricing page"})
		if err != nil {
			t.Fatal(err)
		}
		sys = model.Requests()[0].System()
		i, j := strings.Index(sys, "<history_summary>\n"), strings.Index(sys, "\n</history_summary>")
		if i < 0 || j < i {
			t.Fatalf("no summary block:\n%s", sys)
		}
		return sys[i+len("<history_summary>\n") : j], ck.Summary.Text, res
	}
	// parts splits a summary as the layer does: the entities, then the
	// lines.
	parts := func(s string) []string {
		var out []string
		for i, ln := range strings.Split(s, "\n") {
			if rest, ok := strings.CutPrefix(ln, "Entities seen earlier: "); ok && i == 0 {
				out = append(out, strings.Split(rest, "; ")...)
			} else {
				out = append(out, ln)
			}
		}
		return out
	}

	t.Run("short pool", func(t *testing.T) {
		shown, stored, res := run(t, rivalLayer{budget: 60, n: 12, now: now}, false)
		all, got := parts(stored), parts(shown)
		if !strings.HasPrefix(stored, "Entities seen earlier: ") || len(all) < 8 {
			t.Fatalf("the stored summary has no entities line or few parts:\n%s", stored)
		}
		if !slices.Contains(got, `page_1 "Pricing"`) {
			t.Errorf("the entity the message names is not shown:\n%s", shown)
		}
		if len(got) >= len(all) {
			t.Errorf("all %d parts are shown; the rival candidates should have taken the place of some", len(all))
		}
		// The parts shown are parts of the summary, in its order.
		k := 0
		for _, p := range got {
			for k < len(all) && all[k] != p {
				k++
			}
			if k == len(all) {
				t.Fatalf("part %q is not in the stored summary's order:\n%s\nstored:\n%s", p, shown, stored)
			}
		}
		var ev *audit.Entry
		for i, e := range res.Audit.Entries {
			if e.Op == audit.OpRecall && e.Layer == history.SummaryLayerID && e.Step == 0 {
				ev = &res.Audit.Entries[i]
				break
			}
		}
		if ev == nil {
			t.Fatal("no recall event of the summary in the audit")
		}
		if ev.Count != len(all) || len(ev.Candidates) != len(all)-len(got) {
			t.Errorf("audit: %d parts, %d left out; want %d and %d", ev.Count, len(ev.Candidates), len(all), len(all)-len(got))
		}
		for _, c := range ev.Candidates {
			if c.Packed {
				t.Errorf("audit lists the packed part %q as left out", c.Key)
			}
		}
		assembled := false
		for _, b := range res.Budgets {
			if b.Layer == history.SummaryLayerID {
				assembled = b.Assembled
			}
		}
		if !assembled {
			t.Errorf("Result.Budgets does not mark the summary assembled: %+v", res.Budgets)
		}
		// The same inputs give the same block.
		if again, _, _ := run(t, rivalLayer{budget: 60, n: 12, now: now}, false); again != shown {
			t.Errorf("two runs showed two summaries:\n%s\n---\n%s", shown, again)
		}
	})
	t.Run("room for all", func(t *testing.T) {
		shown, stored, _ := run(t, rivalLayer{budget: 60, n: 1, now: now}, false)
		if shown != stored {
			t.Errorf("shown:\n%s\nstored:\n%s", shown, stored)
		}
	})
	t.Run("assembly off", func(t *testing.T) {
		shown, stored, _ := run(t, rivalLayer{budget: 60, n: 12, now: now}, true)
		if shown != stored {
			t.Errorf("shown:\n%s\nstored:\n%s", shown, stored)
		}
	})
	t.Run("pinned", func(t *testing.T) {
		shown, stored, res := run(t, rivalLayer{budget: 60, n: 12, now: now}, false, true)
		if shown != stored {
			t.Errorf("shown:\n%s\nstored:\n%s", shown, stored)
		}
		for _, b := range res.Budgets {
			if b.Layer == history.SummaryLayerID && b.Assembled || b.Layer == "rival" && !b.Assembled {
				t.Errorf("budget %+v: the summary is pinned, the rival assembled", b)
			}
		}
	})
}
