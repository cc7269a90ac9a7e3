package agentloop_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

const childInstructions = "You are a translator."

// spawnPolicy: the parent delegates to a child; the child proves what it
// inherited by writing a note on its own (child) memory and answering with
// what its prompt holds.
func spawnPolicy(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	child := strings.HasPrefix(r.System(), childInstructions)
	res := r.ToolResults()
	switch {
	case child && len(res) == 0:
		return agenttest.Calls(agenttest.Call("profile_note", `{"text":"child was here"}`)), nil
	case child:
		prefersFrench := strings.Contains(r.System(), "prefers French")
		seesPage := strings.Contains(r.System(), "page_101")
		if prefersFrench && !seesPage {
			return agenttest.Text("Bonjour"), nil
		}
		return agenttest.Text("wrong inheritance"), nil
	case len(res) == 0:
		return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, map[string]string{"instructions": childInstructions, "input": "Translate hello"})), nil
	default:
		return agenttest.Text("child said: " + res[0].Content), nil
	}
}

// seedParent gives the resource-scoped profile a note and the
// thread-scoped entities a page, through a first run.
func seedParent(t *testing.T, store storage.Store, layers []layer.Layer) {
	t.Helper()
	seed := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("profile_note", `{"text":"user prefers French"}`), agenttest.Call("createPage", `{"title":"About"}`))),
		agenttest.Reply(agenttest.Text("ok")),
	)
	a := mustAgent(t, agentloop.Config{Model: seed, Store: store, Layers: layers, Tools: newCMS().tools()})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "parent", ResourceID: "user-1", Input: "seed"}); err != nil {
		t.Fatal(err)
	}
}

func TestSpawnToolInheritsResourceMemory(t *testing.T) {
	store := storage.NewMemoryStore()
	profile := looptest.NewProfile("profile", layer.ScopeResource)
	entities := looptest.NewNotes("entities", layer.ScopeThread)
	layers := []layer.Layer{profile, entities}
	seedParent(t, store, layers)

	model := agenttest.NewFunc(spawnPolicy)
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Layers: layers, Tools: newCMS().tools(), MaxDepth: 1})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "parent", ResourceID: "user-1", Input: "Say hello in the user's language"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "child said: Bonjour" {
		t.Fatalf("output %q", res.Output)
	}
	var childReqs int
	for _, r := range model.Requests() {
		if !strings.HasPrefix(r.System(), childInstructions) {
			continue
		}
		childReqs++
		// At MaxDepth the child cannot spawn; it has its layer tools.
		if r.HasTool(agentloop.SpawnToolName) || !r.HasTool("profile_note") {
			t.Errorf("child tools: %v", r.ToolNames())
		}
	}
	if childReqs != 2 {
		t.Errorf("%d child requests, want 2", childReqs)
	}
	// The child's note went to the child's clone, not the parent's
	// resource memory.
	after := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("x"))), Store: store, Layers: layers})
	m := after.Config().Model.(*agenttest.Model)
	if _, err := after.Run(t.Context(), agentloop.RunInput{ThreadID: "other", ResourceID: "user-1", Input: "x"}); err != nil {
		t.Fatal(err)
	}
	sys := m.Requests()[0].System()
	if !strings.Contains(sys, "user prefers French") || strings.Contains(sys, "child was here") {
		t.Errorf("parent resource memory after the child:\n%s", sys)
	}
	// The child's thread was not checkpointed.
	keys, _ := store.List(t.Context(), "threads/")
	keys = slices.DeleteFunc(keys, func(k string) bool { return !strings.HasSuffix(k, "/"+thread.HeadName) })
	if len(keys) != 2 {
		t.Errorf("thread keys %v, want parent and other only", keys)
	}
}

func TestSpawnDepth(t *testing.T) {
	// Every agent delegates while it can; the deepest one answers.
	policy := func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if res := r.ToolResults(); len(res) > 0 {
			return agenttest.Text("up:" + res[0].Content), nil
		}
		if r.HasTool(agentloop.SpawnToolName) {
			return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, `{"input":"go deeper"}`)), nil
		}
		return agenttest.Text("bottom"), nil
	}
	for _, tt := range []struct {
		maxDepth int
		want     string
	}{{-1, "bottom"}, {1, "up:bottom"}, {3, "up:up:up:bottom"}} {
		a := mustAgent(t, agentloop.Config{Model: agenttest.NewFunc(policy), MaxDepth: tt.maxDepth})
		res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Output != tt.want {
			t.Errorf("MaxDepth %d: %q, want %q", tt.maxDepth, res.Output, tt.want)
		}
	}
}

func TestSpawnFromCode(t *testing.T) {
	store := storage.NewMemoryStore()
	profile := looptest.NewProfile("profile", layer.ScopeResource)
	layers := []layer.Layer{profile, looptest.NewNotes("entities", layer.ScopeThread)}
	seedParent(t, store, layers)
	a := mustAgent(t, agentloop.Config{Model: agenttest.NewFunc(spawnPolicy), Store: store, Layers: layers, Tools: newCMS().tools()})

	// Outside a run: the parent is the thread's stack.
	res, err := a.Spawn(t.Context(), agentloop.SpawnInput{ThreadID: "parent", ResourceID: "user-1", Instructions: childInstructions, Input: "Translate hello"})
	if err != nil || res.Output != "Bonjour" {
		t.Fatalf("Spawn: %v, %+v", err, res)
	}
	if _, err := a.Spawn(t.Context(), agentloop.SpawnInput{Input: "x"}); !errors.Is(err, agentloop.ErrNoThread) {
		t.Errorf("no thread: %v", err)
	}
	if _, err := a.Spawn(t.Context(), agentloop.SpawnInput{ThreadID: "parent"}); !errors.Is(err, layer.ErrInvalidArguments) {
		t.Errorf("no input: %v", err)
	}

	// From inside a tool: the parent is the tool's run.
	delegate := agentloop.NewContextTool("delegate", "", nil, func(ctx context.Context, run *agentloop.ToolContext, _ struct{}) (string, error) {
		r, err := run.Spawn(ctx, agentloop.SpawnInput{Instructions: childInstructions, Input: "Translate hello"})
		if err != nil {
			return "", err
		}
		return r.Output, nil
	})
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if strings.HasPrefix(r.System(), childInstructions) {
			return spawnPolicy(ctx, r)
		}
		if res := r.ToolResults(); len(res) > 0 {
			return agenttest.Text(res[0].Content), nil
		}
		return agenttest.Calls(agenttest.Call("delegate", "")), nil
	})
	for _, tc := range []struct {
		maxDepth int
		want     string
	}{
		{0, "Bonjour"},
		{-1, "spawn depth limit"}, // MaxDepth -1 forbids spawning, from code too
	} {
		b := mustAgent(t, agentloop.Config{Model: model, Store: store, Layers: layers, Tools: append(newCMS().tools(), delegate), MaxDepth: tc.maxDepth})
		res, err = b.Run(t.Context(), agentloop.RunInput{ThreadID: "parent", ResourceID: "user-1", Input: "go"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Output, tc.want) {
			t.Errorf("spawn from a tool with MaxDepth %d: %q, want %q", tc.maxDepth, res.Output, tc.want)
		}
	}
}

// TestSpawnFromCodeKeepsVars: a child spawned from code without its own
// instructions renders the parent's template with Config.Vars, as a
// child spawned inside a run does.
func TestSpawnFromCodeKeepsVars(t *testing.T) {
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Text(r.System()), nil
	})
	a := mustAgent(t, agentloop.Config{Model: model, Template: "You work for {{company}}.", Vars: map[string]any{"company": "Acme"}})
	res, err := a.Spawn(t.Context(), agentloop.SpawnInput{ThreadID: "t", Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "You work for Acme." {
		t.Errorf("child system prompt %q, want the template with Config.Vars", res.Output)
	}
}

// TestSpawnToolBadArguments: spawn_agent's arguments are checked like any
// tool's; a bad call goes back to the model and spawns nothing.
func TestSpawnToolBadArguments(t *testing.T) {
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(
			agenttest.Call(agentloop.SpawnToolName, `{}`),
			agenttest.Call(agentloop.SpawnToolName, `{"input":5}`),
			agenttest.Call(agentloop.SpawnToolName, `{"input":"x","extra":1}`),
			agenttest.Call(agentloop.SpawnToolName, `[1]`),
			agenttest.Call(agentloop.SpawnToolName, `{"input":""}`),
		)),
		agenttest.Reply(agenttest.Text("recovered")),
	)
	var runs []string
	a := mustAgent(t, agentloop.Config{Model: model, Observer: func(e agentloop.Event) {
		if e.Kind == agentloop.EventRunStart {
			runs = append(runs, e.ThreadID)
		}
	}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil || res.Output != "recovered" {
		t.Fatalf("Run: %v, %+v", err, res)
	}
	got := toolContents(res.Messages)
	wants := []string{
		"error: invalid tool arguments: spawn_agent: does not match the schema",
		"error: invalid tool arguments: spawn_agent: does not match the schema",
		"error: invalid tool arguments: spawn_agent: does not match the schema",
		"error: spawn_agent: invalid tool arguments: want a JSON object",
		"error: child agent failed: invalid tool arguments: spawn: empty input",
	}
	if len(got) != len(wants) {
		t.Fatalf("got %d tool results, want %d: %q", len(got), len(wants), got)
	}
	for i, w := range wants {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("result %d = %q, want prefix %q", i, got[i], w)
		}
	}
	if len(runs) != 1 {
		t.Errorf("runs started %v, want the parent's only", runs)
	}
}
