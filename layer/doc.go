// Package layer is the contract of memlayer: what a memory layer is, the
// hooks it may implement, and the [Stack] that runs a set of layers for one
// agent run.
//
// A layer gives an agent one kind of memory (a scratchpad, the entities it
// is working on, a key-value store). It declares a [Spec] — an ID, a Slot
// that orders it in the prompt, a [Scope] that says whose state it keeps,
// and a token [Budget] — and implements Recall. Every other capability is a
// small optional interface discovered by type assertion, the way
// database/sql discovers what a driver can do:
//
//   - [Initializer]: Init loads the layer's state for a run and returns the
//     layer bound to that run.
//   - [Storer]: Store learns from each model response and its tool results.
//   - [Spawner]: OnSpawn decides what a child agent inherits.
//   - [Returner]: OnReturn takes a child's changes back.
//   - [Provider]: functions, which become the model's tools.
//   - [Snapshotter], [Clearer]: the stack's unified memory operations.
//   - [Situator]: the layer's part of the situation, the query that
//     long-term memory searches with ([Query.Situation]).
//   - [Closer] (or io.Closer): flush and release at the end of a run.
//   - [CandidateSource]: memories that compete in scored assembly.
//   - [BlockRenderer]: the block of the candidates a layer won, with
//     its header and in its order.
//   - [MetricsReporter]: figures for monitoring, which agentloop exports
//     as OpenTelemetry metrics when a run ends.
//   - [Proposer], [Keeper]: writes proposed by a layer's Store, and kept
//     where a router sends them (see package route).
//
// Capabilities are found through [As], which also walks wrapping chains
// (a layer with a method Unwrap() Layer), so a wrapping layer exposes what
// it wraps unless it implements the hook itself.
//
// # Writing a layer
//
// A minimal layer is a type with Spec and Recall. To write one:
//
//  1. Give it a Spec: a unique ID, the Slot where its items go in the
//     prompt, the Scope of its state and its Budget (see [Spec.Validate]).
//  2. Implement Recall: return the layer's items for this model call
//     within the budget, without changing persisted state.
//  3. If it keeps state, implement [Initializer]: load the state for the
//     run's [Env] and return a new value bound to the run; never modify the
//     registered value, which concurrent runs share. Implement [Storer] to
//     learn from each step, [Closer] to flush at the end, [Spawner] and
//     [Returner] to decide what child agents see and give back.
//  4. Store state under [Env.ScopeKey] with compare-and-swap writes (see
//     Scopes and storage), and offer tools through [Provider] (see Tools).
//  5. Run package layertest's suite on it (see Conformance).
//
// The stack serialises the hooks of one layer, so a bound layer needs no
// lock for its own per-run state (see Concurrency).
//
// # Lifecycle
//
// For one run of an agent on a thread the stack calls, in this order:
//
//  1. Init, once, in registration order. Init receives the run's [Env]
//     (thread, resource and execution IDs, the store) and returns the
//     bound layer; the registered layer is a template that concurrent runs
//     share and must not be modified. A template belongs to no run: the
//     built-in layers' methods that read or write a run's memory fail on
//     it with an error wrapping [ErrTemplate]. A failing Init aborts the run and
//     closes the layers already initialised, unless the spec sets
//     DisableOnInitError: then the layer is disabled for the run (every
//     later hook skipped) and the failure reported.
//  2. Recall, before every model call, in slot order (ties keep
//     registration order), with the layer's allocated budget. A failed or
//     slow Recall is reported and contributes nothing; the step goes on.
//  3. Store, after every model response and its tool results, for all
//     layers concurrently, each on its own state. A failure is reported and
//     does not affect other layers. Provided functions called as tools run
//     between Recall and Store and are serialised with them.
//  4. OnSpawn, when the agent spawns a child: see [Stack.Spawn]. A failed
//     OnSpawn leaves the layer out of the child. A layer the child shares
//     with the parent (the same value) stays the parent's: the child does
//     not close it and its hooks are serialised across both stacks.
//     OnReturn, when the child finishes: see [Stack.Return]. A failed
//     OnReturn leaves the parent layer unchanged.
//  5. Close, once, when the run ends, successful or not, in reverse
//     registration order.
//
// # Failures and timeouts
//
// Every hook runs under a timeout ([Spec.Timeout], else
// [StackConfig.Timeout], else the hook's default: 10s for Init, OnSpawn
// and OnReturn, 5s for Recall and Close, 30s for Store and the rest) and
// with panics recovered ([ErrPanic]). Failures are [*Error] values naming
// the layer and the hook; they are logged through log/slog and sent to
// the stack's [StackConfig.OnHook]. A hook that outlives its timeout
// ([ErrTimeout]) has its context cancelled and its result dropped: late
// items never reach the prompt, and a layer bound by a late Init or
// OnSpawn is closed, not used. The hook keeps its layer busy until it
// returns: later hooks of that layer wait, and time out, rather than run
// concurrently with it. Other layers are never held up. A layer that
// mutates its own state in a hook that has timed out should check its
// context first: the stack cannot undo what a hook does to the layer
// itself.
//
// Even a hook that ignores its context cannot block the caller past its
// timeout, but it goes on running until it returns; while 16 hooks of
// one layer (told apart by its registered type and ID, across all the
// stacks of the process) are in that state, the layer's hooks fail at once with an error wrapping [ErrTimeout] and are not
// called, until some return. Under a context that is already done no hook
// is started (the error is the context's), except Close.
//
// Close always runs: under a cancelled context too (a run that ends by
// cancellation must still flush), with the context's values but not its
// cancellation, each Close bounded by its timeout. When Init aborts, the
// layers already initialised are closed the same way.
//
// # Wrapping layers
//
// A layer that wraps another has a method Unwrap() Layer returning it, as
// an error that wraps another has Unwrap() error. [As] walks these chains,
// so a wrapper exposes the hooks of what it wraps. Init and OnSpawn return a new layer, and through the chain that is
// the inner layer's, without the wrapper: a wrapper that must stay in place
// for the run implements Init (and OnSpawn) itself and wraps the result.
//
// # Scopes and storage
//
// A layer's state is stored under a scope key derived from its Scope by
// [Env.ScopeKey]. The key is typed: it says whose memory it is — a
// thread's ("thread:7"), a resource's ("resource:7"), the resource scope
// of a thread that runs without a resource ("anon:7", which belongs to
// the thread), the global one ("global:") or a run's ("execution:…",
// never persisted) — so no thread ID can name a user's memory, nor the
// reverse, and an erase selects a user's records by kind and whole ID. A
// child agent's thread-scoped key names its root thread
// ([Env.RootThreadID]). Keys are built with storage.LayerKey so no ID can
// reach another's keys. Writes use compare-and-swap: two processes
// updating the same resource retry instead of overwriting each other.
//
// # Scope keys of earlier versions
//
// Before scope keys were typed, a layer's records were keyed by the bare
// ID (storage.LegacyLayerPrefix): the thread ID, the resource ID — or the
// thread ID for a resource-scoped layer run without a resource, the very
// key of a resource of that name — and "__global__". When a [Stack]
// initialises a layer, it first moves that layer's records from the
// untyped key to the typed one, when the untyped scope holds a record
// named "state" or "head", the records the built-in layers load from
// (records named "head" and "state" last;
// a record whose typed key already holds another value is set aside with
// storage.Quarantine, never overwritten), then calls Init, so every
// layer's old records load, built-in or not. It moves a thread's records
// for ScopeThread, a resource's for ScopeResource with a resource ID and
// "__global__" for ScopeGlobal. A thread without a resource moves
// nothing into its resource scope: the untyped record under its thread ID
// may be the memory of a user of that name, so the thread's resource
// scope starts empty and the record stays for that user to adopt. A child
// agent moves nothing (its records were never read again). A layer
// initialised without a Stack reads only typed keys.
//
// # Tools
//
// A provided [Function] is offered to the model as a tool named
// [ToolName](layer ID, function name), "<layer-id>_<function>" made
// acceptable to provider APIs ([a-zA-Z0-9_-]{1,64}); [Stack.CallTool]
// also accepts "<layer-id>/<function>". Arguments must be a JSON object and are
// validated against the function's schema (when the stack has a
// validator) before the function runs; errors are text for the model.
//
// # Concurrency
//
// A [Stack] is safe for concurrent use. Hooks of one layer (tool calls
// included) never run concurrently with each other, so a bound layer needs
// no lock for its own per-run state. Code that reads a layer's state
// directly ([Find] the layer, then call its methods) may do so while its
// hooks run, so such methods must be safe for concurrent use. A registered (template)
// layer may be initialised by many runs at once. OnHook is called
// without the stack's locks held and may read the stack.
//
// # Conformance
//
// Package layertest is the suite every Layer implementation can run: valid
// spec, Init independence, snapshot round trips, refusal of garbage, Clear,
// Close idempotence, tool names and concurrent use through a Stack.
package layer
