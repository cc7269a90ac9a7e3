package agentloop_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
	"github.com/memlayer/memlayer/thread"
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

// The names of memlayer before the naming scheme, as the frozen store
// holds them. They are written out here, not taken from the packages'
// constants, because they are what the frozen store was written with.
const (
	oldUpdate   = "working-memory_update"
	oldRead     = "episodic-memory_read"
	oldMemorize = "semantic_memorize"
)

// openNamesStore opens a copy of the frozen store of the names before the
// naming scheme.
func openNamesStore(t *testing.T) storage.Store {
	t.Helper()
	data, err := os.ReadFile(namesStorePath)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "names.sqlite")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// renamedPolicy is the script of a run on the frozen store after the
// rename: the model calls the tools by their old names, then delegates.
func renamedPolicy(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	res := r.ToolResults()
	if strings.HasPrefix(r.System(), namesChild) {
		return agenttest.Text("child done"), nil
	}
	if len(res) > 0 {
		var b strings.Builder
		for _, x := range res {
			fmt.Fprintf(&b, "%s=%s\n", x.Name, x.Content)
		}
		return agenttest.Text(b.String()), nil
	}
	switch user := r.LastUser(); {
	case strings.HasPrefix(user, "Old names"):
		calls := []llms.ToolCall{
			agenttest.Call(oldUpdate, `{"status":"renamed"}`),
			agenttest.Call(oldMemorize, `{"text":"The user reads French","kind":"preference"}`),
			agenttest.Call(oldRead, `{"ref":"call_0_0"}`),
		}
		for i := range calls {
			calls[i].ID = fmt.Sprintf("renamed_%d", i) // not an ID of the frozen store's calls
		}
		return agenttest.Calls(calls...), nil
	case strings.HasPrefix(user, "Delegate"):
		return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, map[string]string{"instructions": namesChild, "input": "Write the Team page's blurb."})), nil
	}
	return agenttest.Text("Noted."), nil
}

// A store written before the naming scheme (layer IDs such as
// "working-memory", "entities" and "semantic", tools such as
// "working-memory_update") loads in this build with nothing lost: every
// layer's state is in the prompt, under the new tags, and in the
// layers' APIs; the old tool names still reach the tools; a child
// inherits the memory; and the stored data stays under the old IDs, so
// that nothing is copied.
func TestFrozenNamesStoreLoads(t *testing.T) {
	ctx := t.Context()
	store := openNamesStore(t)
	layers, facts := namesLayers(t)
	model := agenttest.NewFunc(renamedPolicy)
	agent := namesAgent(t, store, model, layers)
	run := func(input string) string {
		t.Helper()
		res, err := agent.Run(ctx, agentloop.RunInput{ThreadID: namesThread, ResourceID: namesResource, Input: input})
		if err != nil {
			t.Fatalf("%s: %v", input, err)
		}
		return res.Output
	}

	out := run("Old names, please.")
	first := model.Requests()[0]
	sys := first.System()
	for _, want := range []string{
		"<" + workingmemory.DefaultID + ">", `"goal": "About page"`,
		"<" + kv.DefaultLayerID + ">", "plan=pro",
		"<" + entitymemory.DefaultID + ">", `"About" (page_101)`,
		"<" + history.SummaryLayerID + ">", "createPage (call call_0_0) → page_101",
		"<" + episodicmemory.DefaultID + ">", "[call_0_0] step 0 createPage", "[call_4_0] step 0 spawn_agent",
		"<" + semanticmemory.DefaultID + ">", "The user prefers short pages",
	} {
		if !strings.Contains(sys, want) {
			t.Errorf("the first prompt on the frozen store lacks %q:\n%s", want, sys)
		}
	}
	for _, name := range []string{layer.ToolName(workingmemory.DefaultID, "update"), layer.ToolName(episodicmemory.DefaultID, "read"), layer.ToolName(semanticmemory.DefaultID, "memorize")} {
		if !first.HasTool(name) {
			t.Errorf("tool %s not offered; offered: %v", name, first.ToolNames())
		}
	}
	for _, old := range []string{oldUpdate, oldRead, oldMemorize} {
		if first.HasTool(old) {
			t.Errorf("deprecated name %s offered to the model", old)
		}
	}
	// The old names reached the tools.
	for _, want := range []string{oldUpdate + "=Working memory updated.", oldMemorize + "=remembered fact", oldRead + `={"id":"page_101"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the calls by old names answered\n%s\nwant %q", out, want)
		}
	}

	run("Delegate the Team page's blurb.")
	var child, last string
	for _, r := range model.Requests() {
		if strings.HasPrefix(r.System(), namesChild) && child == "" {
			child = r.System()
		}
		if !strings.HasPrefix(r.System(), namesChild) {
			last = r.System()
		}
	}
	for _, want := range []string{"plan=pro", "The user prefers short pages", "The user reads French"} {
		if !strings.Contains(child, want) {
			t.Errorf("the child's prompt lacks %q:\n%s", want, child)
		}
	}
	for _, want := range []string{`"status": "renamed"`, `"goal": "About page"`, "The user reads French", `"About" (page_101)`} {
		if !strings.Contains(last, want) {
			t.Errorf("the last prompt lacks %q:\n%s", want, last)
		}
	}

	// The layers' APIs read the same state.
	env := layer.Env{ThreadID: namesThread, ResourceID: namesResource, Store: store}
	bind := func(l layer.Layer) layer.Layer {
		t.Helper()
		b, err := l.(layer.Initializer).Init(ctx, env)
		if err != nil {
			t.Fatalf("Init %s: %v", l.Spec().ID, err)
		}
		return b
	}
	fresh, _ := namesLayers(t)
	state, _ := json.Marshal(bind(fresh[0]).(*workingmemory.Layer).State())
	if !strings.Contains(string(state), `"goal":"About page"`) || !strings.Contains(string(state), `"status":"renamed"`) {
		t.Errorf("working memory state %s", state)
	}
	if ents := bind(fresh[1]).(*entitymemory.Layer).Entities(); !slices.ContainsFunc(ents, func(e entitymemory.Entity) bool { return e.ID == "page_101" }) {
		t.Errorf("entities %+v lack page_101", ents)
	}
	if e, _, err := bind(fresh[2]).(*episodicmemory.Layer).Read(ctx, "call_0_0"); err != nil || !strings.Contains(e.Result, "page_101") {
		t.Errorf("episodic Read(call_0_0) = %+v, %v", e, err)
	}
	fs, err := bind(fresh[3]).(*semanticmemory.Layer).Facts(ctx)
	for _, want := range []string{"The user prefers short pages", "The user reads French"} {
		if err != nil || !slices.ContainsFunc(fs, func(f semanticmemory.Fact) bool { return f.Text == want }) {
			t.Errorf("semantic facts %+v, %v; want %q", fs, err, want)
		}
	}
	account, err := facts.Open(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if plan, _, _ := kv.Get[string](account.Memory(), "plan"); plan != "pro" {
		t.Errorf("kv plan = %q, want pro", plan)
	}

	// The checkpoint keeps the layers' parts under their old IDs.
	it, err := store.Get(ctx, storage.ThreadKey(namesThread, thread.HeadName))
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ Layers map[string]string }
	if err := json.Unmarshal(it.Value, &head); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(head.Layers)), []string{entitymemory.DefaultStorageID, episodicmemory.DefaultStorageID, workingmemory.DefaultStorageID}; !slices.Equal(got, want) {
		t.Errorf("the checkpoint names the layers %v, want %v", got, want)
	}

	// The agent's API gives the checkpoint's parts by layer ID.
	cp, err := agent.LoadCheckpoint(ctx, namesThread)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(cp.Layers.Layers)), []string{entitymemory.DefaultID, episodicmemory.DefaultID, workingmemory.DefaultID}; !slices.Equal(got, want) {
		t.Errorf("LoadCheckpoint gives the layers %v, want %v", got, want)
	}

	// Nothing was copied: the data stays under the old IDs.
	keys, err := store.List(ctx, "layers/")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range keys {
		seen[strings.SplitN(k, "/", 3)[1]] = true
	}
	for _, id := range []string{workingmemory.DefaultID, kv.DefaultLayerID, entitymemory.DefaultID, episodicmemory.DefaultID, semanticmemory.DefaultID} {
		if seen[id] {
			t.Errorf("records under the new ID %s: %v", id, keys)
		}
	}
	for _, id := range []string{workingmemory.DefaultStorageID, kv.DefaultStorageID, entitymemory.DefaultStorageID, episodicmemory.DefaultStorageID, semanticmemory.DefaultStorageID} {
		if !seen[id] {
			t.Errorf("no records under the old ID %s: %v", id, keys)
		}
	}
}

// The stored conversation's tool calls by their old names still pair
// with their results, after a run on the frozen store added calls by
// the old names too.
func TestFrozenNamesHistoryPairs(t *testing.T) {
	store := openNamesStore(t)
	layers, _ := namesLayers(t)
	agent := namesAgent(t, store, agenttest.NewFunc(renamedPolicy), layers)
	if _, err := agent.Run(t.Context(), agentloop.RunInput{ThreadID: namesThread, ResourceID: namesResource, Input: "Old names, please."}); err != nil {
		t.Fatal(err)
	}
	page, err := thread.Catalog{Store: store}.Messages(t.Context(), namesThread, thread.MessageQuery{Limit: thread.MaxMessageLimit})
	if err != nil {
		t.Fatal(err)
	}
	calls, results := map[string]string{}, map[string]string{}
	for _, m := range page.Messages {
		for _, c := range m.ToolCalls {
			calls[c.ID] = c.Name
		}
		for _, r := range m.ToolResults {
			results[r.CallID] = r.Name
		}
	}
	for _, old := range []string{oldUpdate, oldRead, oldMemorize} {
		if n := len(slices.DeleteFunc(slices.Collect(maps.Values(calls)), func(name string) bool { return name != old })); n != 2 {
			t.Errorf("the thread holds %d calls of %s, want 2 (frozen and new): %v", n, old, calls)
		}
	}
	for id, name := range calls {
		if results[id] != name {
			t.Errorf("call %s of %s answered by %q", id, name, results[id])
		}
	}
}
