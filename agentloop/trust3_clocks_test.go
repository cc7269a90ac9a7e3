package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// TestTrust316_ParallelMemorizeIsInCallOrder: several memorize calls in
// one step get their fact IDs in the order the model made the calls,
// whatever the scheduling, so the same inputs always give the same
// facts and the same next prompt.
func TestTrust316_ParallelMemorizeIsInCallOrder(t *testing.T) {
	facts := []string{
		"The user's espresso machine is a Gaggia from 2019.",
		"The user's bicycle has a red frame.",
		"The user's sister lives in Porto.",
		"The user plays tennis on Sundays.",
		"The user prefers tea in the afternoon.",
		"The user's cat is called Miso.",
	}
	var calls []llms.ToolCall
	for _, f := range facts {
		calls = append(calls, agenttest.Call(semanticmemory.DefaultID+"_memorize", fmt.Sprintf(`{"text":%q,"kind":"profile"}`, f)))
	}
	var prompts []string
	for run := range 20 {
		store := storage.NewMemoryStore()
		sem, err := semanticmemory.New(semanticmemory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		model := agenttest.New(agenttest.Reply(agenttest.Calls(calls...)), agenttest.Reply(agenttest.Text("Noted.")))
		a := mustAgent(t, agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{sem}, ToolConcurrency: len(facts)})
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", ResourceID: "u", Input: "Remember these things about me."}); err != nil {
			t.Fatal(err)
		}
		got := model.Requests()[1].ToolResults()
		var answers []string
		for _, r := range got {
			answers = append(answers, r.Content)
		}
		for i, r := range answers {
			if want := fmt.Sprintf("remembered fact f%d", i); r != want {
				t.Fatalf("run %d: call %d (%q) answered %q, want %q; all answers: %q", run, i, facts[i], r, want, answers)
			}
		}
		b, err := json.Marshal(model.Requests()[1].Messages)
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, string(b))
	}
	slices.Sort(prompts)
	if n := len(slices.Compact(prompts)); n != 1 {
		t.Errorf("the same inputs gave %d different second requests", n)
	}
}

// TestTrust317_ToolDefinitionsCountAgainstTheWindow: with many tools
// and a short window, no request passes ContextWindow − ResponseReserve
// once its tool definitions (the agent's and the layers') are counted by
// the same counter.
func TestTrust317_ToolDefinitionsCountAgainstTheWindow(t *testing.T) {
	const window, reserve = 6000, 500
	big := strings.Repeat("lorem ipsum dolor sit amet ", 120) // ~800 tokens
	var tools []agentloop.Tool
	for i := range 24 {
		tools = append(tools, agentloop.Tool{
			Name:        fmt.Sprintf("cms_tool_%02d", i),
			Description: strings.Repeat(fmt.Sprintf("Tool %d reads or changes pages, sections and menus of the site. ", i), 2),
			Parameters:  json.RawMessage(`{"type":"object","properties":{"id":{"type":"string","description":"The page ID."},"title":{"type":"string"}}}`),
			Call:        func(context.Context, json.RawMessage) (string, error) { return big, nil },
		})
	}
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	step := 0
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		step++
		if step%5 == 0 {
			return agenttest.Text("done"), nil
		}
		return agenttest.Calls(agenttest.Call(fmt.Sprintf("cms_tool_%02d", step%24), `{"id":"p1"}`)), nil
	})
	a := mustAgent(t, agentloop.Config{Model: model, Tools: tools, Layers: []layer.Layer{sem}, Store: storage.NewMemoryStore(),
		ContextWindow: window, ResponseReserve: reserve, Instructions: "You edit the site."})
	for _, in := range []string{"Edit page one", "Edit page two", "Edit page three"} {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", ResourceID: "u", Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := model.Requests()
	over, most := 0, 0
	for i, r := range reqs {
		n := 0
		for _, m := range r.Messages {
			n += prompt.CountMessage(prompt.Estimate, m)
		}
		defs := prompt.CountTools(prompt.Estimate, r.Options.Tools)
		if i == 0 && (defs < 1500 || len(r.Options.Tools) != 27) {
			t.Fatalf("the tool definitions count %d tokens (%d tools); the test needs many", defs, len(r.Options.Tools))
		}
		if n+defs > window-reserve {
			over++
			most = max(most, n+defs-(window-reserve))
		}
	}
	if over > 0 {
		t.Errorf("%d of %d requests exceeded ContextWindow − ResponseReserve (%d), the largest by %d tokens", over, len(reqs), window-reserve, most)
	}
}

// TestTrust317_TemplateTextCountsAgainstTheWindow: a template's own text
// (beyond the instructions) is a fixed cost of every request too: with a
// long template, a layer that fills its budget and large tool results,
// no request exceeds ContextWindow − ResponseReserve.
func TestTrust317_TemplateTextCountsAgainstTheWindow(t *testing.T) {
	const window, reserve = 3000, 500
	big := strings.Repeat("lorem ipsum dolor sit amet ", 60) // ~400 tokens
	greedy := layer.Func(layer.Spec{ID: "greedy", Slot: 100, Budget: layer.Budget{Max: 400}}, func(ctx context.Context, q layer.Query) ([]layer.Item, error) {
		return []layer.Item{{Text: strings.Repeat("word ", q.Budget*4/5)}}, nil
	})
	step := 0
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		step++
		if step%5 == 0 {
			return agenttest.Text("done"), nil
		}
		return agenttest.Calls(agenttest.Call("fetch", `{}`)), nil
	})
	tmpl := "{{instructions}}\n" + strings.Repeat("Static template text that is not the instructions. ", 140) + "\n{{{layers}}}"
	fetch := agentloop.Tool{Name: "fetch", Call: func(context.Context, json.RawMessage) (string, error) { return big, nil }}
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{fetch}, Layers: []layer.Layer{greedy}, Store: storage.NewMemoryStore(),
		ContextWindow: window, ResponseReserve: reserve, Instructions: "You edit the site.", Template: tmpl})
	for _, in := range []string{"Fetch one", "Fetch two"} {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := model.Requests()
	if len(reqs) < 10 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, r := range reqs {
		n := prompt.CountTools(prompt.Estimate, r.Options.Tools)
		for _, m := range r.Messages {
			n += prompt.CountMessage(prompt.Estimate, m)
		}
		if n > window-reserve {
			t.Errorf("request %d counts %d tokens with its tools, more than ContextWindow − ResponseReserve (%d)", i, n, window-reserve)
		}
	}
}
