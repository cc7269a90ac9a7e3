package chainmemory_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/tools"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/chainmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/workingmemory"
)

// New in a langchaingo conversation chain: the prompt shows the
// layers' blocks, then the conversation so far.
func ExampleNew_conversationChain() {
	ctx := context.Background()
	profile := layer.Text(layer.Spec{ID: "profile"}, "<profile>Prefers short answers.</profile>")
	st, _ := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{profile}, Env: layer.Env{ThreadID: "t"}})
	_ = st.Init(ctx)
	defer st.Close(ctx)

	model := agenttest.New(agenttest.Reply(agenttest.Text("Hello Ada.")), agenttest.Reply(agenttest.Text("Ada.")))
	chain := chains.NewConversation(model, chainmemory.New(st, chainmemory.Config{}))
	for _, in := range []string{"I am Ada.", "Who am I?"} {
		out, err := chains.Run(ctx, chain, in)
		fmt.Println(out, err)
	}
	prompt := model.Requests()[1].LastUser()
	fmt.Println(prompt[strings.Index(prompt, "<profile>"):])
	// Output:
	// Hello Ada. <nil>
	// Ada. <nil>
	// <profile>Prefers short answers.</profile>
	//
	// Human: I am Ada.
	// AI: Hello Ada.
	// Human: Who am I?
	// AI:
}

// New and its Tools in a langchaingo agent executor: the
// conversational agent shows the memory, calls a layer's tool (masked,
// routed and audited as an Agent's), and the tool results of the turn
// reach the layers (with WithReturnIntermediateSteps, through
// chains.Call).
func ExampleNew_executor() {
	ctx := context.Background()
	scratchpad, _ := workingmemory.New(workingmemory.Config{})
	st, _ := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{scratchpad}, Env: layer.Env{ThreadID: "t"}, ValidateArgs: agentloop.ValidateArgs})
	_ = st.Init(ctx)
	defer st.Close(ctx)

	model := agenttest.New(
		agenttest.Reply(agenttest.Text("Thought: Do I need to use a tool? Yes\nAction: working_memory_update\nAction Input: {\"goal\": \"launch the About page\"}")),
		agenttest.Reply(agenttest.Text("Thought: Do I need to use a tool? No\nAI: Noted.")),
		agenttest.Reply(agenttest.Text("Thought: Do I need to use a tool? No\nAI: Your goal is to launch the About page.")),
	)
	mem := chainmemory.New(st, chainmemory.Config{})
	tls := append([]tools.Tool{upper{}}, mem.Tools()...)
	exec := agents.NewExecutor(agents.NewConversationalAgent(model, tls),
		agents.WithMemory(mem), agents.WithReturnIntermediateSteps())
	for _, in := range []string{"My goal: launch the About page.", "What is my goal?"} {
		out, err := chains.Call(ctx, exec, map[string]any{"input": in})
		fmt.Println(strings.TrimSpace(fmt.Sprint(out["output"])), err)
	}
	prompt := model.Requests()[2].LastUser()
	fmt.Println(strings.Contains(prompt, `"goal": "launch the About page"`), strings.Contains(prompt, "Human: My goal: launch the About page."))
	// Output:
	// Noted. <nil>
	// Your goal is to launch the About page. <nil>
	// true true
}
