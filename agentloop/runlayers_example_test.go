package agentloop_test

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// A run tool reads the run's layers, as Noetic's tools read ctx.memory:
// the scratchpad's state as a Go type (workingmemory.From and StateAs)
// and the key-value memory (kv.From), both bound to the run the call
// belongs to.
func ExampleToolContext_Stack() {
	type Plan struct {
		Goal string   `json:"goal"`
		Todo []string `json:"todo"`
	}
	nextStep := agentloop.NewContextTool("next_step", "Say what to do next.", nil,
		func(ctx context.Context, run *agentloop.ToolContext, _ struct{}) (string, error) {
			pad, err := workingmemory.From(run.Stack(), "")
			if err != nil {
				return "", err
			}
			plan, err := workingmemory.StateAs[Plan](pad)
			if err != nil {
				return "", err
			}
			mem, err := kv.From(run.Stack(), "")
			if err != nil {
				return "", err
			}
			owner, _, _ := kv.Get[string](mem, "owner")
			if len(plan.Todo) == 0 {
				return "nothing left for " + plan.Goal, nil
			}
			return fmt.Sprintf("%s: %s (ask %s)", plan.Goal, plan.Todo[0], owner), nil
		})
	pad, _ := workingmemory.New(workingmemory.Config{
		Schema:   `{"type":"object","properties":{"goal":{"type":"string"},"todo":{"type":"array","items":{"type":"string"}}}}`,
		Template: `{"goal":"launch","todo":["write the press release","book the venue"]}`,
	})
	facts, _ := kv.NewLayer(kv.LayerConfig{})
	setOwner := agentloop.NewContextTool("set_owner", "Record who owns the launch.", nil,
		func(ctx context.Context, run *agentloop.ToolContext, in struct{ Name string }) (string, error) {
			mem, err := kv.From(run.Stack(), "")
			if err != nil {
				return "", err
			}
			return "ok", kv.Set(mem, "owner", in.Name)
		})
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("set_owner", map[string]string{"Name": "Ada"}))),
		agenttest.Reply(agenttest.Calls(agenttest.Call("next_step", `{}`))),
		func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
			return agenttest.Text(r.ToolResults()[0].Content), nil
		},
	)
	agent, _ := agentloop.New(agentloop.Config{Model: model, Layers: []layer.Layer{pad, facts}, Tools: []agentloop.Tool{setOwner, nextStep}})
	res, err := agent.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: "what next?"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Output)
	// Output: launch: write the press release (ask Ada)
}
