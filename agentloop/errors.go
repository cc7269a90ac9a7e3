package agentloop

import (
	"errors"
	"fmt"

	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// Errors returned by this package. Check them with [errors.Is]: they are
// usually wrapped with the operation that failed. A call of a tool that
// is not offered, and tool arguments that are not a JSON object or fail
// the tool's schema, are layer.ErrUnknownTool and
// layer.ErrInvalidArguments, whether the tool is the agent's, a layer's
// or spawn_agent (and Agent.Spawn without input is
// layer.ErrInvalidArguments); they reach the model as the tool result.
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
	// A failed write is a [*CheckpointError], which says how much of the
	// run the stored thread holds. A write that lost a race with another
	// run of the same thread also matches storage.ErrConflict. It is
	// thread.ErrCheckpoint.
	ErrCheckpoint = thread.ErrCheckpoint
	// ErrCheckpointGone means the thread's stored checkpoint disappeared
	// during the run (the store was restarted empty, the key expired or
	// was deleted): the run's write found no checkpoint where it had read
	// or written one. The run does not recreate it, so a deliberate erase
	// stays erased; the thread starts afresh on the next run with an
	// Input, and the returned Result holds the history the run had. It is
	// wrapped in a [*CheckpointError] and does not match
	// storage.ErrConflict. A run without Input on a thread whose
	// checkpoint is gone but whose other records (transcript segments,
	// audit log) remain fails with ErrCheckpointGone too, before
	// anything runs (and without a CheckpointError).
	ErrCheckpointGone = errors.New("agentloop: the stored checkpoint is gone")
	// ErrInputTooLarge means the user's message alone does not fit the
	// history's share of Config.ContextWindow, so the model is not called.
	ErrInputTooLarge = errors.New("agentloop: user message does not fit the context window")
	// ErrPanic means a model call, a tool or a child agent panicked. The
	// panic is recovered and becomes the error of that call: a model
	// call's ends the run, a tool's or a child's reaches the model as the
	// tool result.
	ErrPanic = writepath.ErrPanic
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
// messages (the window the run loaded and every message of its own, each
// tool result included; see [Result].Messages), the steps, the usage. The
// stored thread holds the same messages (after a timeout too: a step cut
// short during its tools is checkpointed before the run returns), so a
// later run with an empty Input continues from there. If that last
// checkpoint fails, the error returned joins the LimitError and a
// [*CheckpointError].
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

// CheckpointError is a failed checkpoint write of a run. It says how much
// of the run the stored thread held at its last successful write, so a
// caller knows whether the user's message is already in the thread: with
// SavedMessages > 0 it is (another run may have continued the thread
// from there, so sending the Input again would repeat it); with
// SavedMessages == 0 nothing of the run is stored, and retrying with the
// same Input repeats nothing. It matches ErrCheckpoint and Err with
// [errors.Is].
type CheckpointError struct {
	// ThreadID is the thread.
	ThreadID string
	// SavedSteps is how many of the run's steps the stored thread got.
	SavedSteps int
	// SavedMessages is how many of the run's new messages (its user
	// message, if it had one, then each step's AI and tool messages) the
	// stored thread got.
	SavedMessages int
	// Err is the cause: storage.ErrConflict (another run of the thread
	// wrote it), ErrCheckpointGone, or the store's or the encoder's error.
	Err error
}

// Error describes the failure and what was saved before it.
func (e *CheckpointError) Error() string {
	saved := "nothing of this run was saved"
	if e.SavedMessages > 0 {
		saved = fmt.Sprintf("the stored thread got %d of this run's messages, from %d of its steps", e.SavedMessages, e.SavedSteps)
	}
	return fmt.Sprintf("%v: thread %s: %v; %s", ErrCheckpoint, storage.Quote(e.ThreadID), e.Err, saved)
}

// Unwrap returns ErrCheckpoint and the cause.
func (e *CheckpointError) Unwrap() []error { return []error{ErrCheckpoint, e.Err} }
