package agentloop_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// collect returns an Observer that keeps every event, and the events.
func collect() (func(agentloop.Event), func() []agentloop.Event) {
	var mu sync.Mutex
	var evs []agentloop.Event
	return func(e agentloop.Event) {
			mu.Lock()
			evs = append(evs, e)
			mu.Unlock()
		}, func() []agentloop.Event {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(evs)
		}
}

// TestOperate10_HookEventsCarryTheStep: a layer hook's event names the
// step it ran in (every one used to say step 0).
func TestOperate10_HookEventsCarryTheStep(t *testing.T) {
	obs, events := collect()
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("noop", `{}`))),
		agenttest.Reply(agenttest.Calls(agenttest.Call("noop", `{}`))),
		agenttest.Reply(agenttest.Text("done")),
	)
	a, err := agentloop.New(agentloop.Config{
		Model:    model,
		Layers:   []layer.Layer{layer.Text(layer.Spec{ID: "rules"}, "Be brief.")},
		Tools:    []agentloop.Tool{agentloop.NewTool("noop", "does nothing", nil, func(context.Context, struct{}) (string, error) { return "ok", nil })},
		Store:    storage.NewMemoryStore(),
		Observer: obs,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t1", Input: "go"}); err != nil {
		t.Fatal(err)
	}
	var steps []int
	for _, e := range events() {
		if e.Kind == agentloop.EventLayerHook && e.Layer == "rules" && e.Hook == "recall" {
			steps = append(steps, e.Step)
		}
	}
	if want := []int{0, 1, 2}; !slices.Equal(steps, want) {
		t.Errorf("recall events of steps %v, want %v", steps, want)
	}
}

// TestOperate11_PromptEventIsOptIn: with ObservePrompts the Observer gets
// the exact request of each model call, system prompt first; without it,
// no prompt reaches the Observer.
func TestOperate11_PromptEventIsOptIn(t *testing.T) {
	for _, on := range []bool{false, true} {
		obs, events := collect()
		model := agenttest.New(agenttest.Reply(agenttest.Text("hello")))
		a, err := agentloop.New(agentloop.Config{
			Model:          model,
			Instructions:   "You are terse.",
			Layers:         []layer.Layer{layer.Text(layer.Spec{ID: "rules"}, "Never share jane@example.com.")},
			Store:          storage.NewMemoryStore(),
			Observer:       obs,
			ObservePrompts: on,
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t1", Input: "hi there"}); err != nil {
			t.Fatal(err)
		}
		var prompts []agentloop.Event
		for _, e := range events() {
			if e.Request != nil || e.Kind == agentloop.EventPrompt {
				prompts = append(prompts, e)
			}
		}
		if !on {
			if len(prompts) != 0 {
				t.Errorf("ObservePrompts off: %d prompt events", len(prompts))
			}
			continue
		}
		if len(prompts) != 1 {
			t.Fatalf("ObservePrompts on: %d prompt events, want 1", len(prompts))
		}
		req := prompts[0].Request
		sent := model.Requests()[0]
		if len(req) != len(sent.Messages) || req[0].Role != llms.ChatMessageTypeSystem {
			t.Fatalf("event request has %d messages (first %s), the model got %d", len(req), req[0].Role, len(sent.Messages))
		}
		sys := req[0].Parts[0].(llms.TextContent).Text
		if !strings.Contains(sys, "You are terse.") || !strings.Contains(sys, "jane@example.com") || sys != sent.System() {
			t.Errorf("event system prompt:\n%s\nmodel got:\n%s", sys, sent.System())
		}
	}
}
