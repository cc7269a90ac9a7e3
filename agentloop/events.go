package agentloop

import (
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/thread"
)

// EventKind says what an [Event] reports.
type EventKind string

// The kinds of events an agent reports.
const (
	// EventRunStart: a run (or a child run) begins.
	EventRunStart EventKind = "run_start"
	// EventPrompt: a model call is about to be made (Request is what is
	// sent). Only with Config.ObservePrompts.
	EventPrompt EventKind = "prompt"
	// EventModelCall: a GenerateContent call returned (Duration, Usage,
	// Err).
	EventModelCall EventKind = "model_call"
	// EventToolCall: one tool call finished (Tool, Duration, Err is the
	// tool's failure, which the model saw as the result).
	EventToolCall EventKind = "tool_call"
	// EventLayerHook: a layer hook ran (Layer, Hook, Duration, Err).
	EventLayerHook EventKind = "layer_hook"
	// EventStep: a step finished: recall, model call, tools, store and
	// checkpoint (Duration covers all of it; ModelTime and ToolTime the
	// parts spent outside memlayer).
	EventStep EventKind = "step"
	// EventCheckpoint: the thread was checkpointed (Err on failure).
	EventCheckpoint EventKind = "checkpoint"
	// EventSummary: the history's rolling summary was made (Duration) or
	// failed (Err; the previous summary stays, and the run goes on).
	EventSummary EventKind = "summary"
	// EventAudit: a run committed its memory operations to the thread's
	// audit (Duration), or failed to (Err; the run goes on). See
	// [AuditConfig].
	EventAudit EventKind = "audit"
	// EventRunEnd: a run ended (Usage is the run's total, Err why it
	// stopped, nil on a final answer).
	EventRunEnd EventKind = "run_end"
)

// Event reports one thing that happened during a run. Fields that do not
// apply to the kind are zero.
type Event struct {
	Kind     EventKind
	ThreadID string
	// Depth is 0 for a top-level run, 1 for its children, and so on.
	Depth int
	// Step counts model calls in the run, from 0.
	Step     int
	Duration time.Duration
	// ModelTime and ToolTime are set on EventStep: the time spent in the
	// model call, and in the tools' own code (after argument checks; for
	// a layer function, the stack's CallTool; for spawn_agent, the child
	// run), summed over the step's calls but never more than the wall
	// time of the step's tool phase. Duration − ModelTime − ToolTime is
	// memlayer's own overhead for the step.
	ModelTime time.Duration
	ToolTime  time.Duration
	// Budgets is what each layer had of the step's prompt, for EventStep
	// (see Result.Budgets).
	Budgets []prompt.LayerBudget
	// Tool is the tool name, for EventToolCall.
	Tool string
	// Layer and Hook name the layer hook, for EventLayerHook.
	Layer string
	Hook  string
	// Usage is the token usage of a model call (EventModelCall) or of the
	// whole run (EventRunEnd).
	Usage Usage
	// StopReason is the model's stop reason, for EventModelCall (see
	// Result.StopReason).
	StopReason string
	// Request is the exact request of a model call, the system prompt
	// first, for EventPrompt (see Config.ObservePrompts). The Observer
	// must not modify it.
	Request []llms.MessageContent
	// Err is the failure, if any.
	Err error
}

// Usage counts tokens. Models that report usage in GenerationInfo
// (PromptTokens, CompletionTokens, TotalTokens, as langchaingo's OpenAI,
// Anthropic and Ollama clients do) are counted as reported; for others,
// and when the report is all zero or implausible (negative, not a number,
// above 100 million tokens for one call), the prompt and completion are
// estimated with the agent's token counter and Estimated is set.
type Usage = thread.Usage

// maxCallTokens bounds the tokens one model call can plausibly use (a
// hundred times the largest context windows of 2025); a reported count
// above it is not believed.
const maxCallTokens = 100_000_000

// usageFrom reads token usage from a choice's GenerationInfo. ok is false
// when the model reported none, or nothing to believe: all zero (what
// langchaingo's OpenAI client reports when a server omits usage), or a
// count that is negative, not a number or above maxCallTokens (1e300
// would wrap when converted to int). The caller estimates instead.
func usageFrom(info map[string]any) (u Usage, ok bool) {
	valid := true
	get := func(keys ...string) (int, bool) {
		for _, k := range keys {
			var f float64
			switch v := info[k].(type) {
			case int:
				f = float64(v)
			case int32:
				f = float64(v)
			case int64:
				f = float64(v)
			case float64:
				f = v
			default:
				continue
			}
			if !(f >= 0 && f <= maxCallTokens) { // NaN fails too
				valid = false
				return 0, false
			}
			return int(f), true
		}
		return 0, false
	}
	p, okP := get("PromptTokens", "prompt_tokens", "InputTokens", "input_tokens")
	c, okC := get("CompletionTokens", "completion_tokens", "OutputTokens", "output_tokens")
	t, okT := get("TotalTokens", "total_tokens")
	if !valid || (!okP && !okC && !okT) || p+c+t == 0 {
		return Usage{}, false
	}
	if !okT || t < p+c {
		t = p + c
	}
	return Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: t}, true
}
