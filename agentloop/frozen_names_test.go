package agentloop_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// writeNamesStore makes -write-names-store write the frozen store of
// the names of memlayer before the naming scheme (see
// namesStorePath). It is run once, by the build whose names the file
// keeps; a file of old names is never rewritten.
var writeNamesStore = flag.Bool("write-names-store", false, "write testdata/names-v0.sqlite with this build's layer IDs and tool names")

// namesStorePath is the frozen store written by memlayer before the
// naming scheme (layer IDs working-memory, kv-memory, entities,
// episodic-memory, semantic, history-summary; tools
// working-memory_update, episodic-memory_read, semantic_memorize), by
// TestWriteNamesStore: thread namesThread of resource namesResource,
// with every built-in layer holding something and a child's thread.
var namesStorePath = filepath.Join("testdata", "names-v0.sqlite")

// The frozen store's run.
const (
	namesThread   = "names-thread"
	namesResource = "names-user"
	namesChild    = "You write one-line page blurbs."
)

// namesLayers returns every built-in layer, as the frozen store's agent
// ran them: a thread-scoped scratchpad, entity and episodic memory, and
// resource-scoped semantic and key-value memory.
func namesLayers(t testing.TB) (layers []layer.Layer, facts *kv.Layer) {
	t.Helper()
	wm, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ent, err := entitymemory.New(entitymemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	epi, err := episodicmemory.New(episodicmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := semanticmemory.New(semanticmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	facts, err = kv.NewLayer(kv.LayerConfig{
		Spec:      layer.Spec{Scope: layer.ScopeResource},
		ChildName: func(layer.Env) string { return "child" },
		Render: func(mem *kv.Scope) string {
			plan, _, _ := kv.Get[string](mem, "plan")
			return fmt.Sprintf("scope %s: plan=%s", mem.Path(), plan)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []layer.Layer{wm, ent, epi, sem, facts}, facts
}

// namesAgent returns an agent with namesLayers on store, the history
// windowed to one turn and summarized at once, and the page tool.
func namesAgent(t testing.TB, store storage.Store, model llms.Model, layers []layer.Layer) *agentloop.Agent {
	t.Helper()
	createPage := agentloop.Tool{
		Name:        "createPage",
		Description: "Create a page.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}`),
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct{ Title string }
			if err := json.Unmarshal(args, &a); err != nil {
				return "", err
			}
			return fmt.Sprintf(`{"id":"page_101","title":%q,"sections":["hero","team","contact"]}`, a.Title), nil
		},
	}
	agent, err := agentloop.New(agentloop.Config{
		Model:        model,
		Instructions: "You edit a CMS.",
		Layers:       layers,
		Store:        store,
		Tools:        []agentloop.Tool{createPage},
		MaxDepth:     1,
		History:      history.Config{MaxTurns: 1, SummarizeAfter: 1, Summarizer: &history.DeterministicSummarizer{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return agent
}

// episodeRef finds the reference of the createPage call in a system
// prompt's episodic block.
var episodeRef = regexp.MustCompile(`\[([^\]\s]+)\][^\n]*createPage`)

// namesPolicy is the frozen store's script; tool names the built-in
// tools: (layer ID, function) to wire name.
func namesPolicy(tool func(id, fn string) string) agenttest.Step {
	return func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		res := r.ToolResults()
		if strings.HasPrefix(r.System(), namesChild) {
			if len(res) == 0 {
				return agenttest.Calls(agenttest.Call(tool(workingmemory.DefaultID, "update"), `{"blurb":"About us, in one line"}`)), nil
			}
			return agenttest.Text("About: who we are."), nil
		}
		if len(res) > 0 {
			return agenttest.Text("Done: " + res[0].Content), nil
		}
		switch user := r.LastUser(); {
		case strings.HasPrefix(user, "Create"):
			return agenttest.Calls(
				agenttest.Call("createPage", `{"title":"About"}`),
				agenttest.Call(tool(workingmemory.DefaultID, "update"), `{"goal":"About page","status":"created"}`),
				agenttest.Call(tool(semanticmemory.DefaultID, "memorize"), `{"text":"The user prefers short pages","kind":"preference"}`),
			), nil
		case strings.HasPrefix(user, "Read"):
			m := episodeRef.FindStringSubmatch(r.System())
			if m == nil {
				return agenttest.Text("no episode of createPage in the prompt"), nil
			}
			return agenttest.Calls(agenttest.Call(tool(episodicmemory.DefaultID, "read"), map[string]string{"ref": m[1]})), nil
		case strings.HasPrefix(user, "Delegate"):
			return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, map[string]string{"instructions": namesChild, "input": "Write the About page's blurb."})), nil
		}
		return agenttest.Text("Noted."), nil
	}
}

// namesTurns are the frozen store's user turns.
var namesTurns = []string{
	"Create an About page and remember that I like short pages.",
	"Read the createPage result again.",
	"Delegate the About page's blurb.",
	"Thanks.",
}

// TestWriteNamesStore writes the frozen store of the names before the
// naming scheme, when run with -write-names-store by that build: a real
// agent with every built-in layer on a SQLite file, through turns that
// make each layer store something (the scratchpad's update tool, an
// entity, episodes and the read tool, a memorized fact, key-value
// entries, a history summary) and a spawned child.
func TestWriteNamesStore(t *testing.T) {
	if !*writeNamesStore {
		t.Skip("run with -write-names-store to write " + namesStorePath)
	}
	if _, err := os.Stat(namesStorePath); err == nil {
		t.Fatalf("%s exists: a frozen store is never rewritten", namesStorePath)
	}
	ctx := t.Context()
	store, err := sqlite.Open(ctx, sqlite.Config{Path: namesStorePath})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	layers, facts := namesLayers(t)
	account, err := facts.Open(ctx, layer.Env{ThreadID: namesThread, ResourceID: namesResource, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Set(account.Memory(), "plan", "pro"); err != nil {
		t.Fatal(err)
	}
	if err := account.Close(ctx); err != nil {
		t.Fatal(err)
	}
	model := agenttest.NewFunc(namesPolicy(layer.ToolName))
	agent := namesAgent(t, store, model, layers)
	for _, input := range namesTurns {
		res, err := agent.Run(ctx, agentloop.RunInput{ThreadID: namesThread, ResourceID: namesResource, Input: input})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s → %s", input, res.Output)
	}
	reqs := model.Requests()
	t.Logf("last system prompt:\n%s", reqs[len(reqs)-1].System())
}
