package layer

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// Named slots of the built-in layers.
// Lower slots render earlier in the prompt.
// Layers with equal slots keep the order they were registered in.
// Any int is a slot: a layer of your own picks the number that places it among these.
const (
	SlotWorkingMemory  = 100
	SlotEntities       = 150
	SlotEpisodic       = 300
	SlotSemanticRecall = 400
)

// Scope says whose memory a layer keeps, and so under which key its state
// is stored. The zero Scope is ScopeThread.
type Scope string

// The scopes. See [Env.ScopeKey] for the storage key each one maps to.
const (
	// ScopeThread keeps one state per conversation thread.
	ScopeThread Scope = "thread"
	// ScopeResource keeps one state per resource (a user, a project),
	// shared by every thread of that resource. A thread without a
	// resource ID keeps a resource scope of its own, which belongs to the
	// thread and which no resource ID names.
	ScopeResource Scope = "resource"
	// ScopeGlobal keeps one state shared by every run.
	ScopeGlobal Scope = "global"
	// ScopeExecution keeps state for one run only; it is never persisted.
	ScopeExecution Scope = "execution"
)

// Unbounded is the token count that means "no limit": a [Budget.Max], a
// [Query.Budget] or an allocation of this size caps nothing. It is the
// largest int, so comparing a count against it needs no special case.
const Unbounded = math.MaxInt

// Budget is a layer's share of the context window, in tokens. Min is
// guaranteed when the window allows it; Max caps what the layer gets. A Max
// of zero or [Unbounded] means no cap: the zero Budget is "take what is
// left". A negative bound, or Min above a set Max, is rejected by
// [Spec.Validate] and [NewStack].
type Budget struct {
	Min int
	Max int
}

// Spec is what a layer declares about itself. It must not change after the
// layer is handed to a [Stack].
type Spec struct {
	// ID names the layer: lowercase words of [a-z0-9] joined by single
	// '_' (snake case, as the built-in layers' IDs are) or '-', at most
	// 48 bytes, unique in a stack. It names the layer's tools
	// ("<id>_<function>") and its prompt block, and, unless StorageID is
	// set, its storage keys, so changing it orphans stored state.
	ID string
	// StorageID, when set, names the layer's stored data in place of
	// ID: its storage keys, search collections and its part of thread
	// checkpoints. It is the former ID of a renamed layer (the built-in
	// layers set their IDs from before the naming scheme, such as
	// "working-memory"), so data stored under the old ID loads as it is,
	// with no copy, and a build from before the rename still reads what
	// this one writes. It is unique in a stack like ID. The layer's tools
	// also answer, for one release, to the names StorageID gives them
	// ([ToolName](StorageID, function)): deprecated aliases, never
	// offered to the model, so that a model or a stored conversation
	// using the old names still reaches them.
	StorageID string
	// Slot orders the layer in the prompt (lower first).
	Slot int
	// Scope selects whose state the layer keeps. Zero is ScopeThread.
	Scope Scope
	// Budget is the layer's token budget. Zero is unbounded.
	Budget Budget
	// DisableOnInitError makes a failing Init disable the layer (every
	// later hook is skipped and the failure reported) instead of aborting
	// the run.
	DisableOnInitError bool
	// Timeout bounds each call of one of the layer's hooks (Init, Recall,
	// Store, OnSpawn, OnReturn, Close, and its tool calls, snapshots,
	// restores, clears and stats). Zero takes [StackConfig.Timeout], and
	// when that is zero too, the hook's default: 10s for Init, OnSpawn and
	// OnReturn, 5s for Recall and Close, 30s for the others.
	Timeout time.Duration
}

// A Layer gives an agent one kind of memory. Spec declares it; Recall puts
// its memory into the prompt before every model call. Everything else a
// layer can do is an optional interface, discovered by type assertion:
// [Initializer], [Storer], [Spawner], [Returner], [Provider],
// [Snapshotter], [Clearer] and [Closer] (or io.Closer).
//
// A Layer handed to a [Stack] is used by one run at a time: the stack
// serialises Recall and Store of one layer and never calls them
// concurrently with each other. Layers that share state across runs
// (a cache, a store handle) must guard it themselves.
type Layer interface {
	Spec() Spec
	// Recall returns the layer's prompt items for this model call, or
	// none. It must not modify the layer's persisted state. A returned
	// error is reported and the layer contributes nothing this step.
	Recall(ctx context.Context, q Query) ([]Item, error)
}

// Initializer is implemented by layers that load state. Init runs once per
// run, before anything else, and returns the layer bound to that run: the
// receiver is a template that several runs may Init concurrently, so Init
// must not modify it. A layer that keeps no per-run state may return
// itself.
type Initializer interface {
	Init(ctx context.Context, env Env) (Layer, error)
}

// Storer is implemented by layers that learn from each step. Store runs
// after every model response and its tool results, for every layer of the
// stack concurrently (each layer on its own state). Persisted changes must
// use compare-and-swap ([storage.Store.Put] with a version) so that two
// processes updating the same scope lose nothing.
type Storer interface {
	Store(ctx context.Context, t Turn) error
}

// Spawner is implemented by layers that decide what a child agent
// inherits. OnSpawn returns the layer the child starts with: a deep clone,
// a view sharing state on purpose, or nil for "no such layer in the
// child". It must not modify the receiver. The returned layer is used as
// is: the stack does not call Init on it.
type Spawner interface {
	OnSpawn(ctx context.Context, child Env) (Layer, error)
}

// Returner is implemented by layers that take a child's changes back when
// the child finishes. child is the layer OnSpawn produced (after the
// child's run). OnReturn may modify the receiver; it must not modify child.
type Returner interface {
	OnReturn(ctx context.Context, child Layer) error
}

// Provider is implemented by layers that offer functions to the model
// and to code. Each function becomes a tool named [ToolName](layer ID,
// function name). Code reads a layer's state through the layer's own
// methods ([Find] the layer), not through the stack.
type Provider interface {
	Functions() []Function
}

// Snapshotter is implemented by layers whose state can be captured and
// restored, for checkpoints and for [Stack.Snapshot]. Snapshot returns
// JSON; Restore replaces the state with one taken earlier and must reject
// data it cannot read without changing the current state.
type Snapshotter interface {
	Snapshot(ctx context.Context) (json.RawMessage, error)
	Restore(ctx context.Context, data json.RawMessage) error
}

// Clearer is implemented by layers whose state can be emptied, in memory
// and in storage.
type Clearer interface {
	Clear(ctx context.Context) error
}

// Env is what a layer knows about the run it belongs to. It is passed to
// Init and OnSpawn; hooks must not retain Logger's handler state beyond
// the run.
type Env struct {
	// ThreadID identifies the conversation. Required.
	ThreadID string
	// ResourceID identifies the owner of the thread (a user, a project).
	// Optional; without it, resource-scoped layers keep a resource scope
	// of the thread's own (see [Env.ScopeKey]).
	ResourceID string
	// RootThreadID is, in a child agent's env, the thread of the
	// top-level run that spawned it (at any depth); empty in a top-level
	// run. [Stack.Spawn] fills it in. A child's thread-scoped memory is
	// keyed by it, so that deleting the root thread finds its children's
	// by a typed key, never by a thread ID's prefix.
	RootThreadID string
	// ExecutionID identifies this run. The stack fills it in if empty.
	ExecutionID string
	// Store is where layers persist state. Nil means nothing persists
	// beyond the run (the stack substitutes an in-memory store).
	Store storage.Store
	// Logger receives the layer's diagnostics. Nil means slog.Default().
	Logger *slog.Logger
	// Redact masks personal data in text that the layer with ID layerID
	// is about to store (a JSON document stays valid JSON); a layer that
	// stores what it is handed by code rather than by the agent (the
	// key-value memory's values) passes it through Redact first. Nil
	// stores text as it is. agentloop sets it from its
	// redact.Policy; a child's env inherits its parent's.
	Redact func(layerID, text string) string
}

// ScopeKey returns the storage scope key for scope in env, a typed key
// (see storage.ScopeKind) that says whose memory it is, so that no thread
// ID can name a resource's memory or the reverse:
//
//   - ScopeThread (and the zero Scope): storage.ThreadScope(ThreadID); in
//     a child agent's env, "thread:{RootThreadID}:{ThreadID}".
//   - ScopeResource: storage.ResourceScope(ResourceID); without a
//     ResourceID, the thread's own resource scope,
//     storage.AnonymousScope(ThreadID) (in a child, "anon:{root}:{thread}").
//   - ScopeGlobal: storage.GlobalScope.
//   - ScopeExecution: storage.ExecutionScope(ExecutionID).
//
// Layers store their records under storage.LayerKey(id, key, name).
// Records stored before scope keys were typed are moved under the typed
// keys when a [Stack] initialises the layer (see "Scope keys" in the
// package documentation).
func (env Env) ScopeKey(scope Scope) string {
	thread := func(kind storage.ScopeKind) string {
		p := storage.ScopeKeyParts{Kind: kind, ID: env.ThreadID}
		if env.RootThreadID != "" && env.RootThreadID != env.ThreadID {
			p.ID, p.Child = env.RootThreadID, env.ThreadID
		}
		return storage.ScopeKeyOf(p)
	}
	switch scope {
	case ScopeResource:
		if env.ResourceID != "" {
			return storage.ResourceScope(env.ResourceID)
		}
		return thread(storage.KindAnonymous)
	case ScopeGlobal:
		return storage.GlobalScope
	case ScopeExecution:
		return storage.ExecutionScope(env.ExecutionID)
	default:
		return thread(storage.KindThread)
	}
}

// Query is what Recall gets: the latest user input, the step, the
// layer's allocated budget and the token counter that budget is counted
// with.
type Query struct {
	// Text is the user's latest message.
	Text string
	// Situation is what the run is about right now: Text, then the parts
	// of the situation the stack's [Situator] layers give, in slot order,
	// one per line. Layers that search long-term memory query with it.
	// The Stack fills it in; a layer given an empty Situation (a Query
	// built by hand) searches with Text.
	Situation string
	// Step counts model calls in this run, from 0.
	Step int
	// Budget is the number of tokens allocated to this layer for this
	// call; [Unbounded] when there is no limit. A layer should return
	// items whose total fits; the prompt compiler drops items that do
	// not. The Stack always sets it; zero in a Query built by hand means
	// "no budget given".
	Budget int
	// Counter counts tokens the way the prompt compiler will (any
	// prompt.Counter fits): a layer sets Item.Tokens and fits its budget
	// with [Query.Count], which uses it. The Stack passes the agent's
	// counter; nil means the default estimate.
	Counter interface{ Count(text string) int }
}

// Item is one piece of recalled text.
type Item struct {
	// Text is the rendered memory, untrusted: the prompt compiler fences
	// it so that it cannot break out of its block.
	Text string
	// Tokens is the item's token count; zero means "count it for me".
	Tokens int
}

// Turn is what Store gets: what happened in one step.
type Turn struct {
	// Step counts model calls in this run, from 0.
	Step int
	// Query is the user's latest message.
	Query string
	// Response is the text of the model's answer for this step.
	Response string
	// ToolCalls are the tool calls the model asked for in this step.
	ToolCalls []ToolCall
	// Results are the results of the tool calls, in order.
	Results []ToolResult
}

// ToolCall is a tool call requested by the model.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the raw JSON the model sent.
	Arguments string
}

// ToolResult is the outcome of one tool call: the call (its ID, tool name
// and arguments) and what the tool returned.
type ToolResult struct {
	ToolCall
	// Content is what the tool returned (often JSON).
	Content string
	// IsError is true when the tool failed and Content is the error text.
	IsError bool
	// Duration is how long the call took; zero when not measured.
	Duration time.Duration
}

// Function is an operation a layer offers to the model and to code.
type Function struct {
	// Name is lower camel or kebab case, unique within the layer.
	Name        string
	Description string
	// Parameters is the JSON Schema of the arguments object. Nil means
	// {"type":"object"}.
	Parameters json.RawMessage
	// Call runs the function with the raw JSON arguments and returns the
	// text the model sees. An error is shown to the model as the tool
	// result, so it should say what to fix.
	Call func(ctx context.Context, args json.RawMessage) (string, error)
	// Aliases are other names a model may call the function by, used
	// verbatim (not prefixed with the layer ID): the names of older
	// prompt conventions, such as the scratchpad's "updateWorkingMemory".
	// They are not offered to the model; [Stack.CallTool] accepts them.
	// An alias that is some tool's name, or an earlier function's alias,
	// is ignored.
	Aliases []string
	// Effect is what a call does to memory; zero is [EffectNone].
	Effect Effect
}

// Closer is implemented by layers that hold resources or buffer writes.
// Close runs once when the run ends, successful or not, in reverse
// registration order; it should flush pending writes within ctx. A layer
// may implement [io.Closer] instead; the stack calls whichever it has.
type Closer interface {
	Close(ctx context.Context) error
}
