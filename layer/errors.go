package layer

import (
	"errors"
	"fmt"
)

// Errors reported by this package. Check them with [errors.Is]; they are
// usually wrapped in an [*Error] naming the layer and hook.
var (
	// ErrInvalidSpec means a layer's Spec is unusable: a bad ID, a bad
	// scope, a negative or inverted budget, a negative timeout, or an ID
	// that another layer of the same stack already has.
	ErrInvalidSpec = errors.New("layer: invalid spec")
	// ErrTimeout means a hook did not finish within its timeout.
	ErrTimeout = errors.New("layer: hook timed out")
	// ErrClosed means the stack is not open: it was used before Init,
	// after a failed Init, or after Close. The message says which.
	ErrClosed = errors.New("layer: stack not open")
	// ErrUnknownTool means a tool name matches no provided function.
	ErrUnknownTool = errors.New("layer: unknown tool")
	// ErrInvalidArguments means tool arguments are not a JSON object or
	// fail the function's parameter schema.
	ErrInvalidArguments = errors.New("layer: invalid tool arguments")
	// ErrSnapshot means a snapshot cannot be restored: malformed, from a
	// newer format, or taken from a stack with other layers.
	ErrSnapshot = errors.New("layer: unusable snapshot")
	// ErrPanic means a hook panicked; the panic value is in the message.
	ErrPanic = errors.New("layer: hook panicked")
	// ErrTemplate means a method that reads or writes a run's memory was
	// called on a template: the layer a constructor returns, which
	// belongs to no run. The layer its Init returns for a run has that
	// memory. A built-in layer reports it from such a method, wrapped
	// with its package, layer ID and method ("semanticmemory: Remember on
	// the template of layer "semantic_memory": call Init first: layer: not
	// bound"), instead of using a store that no agent reads.
	ErrTemplate = errors.New("layer: not bound")
)

// The names of the calls into a layer, as [Error.Hook] and [HookCall.Hook]
// report them: the lifecycle hooks "init", "recall", "store", "onSpawn",
// "onReturn" and "close"; "tool" (a provided function called through
// [Stack.CallTool]); "situation" (a [Situator], before Recall); and
// "snapshot", "restore" and "clear".
const (
	hookInit     = "init"
	hookRecall   = "recall"
	hookStore    = "store"
	hookSpawn    = "onSpawn"
	hookReturn   = "onReturn"
	hookClose    = "close"
	hookTool     = "tool"
	hookSnapshot = "snapshot"
	hookRestore  = "restore"
	hookClear    = "clear"
	// hookSituation is a [Situator]'s call, before Recall.
	hookSituation = "situation"
)

// Error is a failure of one hook of one layer.
type Error struct {
	Layer string // the layer's ID
	Hook  string // the call's name, as in HookCall.Hook
	Err   error
}

// Error returns "layer <id>: <hook>: <cause>".
func (e *Error) Error() string {
	return fmt.Sprintf("layer %s: %s: %v", e.Layer, e.Hook, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }
