// Package memlayer is a library of memory layers for LLM agents built on
// langchaingo.
//
// An agent gets memory by composing layers and running them in the loop:
//
//	notes, _ := workingmemory.New(workingmemory.Config{Scope: layer.ScopeResource})
//	entities, _ := entitymemory.New(entitymemory.Config{})
//	agent, err := agentloop.New(agentloop.Config{
//		Model:  model, // any langchaingo llms.Model
//		Layers: []layer.Layer{notes, entities},
//		Store:  store, // storage.NewMemoryStore(), sqlite.Open or redis.New
//	})
//	res, err := agent.Run(ctx, agentloop.RunInput{ThreadID: "t1", ResourceID: "user-1", Input: "Hello"})
//
// A layer gives an agent one kind of memory.
// It declares an ID, a slot (its place in the prompt), a scope (whose state it keeps) and a token budget.
// It implements some of the hooks init, recall, store and onSpawn.
// The loop calls them at fixed points of every turn, and compiles what they recall into the system prompt.
//
// This root package holds no code. The library is its subpackages:
//
//   - layer: the contract (Layer, its optional capabilities, Spec, Stack).
//   - storage: the versioned key-value Store, with backends in storage/sqlite and storage/redis.
//   - prompt: the system-prompt compiler, token counting, budgets and scored assembly.
//   - prompt/fence: the fence that keeps each layer's text inside its block.
//   - workingmemory: working memory, the model's scratchpad; workingmemory/kv the scoped key-value memory.
//   - entitymemory: entity memory, the entities the agent is working on.
//   - episodicmemory: episodic memory, the log of tool calls and turns.
//   - semanticmemory: semantic memory, facts about the user, with retrieval.
//   - redact: masking of personal data before anything is stored.
//   - audit: the memory operations of each turn.
//   - agentloop: the ReAct loop over a langchaingo llms.Model.
//   - cmd/memlayer: the command for operators.
//
// A concept has one name. In words it is the package's name split ("working
// memory", "key-value memory", "entity memory", "episodic memory",
// "semantic memory"); the layer ID is that name in snake case
// (working_memory, kv_memory, entity_memory, episodic_memory,
// semantic_memory, and history_summary for the history's summary); the
// block tag is the ID (<working_memory>); every tool is "<id>_<verb>"
// (working_memory_update, episodic_memory_read, semantic_memory_memorize).
// Data stored under the IDs from before this scheme (working-memory,
// kv-memory, entities, episodic-memory, semantic) stays there and loads:
// each built-in layer keeps it as its layer.Spec.StorageID. The tool names
// from before (working-memory_update, episodic-memory_read,
// semantic_memorize, semantic_forget) are accepted as deprecated aliases
// until the next release.
//
// Imports flow one way, from storage up to agentloop, and concrete layers never import each other.
// A test in this package (deps_test.go) enforces the rules with go list.
package memlayer
