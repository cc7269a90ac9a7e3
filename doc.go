// Package memlayer is a library of memory layers for LLM agents built on
// langchaingo.
//
// A layer gives an agent one kind of memory — a scratchpad it keeps notes
// in, the entities it is working on, a key-value store — through a small
// contract: it declares an ID, a slot (its place in the prompt), a scope
// (whose state it keeps: a thread, a resource, everyone, or one run) and a
// token budget, and implements some of four hooks: init, recall, store and
// onSpawn. Layers are composed into a stack that calls those hooks at
// fixed points of every turn of a ReAct loop, and what they recall is
// compiled into the system prompt under per-layer budgets.
//
// This root package holds no code; the library is its subpackages:
//
//   - layer: the contract (Layer and its optional hook interfaces, Spec,
//     Scope, Budget, Env) and the Stack runtime that runs a set of layers
//     for one agent run, with per-hook timeouts, failure isolation,
//     snapshots and layer-provided tools. layer/layertest is the
//     conformance suite every Layer implementation can run.
//   - storage: the versioned key-value Store (compare-and-swap, scoped key
//     layout) with an in-memory default; storage/sqlite is the embedded
//     durable backend; storage/storagetest is the backend conformance
//     suite.
//   - prompt: the Handlebars system-prompt compiler, token counting,
//     budget allocation and projection.
//   - workingmemory and entitymemory: the built-in layers.
//   - agentloop: the ReAct loop over a langchaingo llms.Model that runs a
//     stack, offers layer tools next to the agent's own, and spawns child
//     agents.
//   - examples: runnable programs.
//
// # Import direction
//
// Imports flow one way: storage (standard library only) → layer (standard
// library and storage; no langchaingo, so the contract stays stable while
// langchaingo is pre-1.0) → prompt → workingmemory, entitymemory →
// agentloop → examples. Concrete layers never import each other, nothing
// but examples imports agentloop, nothing imports examples, and the
// conformance suites are imported only from tests. A test in this package
// (deps_test.go) enforces these rules with go list.
package memlayer
