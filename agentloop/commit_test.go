package agentloop_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// commitWrite is a call of semantic memory's memorize tool with an
// importance.
func commitWrite(text, kind string, importance float64) llms.ToolCall {
	return agenttest.Call(layer.ToolName(semanticmemory.DefaultID, "memorize"), map[string]any{"text": text, "kind": kind, "importance": importance})
}

// commitRouter refuses kind "secret", sends kind "draft" to the
// scratchpad and routes the rest as route.Default does.
var commitRouter = route.Func(func(ctx context.Context, w layer.Write) route.Route {
	switch w.Kind {
	case "secret":
		return route.Route{Reason: "secrets are not kept"}
	case "draft":
		return route.Route{Layer: layer.KeepsScratchpad, Reason: "drafts are transient"}
	}
	return route.Default.Route(ctx, w)
})

// commitPlan is what the model does for a user: one call a step, then a
// text answer.
func commitPlan(user string) []llms.ToolCall {
	return []llms.ToolCall{
		commitWrite(user+" prefers window seats on trains.", "preference", 0.2),
		commitWrite(user+" works from the Lisbon office.", "fact", 0.6),
		commitWrite(user+" draft: compare rail passes", "draft", 0.5),
		commitWrite(user+" card PIN is 1234", "secret", 0.5),
		commitWrite(user+" decided to travel on Friday the 4th.", "decision", 0.7),
	}
}

// commitModel answers each user (named by the run's input, "I am
// <user>") with that user's plan, one call per step.
func commitModel() *agenttest.Model {
	return agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		user := strings.TrimPrefix(r.LastUser(), "I am ")
		step := 0 // the tool messages since the user's
		for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role != llms.ChatMessageTypeHuman; i-- {
			if r.Messages[i].Role == llms.ChatMessageTypeTool {
				step++
			}
		}
		if plan := commitPlan(user); step < len(plan) {
			return agenttest.Calls(plan[step]), nil
		}
		return agenttest.Text("Noted, " + user + "."), nil
	})
}

// commitAgent is an agent with a scratchpad and a semantic memory that
// holds two facts and guards none, routing with commitRouter.
func commitAgent(t *testing.T, opts ...func(*agentloop.Config)) *agentloop.Agent {
	t.Helper()
	pad, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := semanticmemory.New(semanticmemory.Config{Capacity: semanticmemory.Capacity{MaxFacts: 2, GuardImportance: 2}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := agentloop.Config{Model: commitModel(), Store: storage.NewMemoryStore(), Layers: []layer.Layer{pad, sem}, Router: commitRouter}
	for _, o := range opts {
		o(&cfg)
	}
	return mustAgent(t, cfg)
}

// checkCommit checks that c is exactly what commitPlan(user) does: four
// writes (three facts, the draft on the scratchpad), five routes (the
// secret refused) and one eviction (the first fact, of least
// importance, when the third fact came).
func checkCommit(t *testing.T, user string, c audit.Commit) {
	t.Helper()
	sem, pad := semanticmemory.DefaultID, workingmemory.DefaultID
	wantRoutes := []struct {
		layer   string
		refused bool
		kind    string
	}{{sem, false, "preference"}, {sem, false, "fact"}, {pad, false, "draft"}, {"", true, "secret"}, {sem, false, "decision"}}
	if len(c.Routes) != len(wantRoutes) {
		t.Fatalf("%s: %d routes, want %d: %+v", user, len(c.Routes), len(wantRoutes), c.Routes)
	}
	for i, w := range wantRoutes {
		r := c.Routes[i]
		if r.Layer != w.layer || r.Refused != w.refused || r.Kind != w.kind || r.Step != i || !strings.HasPrefix(r.Text, user+" ") {
			t.Errorf("%s: route %d = %+v, want to %q, refused %v, kind %s, step %d", user, i, r, w.layer, w.refused, w.kind, i)
		}
	}
	if got := c.Refused(); len(got) != 1 || got[0].Reason != "secrets are not kept" {
		t.Errorf("%s: refused %+v", user, got)
	}
	wantWrites := []struct {
		layer, kind string
		step        int
		text        string
	}{{sem, "preference", 0, user + " prefers window seats on trains."}, {sem, "fact", 1, user + " works from the Lisbon office."},
		{pad, "draft", 2, user + " draft: compare rail passes"}, {sem, "decision", 4, user + " decided to travel on Friday the 4th."}}
	if len(c.Writes) != len(wantWrites) {
		t.Fatalf("%s: %d writes, want %d: %+v", user, len(c.Writes), len(wantWrites), c.Writes)
	}
	for i, w := range wantWrites {
		got := c.Writes[i]
		if got.Op != audit.OpWrite || got.Layer != w.layer || got.Kind != w.kind || got.Step != w.step || got.Bytes != len(w.text) {
			t.Errorf("%s: write %d = %+v, want %s %s at step %d, %d bytes", user, i, got, w.layer, w.kind, w.step, len(w.text))
		}
		if (got.Key != "") != (w.layer == sem) {
			t.Errorf("%s: write %d has key %q", user, i, got.Key)
		}
	}
	if len(c.Evictions) != 1 {
		t.Fatalf("%s: evictions %+v, want the first fact", user, c.Evictions)
	}
	if e := c.Evictions[0]; e.Layer != sem || e.Key != c.Writes[0].Key || e.Count != 1 || e.Step != 4 {
		t.Errorf("%s: eviction %+v, want fact %s of %s at step 4", user, e, c.Writes[0].Key, sem)
	}
}

// TestCommit_TurnWritesRoutesRefusesEvicts: a run's Result.Commit holds
// exactly its writes (with their sizes), its routes (a refusal with its
// reason) and the fact evicted to make room, and the committed audit turn
// gives the same commit.
func TestCommit_TurnWritesRoutesRefusesEvicts(t *testing.T) {
	ctx := t.Context()
	a := commitAgent(t)
	res, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t-ada", ResourceID: "ada", Input: "I am ada"})
	if err != nil {
		t.Fatal(err)
	}
	checkCommit(t, "ada", res.Commit)
	turns, err := a.Audit(ctx, "t-ada")
	if err != nil || len(turns) != 1 {
		t.Fatalf("audit turns %d, %v", len(turns), err)
	}
	if got, want := fmt.Sprintf("%+v", turns[0].Commit()), fmt.Sprintf("%+v", res.Commit); got != want {
		t.Fatalf("the stored turn's commit differs from Result.Commit:\n%s\n%s", got, want)
	}
	if res.Commit.Empty() || !audit.CommitOf(nil).Empty() {
		t.Fatal("Empty is wrong")
	}
}

// TestCommit_AuditDisabled: with the audit disabled, Result.Commit still
// holds the routes, writes and named evictions, and nothing is
// committed.
func TestCommit_AuditDisabled(t *testing.T) {
	a := commitAgent(t, func(c *agentloop.Config) { c.Audit.Disabled = true })
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t-ada", ResourceID: "ada", Input: "I am ada"})
	if err != nil {
		t.Fatal(err)
	}
	checkCommit(t, "ada", res.Commit)
	if turns, err := a.Audit(t.Context(), "t-ada"); err != nil || len(turns) != 0 || res.Audit != nil {
		t.Fatalf("audit turns %d (%v), Result.Audit %v: want none", len(turns), err, res.Audit)
	}
}

// TestCommit_TwoUsersAtOnce: runs of two users at once on one agent
// each get their own commit, holding none of the other's entries.
func TestCommit_TwoUsersAtOnce(t *testing.T) {
	ctx := t.Context()
	a := commitAgent(t)
	users := []string{"ada", "ada/b", "bob"}
	commits := make([]audit.Commit, len(users))
	errs := make([]error, len(users))
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t-" + strings.ReplaceAll(u, "/", "-"), ResourceID: u, Input: "I am " + u})
			if err == nil {
				commits[i] = res.Commit
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, u := range users {
		if errs[i] != nil {
			t.Fatalf("%s: %v", u, errs[i])
		}
		checkCommit(t, u, commits[i])
		for _, r := range commits[i].Routes {
			for _, other := range users {
				if other != u && strings.HasPrefix(r.Text, other+" ") {
					t.Errorf("%s's commit holds %s's route %q", u, other, r.Text)
				}
			}
		}
	}
}
