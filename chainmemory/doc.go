// Package chainmemory plugs memlayer's layers into langchaingo chains and
// agents.
//
// [New] adapts an initialised layer.Stack to langchaingo's schema.Memory:
// the chain's prompt shows the layers' blocks and the conversation, and
// each turn reaches the layers' Store. [ExportTools] and [LLMTools] offer
// the layers' functions as langchaingo tools and tool definitions;
// [Memory.Tools] offers them bound to the memory, masked, routed and
// audited as an agentloop.Agent's are.
//
//	st, _ := layer.NewStack(layer.StackConfig{Layers: layers, Env: layer.Env{ThreadID: "t1"}})
//	_ = st.Init(ctx)
//	defer st.Close(ctx)
//	chain := chains.NewConversation(llm, chainmemory.New(st, chainmemory.Config{}))
//	out, err := chains.Run(ctx, chain, "I am Ada.")
//
// The memory uses the agent's write path only: it masks what the layers
// keep (redact.Policy), routes the writes the layers propose
// (route.Router), and records each turn's memory operations in the
// thread's audit. It runs no agent loop.
package chainmemory
