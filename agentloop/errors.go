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
