package chainmemory_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/schema"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/chainmemory"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// adapterEnv is the env of the adapter tests' stacks: thread t1 of
// resource u on store.
func adapterEnv(store storage.Store) layer.Env {
	return layer.Env{ThreadID: "t1", ResourceID: "u", Store: store}
}

// TestMemory98_AdapterAuditsAndKeepsProposals: the langchaingo Memory
// keeps what the layers' Proposers propose after each SaveContext, routed
// and redacted as an Agent keeps them, and with MemoryConfig.Audit
// commits each turn's memory operations to the thread's audit: the
// recalls of the turn's LoadMemoryVariables, the layer tools the
// executor's steps show succeeding (a failed call is not a write), the
// entities and episodes the layers' Store kept, the routes, and the
// redactions. Without a thread the commit fails, and SaveContext says
// so after the turn was stored.
func TestMemory98_AdapterAuditsAndKeepsProposals(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	d := &looptest.Distiller{Propose: func(layer.Turn) []layer.Write {
		return []layer.Write{
			{Kind: "preference", Text: "The user prefers oolong; mail them at tea.lover@example.com."},
			{Kind: "color", Text: "green", Importance: 0.05},
		}
	}}
	st := looptest.NewInitStackOn(t, adapterEnv(store), append(looptest.GateLayers(t), d)...)
	log := audit.New(audit.Config{Store: store})
	mem := chainmemory.New(st, chainmemory.Config{Audit: log, ThreadID: "t1"})
	call := func(name, args string) string {
		for _, tool := range chainmemory.ExportTools(st) {
			if tool.Name() == name {
				out, err := tool.Call(ctx, args)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
		}
		t.Fatalf("no exported tool %s", name)
		return ""
	}

	in := map[string]any{"input": "I live in Lisbon; open the pricing page."}
	if _, err := mem.LoadMemoryVariables(ctx, in); err != nil {
		t.Fatal(err)
	}
	memorize := `{"text":"The user lives in Lisbon.","kind":"profile"}`
	steps := []schema.AgentStep{
		{Action: schema.AgentAction{Tool: "semantic_memory_memorize", ToolInput: memorize, ToolID: "c1"}, Observation: call("semantic_memory_memorize", memorize)},
		{Action: schema.AgentAction{Tool: "open_page", ToolInput: `{}`, ToolID: "c2"}, Observation: `{"id":"page_9","title":"Pricing"}`},
		{Action: schema.AgentAction{Tool: "open_page", ToolInput: `{}`, ToolID: "c4"}, Observation: `{"id":"page_10","title":"Blog"}`},
		{Action: schema.AgentAction{Tool: "semantic_memory_forget", ToolInput: `{"id":"f404"}`, ToolID: "c3"}, Observation: call("semantic_memory_forget", `{"id":"f404"}`)},
	}
	if err := mem.SaveContext(ctx, in, map[string]any{"output": "Done.", "intermediateSteps": steps}); err != nil {
		t.Fatal(err)
	}

	turns, err := log.Turns(ctx, "t1")
	if err != nil || len(turns) != 1 {
		t.Fatalf("audit turns %d, %v; want 1", len(turns), err)
	}
	has := func(events []audit.Entry, what string, f func(audit.Entry) bool) {
		t.Helper()
		if !slices.ContainsFunc(events, f) {
			t.Errorf("the audit has no %s: %+v", what, events)
		}
	}
	ev := turns[0].Entries
	has(ev, "memorize call", func(e audit.Entry) bool {
		return e.Op == audit.OpWrite && e.Layer == "semantic_memory" && e.Kind == "profile" && e.Text == "The user lives in Lisbon." && e.Source == "by=model tool=semantic_memory_memorize"
	})
	has(ev, "count of extracted entities", func(e audit.Entry) bool { return e.Op == audit.OpWrite && e.Kind == "extracted" && e.Count > 0 })
	has(ev, "count of episodes", func(e audit.Entry) bool { return e.Op == audit.OpWrite && e.Kind == "episode" && e.Count > 0 })
	has(ev, "eviction", func(e audit.Entry) bool { return e.Op == audit.OpEvict && e.Count > 0 })
	for _, e := range ev {
		if e.Op == audit.OpForget {
			t.Errorf("the failed forget is audited: %+v", e)
		}
	}

	// A turn without tool calls: the distiller proposes, and the
	// Memory routes, masks and keeps what it proposes.
	in = map[string]any{"input": "I like oolong; my address is tea.lover@example.com."}
	if err := mem.SaveContext(ctx, in, map[string]any{"output": "Noted."}); err != nil {
		t.Fatal(err)
	}
	turns, err = log.Turns(ctx, "t1")
	if err != nil || len(turns) != 2 {
		t.Fatalf("audit turns %d, %v; want 2", len(turns), err)
	}
	ev = turns[1].Entries
	has(ev, "route of the proposed preference", func(e audit.Entry) bool {
		return e.Op == audit.OpRoute && e.Kind == "preference" && e.Layer == "semantic_memory" && !e.Refused && e.Source == "by=layer:distiller step=1"
	})
	has(ev, "write of the proposed preference", func(e audit.Entry) bool {
		return e.Op == audit.OpWrite && e.Kind == "preference" && e.Layer == "semantic_memory" && e.Key != ""
	})
	has(ev, "refused route of an unimportant write", func(e audit.Entry) bool { return e.Op == audit.OpRoute && e.Kind == "color" && e.Refused })
	has(ev, "redaction of the e-mail address", func(e audit.Entry) bool { return e.Op == audit.OpRedact && e.Kind == "email" && e.Count > 0 })
	for _, e := range ev {
		if strings.Contains(e.Text, "tea.lover@example.com") {
			t.Errorf("the audit keeps the e-mail address: %+v", e)
		}
	}

	// The proposed preference was kept: the next turn recalls it, and
	// that turn's audit records the recall.
	in = map[string]any{"input": "Which tea do I prefer?"}
	vars, err := mem.LoadMemoryVariables(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := vars["history"].(string); !strings.Contains(s, "prefers oolong") || !strings.Contains(s, "[redacted email]") {
		t.Errorf("the memory does not show the proposed preference, masked:\n%s", s)
	}
	if err := mem.SaveContext(ctx, in, map[string]any{"output": "Oolong."}); err != nil {
		t.Fatal(err)
	}
	turns, err = log.Turns(ctx, "t1")
	if err != nil || len(turns) != 3 {
		t.Fatalf("audit turns %d, %v; want 3", len(turns), err)
	}
	has(turns[2].Entries, "recall of the semantic memory", func(e audit.Entry) bool {
		return e.Op == audit.OpRecall && e.Layer == "semantic_memory" && e.Tokens > 0 && e.Step == 2
	})

	// Without a thread, the commit fails after the turn was stored.
	bad := chainmemory.New(st, chainmemory.Config{Audit: log})
	in = map[string]any{"input": "Remember the ferry to Cacilhas."}
	err = bad.SaveContext(ctx, in, map[string]any{"output": "Noted the ferry."})
	if !errors.Is(err, audit.ErrNoThread) {
		t.Errorf("SaveContext without a thread: %v, want audit.ErrNoThread", err)
	}
	vars, err = mem.LoadMemoryVariables(ctx, map[string]any{"input": "ferry"})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := vars["history"].(string); !strings.Contains(s, "Noted the ferry.") {
		t.Errorf("the turn whose audit failed was not stored:\n%s", s)
	}
}

// TestMemory98_AdapterWithoutAudit: with no MemoryConfig.Audit nothing
// is committed, and proposals are still kept.
func TestMemory98_AdapterWithoutAudit(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	d := &looptest.Distiller{Propose: func(layer.Turn) []layer.Write {
		return []layer.Write{{Kind: "preference", Text: "The user prefers green tea."}}
	}}
	st := looptest.NewInitStackOn(t, adapterEnv(store), append(looptest.GateLayers(t), d)...)
	mem := chainmemory.New(st, chainmemory.Config{})
	if err := mem.SaveContext(ctx, map[string]any{"input": "Hi"}, map[string]any{"output": "Hello."}); err != nil {
		t.Fatal(err)
	}
	vars, err := mem.LoadMemoryVariables(ctx, map[string]any{"input": "Which tea do I prefer?"})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := vars["history"].(string); !strings.Contains(s, "prefers green tea") {
		t.Errorf("the proposal was not kept:\n%s", s)
	}
	if turns, err := audit.New(audit.Config{Store: store}).Turns(ctx, "t1"); err != nil || len(turns) != 0 {
		t.Errorf("audit turns %d, %v; want none", len(turns), err)
	}
}

// TestMemory99_AdapterToolsActAsAnAgents: the tools of Memory.Tools act
// as an Agent's: memorize is routed by kind (a plan goes to the
// scratchpad, a preference to semantic memory), arguments are masked
// before they are kept, and each call is audited once, as it runs, not
// again from the executor's steps; a call the tool refuses writes
// nothing.
func TestMemory99_AdapterToolsActAsAnAgents(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	st := looptest.NewInitStackOn(t, adapterEnv(store), looptest.GateLayers(t)...)
	log := audit.New(audit.Config{Store: store})
	mem := chainmemory.New(st, chainmemory.Config{Audit: log, ThreadID: "t1"})
	bound := map[string]func(string) string{}
	for _, tool := range mem.Tools() {
		bound[tool.Name()] = func(args string) string {
			out, err := tool.Call(ctx, args)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	var steps []schema.AgentStep
	call := func(name, args string) string {
		out := bound[name](args)
		steps = append(steps, schema.AgentStep{Action: schema.AgentAction{Tool: name, ToolInput: args, ToolID: fmt.Sprintf("c%d", len(steps))}, Observation: out})
		return out
	}
	in := map[string]any{"input": "Plan the launch; I like oolong, write to tea.lover@example.com."}
	if _, err := mem.LoadMemoryVariables(ctx, in); err != nil {
		t.Fatal(err)
	}
	if out := call("semantic_memory_memorize", `{"text":"Ask which kettle the user has.","kind":"plan"}`); !strings.Contains(out, "scratchpad") {
		t.Errorf("a plan was not kept on the scratchpad: %s", out)
	}
	if out := call("semantic_memory_memorize", `{"text":"The user likes oolong; mail tea.lover@example.com.","kind":"preference"}`); !strings.HasPrefix(out, "remembered fact ") {
		t.Errorf("a preference was not remembered: %s", out)
	}
	if out := call("semantic_memory_memorize", `{"text":"green","kind":"color","importance":0.05}`); !strings.HasPrefix(out, "error: ") {
		t.Errorf("an unimportant write was not refused: %s", out)
	}
	if out := call("semantic_memory_memorize", `{"kind":"fact"}`); !strings.HasPrefix(out, "error: ") {
		t.Errorf("a call without text was not refused: %s", out)
	}
	if err := mem.SaveContext(ctx, in, map[string]any{"output": "Done.", "intermediateSteps": steps}); err != nil {
		t.Fatal(err)
	}

	vars, err := mem.LoadMemoryVariables(ctx, map[string]any{"input": "Which tea do I like? And the kettle?"})
	if err != nil {
		t.Fatal(err)
	}
	text, _ := vars["history"].(string)
	if !strings.Contains(text, "likes oolong") || !strings.Contains(text, "which kettle") {
		t.Errorf("the memory lacks the preference or the plan:\n%s", text)
	}
	keys, err := store.List(ctx, "")
	if err != nil || len(keys) == 0 {
		t.Fatalf("store keys %v, %v", keys, err)
	}
	for _, key := range keys {
		v, err := store.Get(ctx, key)
		if err == nil && strings.Contains(string(v.Value), "tea.lover@example.com") {
			t.Errorf("store key %s holds the e-mail address", key)
		}
	}
	turns, err := log.Turns(ctx, "t1")
	if err != nil || len(turns) != 1 {
		t.Fatalf("audit turns %d, %v; want 1", len(turns), err)
	}
	count := func(f func(audit.Entry) bool) int {
		n := 0
		for _, e := range turns[0].Entries {
			if f(e) {
				n++
			}
		}
		return n
	}
	if n := count(func(e audit.Entry) bool {
		return e.Op == audit.OpRoute && e.Kind == "plan" && e.Layer == "working_memory"
	}); n != 1 {
		t.Errorf("%d routes of the plan to the scratchpad, want 1", n)
	}
	if n := count(func(e audit.Entry) bool {
		return e.Op == audit.OpWrite && e.Kind == "preference" && e.Layer == "semantic_memory" && e.Key != ""
	}); n != 1 {
		t.Errorf("%d writes of the preference, want 1 (audited as it ran, not again from the steps)", n)
	}
	if n := count(func(e audit.Entry) bool { return e.Op == audit.OpRoute && e.Kind == "color" && e.Refused }); n != 1 {
		t.Errorf("%d refused routes of the unimportant write, want 1", n)
	}
	if n := count(func(e audit.Entry) bool { return e.Op == audit.OpRedact && e.Kind == "email" }); n == 0 {
		t.Error("no redaction is audited")
	}
	if n := count(func(e audit.Entry) bool { return e.Op == audit.OpWrite && e.Layer == "semantic_memory" && e.Key == "" }); n != 0 {
		t.Errorf("%d unrouted writes read from the executor's steps", n)
	}
}
