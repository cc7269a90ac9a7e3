package agentloop

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/route"
	"github.com/memlayer/memlayer/storage"
)

// Defaults applied to zero Config fields.
const (
	DefaultMaxSteps            = 10
	DefaultMaxToolCallsPerStep = 16
	DefaultToolConcurrency     = 4
	DefaultMaxDepth            = 2
	DefaultMaxChildrenPerStep  = 8
	DefaultMaxChildrenPerRun   = 32
	DefaultContextWindow       = 128000
	DefaultResponseReserve     = 4096
	DefaultName                = "agent"
	// DefaultMaxToolResultBytes is Config.MaxToolResultBytes when zero.
	DefaultMaxToolResultBytes = 16 << 10
	// DefaultSaveTimeout is Config.SaveTimeout when zero.
	DefaultSaveTimeout = 5 * time.Second
)

// SpawnToolName is the name of the tool that lets the model start a child
// agent.
const SpawnToolName = "spawn_agent"

// Config configures an [Agent]. Only Model is required; every other zero
// field means the documented default.
type Config struct {
	// Name identifies the agent in logs, events and layer snapshots (a
	// checkpoint taken by an agent of another name is not restored into
	// this one's layers). Zero is DefaultName.
	Name string
	// Model is the chat model. Required.
	Model llms.Model
	// Instructions is the agent's system prompt text. With Template
	// empty, the system prompt is Instructions followed by each layer's
	// block in slot order.
	Instructions string
	// Template, when set, is a Handlebars template for the whole system
	// prompt (see package prompt): {{{instructions}}}, {{{layers}}} and
	// one variable per layer, named after its ID in camelCase.
	Template string
	// Vars are extra template variables, the same for every run.
	Vars map[string]any
	// Layers are the memory layers, in registration order. Each run gets
	// its own [layer.Stack] over them.
	Layers []layer.Layer
	// Tools are the agent's own tools. The layers' functions are offered
	// next to them automatically. Names are validated by New.
	Tools []Tool

	// MaxSteps bounds model calls per run. Zero is DefaultMaxSteps.
	MaxSteps int
	// MaxToolCallsPerStep bounds the tool calls executed for one model
	// response; calls beyond it are answered with an error result and
	// not run. Zero is DefaultMaxToolCallsPerStep.
	MaxToolCallsPerStep int
	// ToolConcurrency bounds how many tool calls of one step run at once.
	// Zero is DefaultToolConcurrency; 1 runs them one by one.
	ToolConcurrency int
	// MaxTokens bounds the tokens (prompt + completion, summed over model
	// calls) of one run, its child agents' calls included: no model call
	// starts once the run is at the limit. Zero means no limit.
	MaxTokens int
	// Timeout bounds the wall time of one run. Zero means no limit (the
	// context still applies).
	Timeout time.Duration
	// ContextWindow is the model's context size in tokens, shared between
	// the system prompt, the tool definitions (the agent's and the
	// layers', counted with Counter as prompt.CountTools does), the
	// layers and the history. Zero is DefaultContextWindow.
	ContextWindow int
	// ResponseReserve is kept free in the window for the answer. Zero is
	// DefaultResponseReserve.
	ResponseReserve int
	// Counter counts tokens for budgets. Nil is prompt.Estimate.
	Counter prompt.Counter
	// CallOptions are passed to every GenerateContent call, after the
	// agent's own (tools), so they may override them.
	CallOptions []llms.CallOption
	// Stream, when set, receives the model's text as it is generated (it
	// is passed as llms.WithStreamingFunc). Models that do not stream
	// ignore it; the final answer is in the Result either way. Text a
	// model emits before calling tools is streamed too, but not the
	// tool-call deltas langchaingo's OpenAI client also streams (JSON),
	// nor empty chunks. An error from Stream ends the model call, and so
	// the run.
	Stream func(ctx context.Context, chunk []byte) error

	// Assembly configures scored context assembly for the layers that
	// offer candidates (see [AssemblyConfig]): on by default; disabled,
	// every layer fills its own budget.
	Assembly AssemblyConfig

	// Redaction says what is masked before it reaches a store; by
	// default personal data and secrets are (see [redact.Policy]).
	Redaction redact.Policy

	// Router decides where a memory write goes — what the model asks a
	// layer's write tool (semantic memory's memorize) to keep, or a
	// layer.Proposer proposes — or refuses it; nil is route.Default,
	// which routes by kind without a model call.
	Router route.Router

	// Audit says what of the memory operations of each run is kept with
	// the thread; by default all of them (see [AuditConfig]).
	Audit AuditConfig

	// Store persists layer state and thread checkpoints. Nil means an
	// in-memory store private to this Agent: threads survive between
	// runs of the Agent but not the process.
	Store storage.Store
	// KeepToolResults keeps tool results and tool-call arguments of
	// earlier turns in full in the history. By default (false) a tool
	// result is kept in full for the turn that produced it and replaced
	// by a one-line reference in later turns, and arguments longer than
	// 256 bytes by {"_compacted":"<n> bytes"}: layers such as entity
	// memory and the scratchpad remember what mattered.
	KeepToolResults bool
	// MaxToolResultBytes caps what one tool result puts into the history
	// (and so into every later prompt of the turn and the checkpoint): a
	// longer result is cut at a UTF-8 boundary and followed by a note
	// giving its full size and its call's ID ("[agentloop: result
	// truncated: N bytes, of which the first M are shown; full result:
	// call ID]"), by which a layer that keeps whole results (episodic
	// memory) lets the model read it. The layers' Store still gets the
	// whole result (entity extraction reads it all). Zero is
	// DefaultMaxToolResultBytes; negative means no cap.
	MaxToolResultBytes int
	// SaveTimeout bounds the recording of a run stopped by its context
	// (Timeout or cancellation): the layers' Store of the interrupted
	// step and the last checkpoint run on a context that is not
	// cancelled (context.WithoutCancel) with this deadline, so what the
	// tools did is not lost. Zero is DefaultSaveTimeout.
	SaveTimeout time.Duration
	// History says what of the thread's history the model is sent: by
	// default a window of recent turns and a rolling summary of the older
	// ones, shown by the built-in history_summary layer (see
	// [history.Config]).
	History history.Config
	// RestoreLayers makes a resumed thread restore the layers' state from
	// its checkpoint, for layers of thread or execution scope, after
	// Init. Layers that persist their own state (the usual case) load it
	// in Init and do not need this; it is for layers that only implement
	// layer.Snapshotter.
	RestoreLayers bool

	// MaxDepth bounds child agents: a run at depth MaxDepth cannot spawn.
	// Zero is DefaultMaxDepth; negative disables spawning.
	MaxDepth int
	// MaxChildrenPerStep bounds the spawn_agent calls run for one model
	// response; calls beyond it are answered with an error result and not
	// run. Zero is DefaultMaxChildrenPerStep.
	MaxChildrenPerStep int
	// MaxChildrenPerRun bounds the child agents one top-level run starts,
	// at every depth together (children, their children, ...). A spawn
	// beyond it fails with ErrMaxChildren. Zero is
	// DefaultMaxChildrenPerRun.
	MaxChildrenPerRun int
	// DisableSpawnTool hides the spawn_agent tool from the model.
	// Agent.Spawn still works from code.
	DisableSpawnTool bool
	// SpawnLayers are layers a child agent can be given on top of the
	// ones it inherits, offered by their IDs: the spawn_agent tool lists
	// the IDs (its "layers" argument may name only those) and code picks
	// them with SpawnInput.LayerIDs. Each is a template like the layers
	// of Layers: a child given one gets it initialised for the child's
	// env (its Init), owns it and closes it when it ends. IDs must be
	// valid, unique, and differ from the IDs of Layers (New checks).
	SpawnLayers []layer.Layer

	// TracerProvider and MeterProvider receive memlayer's OpenTelemetry
	// spans (a run, each step, the model call, each tool call, each
	// layer hook, the thread's load and checkpoints, the audit's commit
	// and the layers' search and indexing; see the package doc) and metrics (hook, model and tool durations, tokens by
	// type and by layer, checkpoint conflicts, compare-and-swaps the
	// layers lose, and, as each run ends, the figures each layer reports
	// through layer.MetricsReporter: a count
	// "x_total" goes to the counter memlayer.layer.x, a level "y" to the
	// gauge memlayer.layer.y, such as the key-value memory's entries,
	// scopes and parent-fallback lookups or the entity memory's
	// extractions and evictions). Nil means otel's global
	// providers, which do nothing until the application installs some.
	// Attributes carry IDs and names only, never text from memory,
	// prompts or tool results.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// ModelName and ModelProvider name the model in traces, per
	// OpenTelemetry's GenAI semantic conventions: a model call's span is
	// "chat {ModelName}" with gen_ai.request.model and
	// gen_ai.provider.name. Zero ModelName is the model CallOptions set
	// (llms.WithModel), else none (the span is "chat"). Zero
	// ModelProvider is read from Model's type when it is one of
	// langchaingo's clients ("openai" for llms/openai), else none.
	ModelName, ModelProvider string

	// ObservePrompts sends the Observer an [EventPrompt] before every
	// model call, with the exact messages sent (the system prompt first).
	// It is off by default because a prompt may hold personal data
	// (memory, tool results, the user's words): turn it on where the
	// Observer's destination may keep them.
	ObservePrompts bool

	// Observer receives every [Event], synchronously, possibly from
	// several goroutines at once: it must be fast and safe for concurrent
	// use.
	Observer func(Event)
	// Logger receives the agent's and the layers' diagnostics. Nil is
	// slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Name = cmp.Or(c.Name, DefaultName)
	// The limits where zero, or less, means the default.
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&c.MaxSteps, DefaultMaxSteps},
		{&c.MaxToolCallsPerStep, DefaultMaxToolCallsPerStep},
		{&c.ToolConcurrency, DefaultToolConcurrency},
		{&c.ContextWindow, DefaultContextWindow},
		{&c.ResponseReserve, DefaultResponseReserve},
		{&c.MaxChildrenPerStep, DefaultMaxChildrenPerStep},
		{&c.MaxChildrenPerRun, DefaultMaxChildrenPerRun},
	} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	// Negative means no cap.
	if c.MaxToolResultBytes == 0 {
		c.MaxToolResultBytes = DefaultMaxToolResultBytes
	}
	if c.SaveTimeout <= 0 {
		c.SaveTimeout = DefaultSaveTimeout
	}
	// Negative disables spawning.
	if c.MaxDepth == 0 {
		c.MaxDepth = DefaultMaxDepth
	}
	if c.Counter == nil {
		c.Counter = prompt.Estimate
	}
	c.History = c.History.WithDefaults(c.Counter)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Store == nil {
		c.Store = storage.NewMemoryStore()
	}
	if c.Router == nil {
		c.Router = route.Default
	}
	return c
}
