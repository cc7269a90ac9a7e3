package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// entityPage finds the newest page in entity memory's [WORKING MEMORY]
// block: `pages:` then `  - "Title" (page_101, ...`.
var entityPage = regexp.MustCompile(`(?mi)^pages:\n\s+- "[^"\n]*" \((page_\d+)`)

// entityPolicy is cmsPolicy reading entity memory's format.
func entityPolicy(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	if res := r.ToolResults(); len(res) > 0 {
		return agenttest.Text("Done: " + res[0].Content), nil
	}
	switch user := r.LastUser(); {
	case strings.Contains(user, "Create"):
		return agenttest.Calls(agenttest.Call("createPage", map[string]string{"title": "About"})), nil
	case strings.Contains(user, "this page"):
		m := entityPage.FindStringSubmatch(r.System())
		if m == nil {
			return agenttest.Text("Which page do you mean?"), nil
		}
		return agenttest.Calls(agenttest.Call("listSections", map[string]string{"pageId": m[1]})), nil
	}
	return agenttest.Text("ok"), nil
}

func openSQLite(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestRestartScenarioSQLite is the seed design's scenario: create the
// About page, restart (new store handle, new layers, new agent, new
// model), ask "what sections are on this page?".
func TestRestartScenarioSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "memory.db")
	cms := newCMS()
	process := func(input string) (*agentloop.Result, *agenttest.Model) {
		st := openSQLite(t, path)
		defer st.Close()
		wm, err := workingmemory.New(workingmemory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		em, err := entitymemory.New(entitymemory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		model := agenttest.NewFunc(entityPolicy)
		a := mustAgent(t, agentloop.Config{Model: model, Store: st, Layers: []layer.Layer{wm, em}, Tools: cms.tools()})
		res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "about-thread", ResourceID: "site-1", Input: input})
		if err != nil {
			t.Fatalf("%q: %v", input, err)
		}
		return res, model
	}
	process("Create an About page")
	res, model := process("What sections are on this page?")
	if got := cms.listed(); len(got) != 1 || got[0] != "page_101" {
		t.Fatalf("listSections got %v, want [page_101]; system prompt:\n%s", got, model.Requests()[0].System())
	}
	if !strings.Contains(res.Output, `"sections":["hero","team","contact"]`) {
		t.Errorf("output %q", res.Output)
	}
	// The history survived too: 4 messages of the first turn precede the
	// second question.
	if n := len(model.Requests()[0].Messages); n != 1+5 {
		t.Errorf("first request after restart has %d messages, want 6", n)
	}
}

const translator = "You are a translator."

// TestSpawnScenarioSQLite: a child agent inherits resource working memory
// as a clone, not thread-scoped working memory, gets a child scope of the
// key-value memory, and its working-memory tool acts on its own copy.
func TestSpawnScenarioSQLite(t *testing.T) {
	st := openSQLite(t, filepath.Join(t.TempDir(), "memory.db"))
	defer st.Close()
	wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	notes, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{ID: "thread-notes"}})
	if err != nil {
		t.Fatal(err)
	}
	kvl, err := kv.NewLayer(kv.LayerConfig{Render: func(mem *kv.Scope) string {
		c, _, _ := kv.Get[string](mem, "customer")
		return fmt.Sprintf("scope %s: customer=%s", mem.Path(), c)
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The parent thread's key-value memory, written by code outside a run.
	parentKV, err := kvl.Open(t.Context(), layer.Env{ThreadID: "parent", ResourceID: "user-1", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Set(parentKV.Memory(), "customer", "Acme"); err != nil {
		t.Fatal(err)
	}
	if err := parentKV.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	layers := []layer.Layer{wm, notes, kvl}

	// Seed: the resource's working memory and a page in the thread.
	seed := agenttest.New(
		agenttest.Reply(agenttest.Calls(
			agenttest.Call("working_memory_update", `{"language":"French"}`),
			agenttest.Call("thread-notes_update", `{"draft":"secret thread plan"}`))),
		agenttest.Reply(agenttest.Text("ok")),
	)
	a := mustAgent(t, agentloop.Config{Model: seed, Store: st, Layers: layers, Tools: newCMS().tools()})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "parent", ResourceID: "user-1", Input: "seed"}); err != nil {
		t.Fatal(err)
	}

	var childSystem string
	policy := func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		res := r.ToolResults()
		if strings.HasPrefix(r.System(), translator) {
			if len(res) == 0 {
				childSystem = r.System()
				return agenttest.Calls(agenttest.Call("working_memory_update", `{"language":"German"}`)), nil
			}
			return agenttest.Text("Bonjour"), nil
		}
		if len(res) == 0 {
			return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, map[string]string{"instructions": translator, "input": "Say hello"})), nil
		}
		return agenttest.Text("child: " + res[0].Content), nil
	}
	model := agenttest.NewFunc(policy)
	a = mustAgent(t, agentloop.Config{Model: model, Store: st, Layers: layers, Tools: newCMS().tools()})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "parent", ResourceID: "user-1", Input: "Greet the user"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "child: Bonjour" {
		t.Fatalf("output %q", res.Output)
	}
	if sys := model.Requests()[0].System(); !strings.Contains(sys, "secret thread plan") {
		t.Fatalf("the parent's thread notes are not set, the test proves nothing:\n%s", sys)
	}
	if !strings.Contains(childSystem, `"language": "French"`) {
		t.Errorf("child did not inherit resource working memory:\n%s", childSystem)
	}
	if strings.Contains(childSystem, "secret thread plan") || strings.Contains(childSystem, "<thread_notes>") {
		t.Errorf("child inherited thread-scoped working memory:\n%s", childSystem)
	}
	if !regexp.MustCompile(`scope root/\S+: customer=Acme`).MatchString(childSystem) {
		t.Errorf("child's key-value memory is not a child scope with fallback:\n%s", childSystem)
	}
	// The child's update went to its clone: the stored resource memory
	// still says French, and the child scope is gone.
	check := agenttest.New(agenttest.Reply(agenttest.Text("x")))
	b := mustAgent(t, agentloop.Config{Model: check, Store: st, Layers: layers})
	if _, err := b.Run(t.Context(), agentloop.RunInput{ThreadID: "other", ResourceID: "user-1", Input: "x"}); err != nil {
		t.Fatal(err)
	}
	if sys := check.Requests()[0].System(); !strings.Contains(sys, `"language": "French"`) || strings.Contains(sys, "German") {
		t.Errorf("parent's resource memory changed by the child:\n%s", sys)
	}
	if !regexp.MustCompile(`scope root: customer=Acme`).MatchString(model.Requests()[len(model.Requests())-1].System()) {
		t.Errorf("the parent's key-value memory after the child returned:\n%s", model.Requests()[len(model.Requests())-1].System())
	}
	var args map[string]string
	for _, r := range model.Requests() {
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				if c, ok := p.(llms.ToolCall); ok && c.FunctionCall.Name == agentloop.SpawnToolName {
					json.Unmarshal([]byte(c.FunctionCall.Arguments), &args)
				}
			}
		}
	}
	if args["instructions"] != translator {
		t.Errorf("spawn call args %v", args)
	}
}

// TestOversizeScratchpadStaysInPrompt: a scratchpad grown past its token
// budget (working memory's default Max is 1500) is still in the next
// prompt, cut to fit with a notice, rather than dropped by the projection
// that holds each layer to its share.
func TestOversizeScratchpadStaysInPrompt(t *testing.T) {
	wm, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	notes := map[string]string{}
	for i := range 300 {
		notes[fmt.Sprintf("finding-%03d", i)] = strings.Repeat("x", 40)
	}
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call(layer.ToolName("working-memory", "update"), map[string]any{"notes": notes}))),
		agenttest.Reply(agenttest.Text("noted")),
	)
	agent, err := agentloop.New(agentloop.Config{Model: model, Layers: []layer.Layer{wm}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(t.Context(), agentloop.RunInput{ThreadID: "big", Input: "take notes"}); err != nil {
		t.Fatal(err)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	if res := reqs[1].ToolResults(); len(res) != 1 || strings.HasPrefix(res[0].Content, "error") {
		t.Fatalf("the update failed: %+v", res)
	}
	sys := reqs[1].System()
	if !strings.Contains(sys, "<working_memory>\n{\"notes\":{\"finding-000\"") || !strings.Contains(sys, "truncated") {
		t.Fatalf("the oversize scratchpad is not in the prompt, cut with a notice:\n%.400s", sys)
	}
}
