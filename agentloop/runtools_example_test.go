package agentloop_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// A tool reaches the current run's memory through the ToolContext it is
// handed: here the key-value memory of the user's thread. Two users of
// one agent each see only their own entries.
func ExampleNewContextTool() {
	remember := agentloop.NewContextTool("remember", "Remember a fact about the user.", nil,
		func(ctx context.Context, run *agentloop.ToolContext, in struct{ Key, Value string }) (string, error) {
			mem, err := kv.From(run.Stack(), "")
			if err != nil {
				return "", err
			}
			return "remembered", kv.Set(mem, in.Key, in.Value)
		})
	facts, _ := kv.NewLayer(kv.LayerConfig{Render: func(mem *kv.Scope) string {
		keys, _ := mem.Keys()
		return "known: " + strings.Join(keys, ", ")
	}})
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if fact, ok := strings.CutPrefix(r.LastUser(), "my "); ok && len(r.ToolResults()) == 0 {
			k, v, _ := strings.Cut(fact, " is ")
			return agenttest.Calls(agenttest.Call("remember", map[string]string{"Key": k, "Value": v})), nil
		}
		_, known, _ := strings.Cut(r.System(), "known: ")
		known, _, _ = strings.Cut(known, "\n")
		return agenttest.Text("I know your " + known), nil
	})
	agent, _ := agentloop.New(agentloop.Config{Model: model, Layers: []layer.Layer{facts}, Tools: []agentloop.Tool{remember}, Store: storage.NewMemoryStore()})

	ctx := context.Background()
	_, _ = agent.Run(ctx, agentloop.RunInput{ThreadID: "ann", Input: "my city is Lyon"})
	_, _ = agent.Run(ctx, agentloop.RunInput{ThreadID: "bob", Input: "my pet is a cat"})
	for _, user := range []string{"ann", "bob"} {
		res, _ := agent.Run(ctx, agentloop.RunInput{ThreadID: user, Input: "what do you know?"})
		fmt.Println(user+":", res.Output)
	}
	// Output:
	// ann: I know your city
	// bob: I know your pet
}
