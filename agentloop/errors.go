package agentloop

import (
	"errors"
	"fmt"
)

// Errors returned by this package. Check them with [errors.Is]: they are
// usually wrapped with the operation that failed.
var (
	// ErrNoModel means the Config has no Model.
	ErrNoModel = errors.New("agentloop: no model")
	// ErrInvalidTool means a tool cannot be registered: a bad or duplicate
	// name, a nil Call, or a parameter schema that does not compile.
	ErrInvalidTool = errors.New("agentloop: invalid tool")
	// ErrInvalidConfig means a Config field is out of range or a template
	// does not parse.
	ErrInvalidConfig = errors.New("agentloop: invalid config")
	// ErrMaxSteps means the run reached Config.MaxSteps model calls
	// without a final answer. The error is a [*LimitError] carrying the
	// partial result.
	ErrMaxSteps = errors.New("agentloop: step limit reached")
	// ErrMaxTokens means the run used Config.MaxTokens tokens. The error
	// is a [*LimitError] carrying the partial result.
	ErrMaxTokens = errors.New("agentloop: token limit reached")
	// ErrTimeout means the run exceeded Config.Timeout. The error is a
	// [*LimitError] carrying the partial result; it also matches
	// context.DeadlineExceeded.
	ErrTimeout = errors.New("agentloop: run timed out")
	// ErrMaxDepth means a child agent would exceed Config.MaxDepth.
	ErrMaxDepth = errors.New("agentloop: spawn depth limit reached")
	// ErrNoThread means RunInput.ThreadID is empty.
	ErrNoThread = errors.New("agentloop: no thread id")
	// ErrEmptyResponse means the model returned no choices.
	ErrEmptyResponse = errors.New("agentloop: model returned no choices")
	// ErrCheckpoint means a thread checkpoint cannot be read or written.
	// A write that lost a race with another run of the same thread also
	// matches storage.ErrConflict.
	ErrCheckpoint = errors.New("agentloop: checkpoint")
	// ErrUnknownTool means the model called a tool that is not offered.
	// It reaches the model as a tool result, never the caller.
	ErrUnknownTool = errors.New("agentloop: unknown tool")
	// ErrInvalidArguments means tool arguments are not valid JSON or fail
	// the tool's schema. It reaches the model as a tool result.
	ErrInvalidArguments = errors.New("agentloop: invalid tool arguments")
	// ErrPanic means a model call, a tool or a child agent panicked. The
	// panic is recovered and becomes the error of that call: a model
	// call's ends the run, a tool's or a child's reaches the model as the
	// tool result.
	ErrPanic = errors.New("agentloop: panic")
	// ErrTruncated means the final answer was cut off by the model's
	// output limit (stop reason "length", "max_tokens", ...). Run returns
	// it with the result, whose Output holds the partial answer.
	ErrTruncated = errors.New("agentloop: answer truncated")
	// ErrFiltered means the final answer was withheld or cut by the
	// provider's content filter or a refusal (stop reason
	// "content_filter", "refusal", "SAFETY", ...). Run returns it with
	// the result, whose Output holds whatever text came.
	ErrFiltered = errors.New("agentloop: answer filtered")
	// ErrMaxChildren means a spawn would exceed Config.MaxChildrenPerRun.
	ErrMaxChildren = errors.New("agentloop: child agent limit reached")
)

// LimitError is returned by [Agent.Run] when a limit stops the run before
// the model gave a final answer. Result holds everything done so far: the
// messages (including every tool result), the steps, the usage. The thread
// checkpoint holds the same messages, so a later run continues from there.
type LimitError struct {
	// Limit is ErrMaxSteps, ErrMaxTokens or ErrTimeout.
	Limit error
	// Result is the partial result.
	Result *Result
	// Cause is the underlying error, if any (context.DeadlineExceeded for
	// a timeout).
	Cause error
}

// Error describes the limit and how far the run got.
func (e *LimitError) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%v after %d steps: %v", e.Limit, e.Result.Steps, e.Cause)
	}
	return fmt.Sprintf("%v after %d steps", e.Limit, e.Result.Steps)
}

// Unwrap returns the limit sentinel and the cause, so errors.Is matches
// both.
func (e *LimitError) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Limit, e.Cause}
	}
	return []error{e.Limit}
}
