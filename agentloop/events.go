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
	p, okP, goodP := tokenCount(info, "PromptTokens", "prompt_tokens", "InputTokens", "input_tokens")
	c, okC, goodC := tokenCount(info, "CompletionTokens", "completion_tokens", "OutputTokens", "output_tokens")
	t, okT, goodT := tokenCount(info, "TotalTokens", "total_tokens")
	if !(goodP && goodC && goodT) || (!okP && !okC && !okT) || p+c+t == 0 {
		return Usage{}, false
	}
	if !okT || t < p+c {
		t = p + c
	}
	return Usage{PromptTokens: p, CompletionTokens: c, TotalTokens: t}, true
}

// tokenCount returns the count under the first of keys that info holds
// as a number, whether there was one, and whether it is believable (see
// usageFrom); an unbelievable count is not returned.
func tokenCount(info map[string]any, keys ...string) (n int, found, believed bool) {
	for _, k := range keys {
		f, ok := number(info[k])
		if !ok {
			continue
		}
		if !(f >= 0 && f <= maxCallTokens) { // NaN fails too
			return 0, false, false
		}
		return int(f), true, true
	}
	return 0, false, true
}

// number returns v as a float64 when it is an int, int32, int64 or
// float64.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int:
		return float64(v), true
	case int32:
		return float64(v), true
	case int64:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}
