package workingmemory

import "errors"

// Errors of this package. Check them with [errors.Is]: they are always
// wrapped with details (which key, which limit, what was sent).
var (
	// ErrInvalidConfig means a Config cannot be used: a bad
	// ID, a schema that does not compile, a template that fails it.
	ErrInvalidConfig = errors.New("workingmemory: invalid config")
	// ErrInvalidUpdate means update arguments are not valid JSON, not a
	// JSON object, or carry a malformed $delete list.
	ErrInvalidUpdate = errors.New("workingmemory: invalid update")
	// ErrSchema means the merged state fails the schema; the error is a
	// [*SchemaError] listing every violation.
	ErrSchema = errors.New("workingmemory: update rejected by schema")
	// ErrTooLarge means the merged state would exceed Config.MaxBytes.
	ErrTooLarge = errors.New("workingmemory: state too large")
	// ErrTooDeep means a value nests deeper than Config.MaxDepth.
	ErrTooDeep = errors.New("workingmemory: value nested too deeply")
	// ErrReadOnly means the scratchpad was configured read-only.
	ErrReadOnly = errors.New("workingmemory: read-only")
	// ErrConflict means an update kept losing compare-and-swap races
	// against other writers and gave up after Config.MaxRetries attempts.
	// It also matches storage.ErrConflict.
	ErrConflict = errors.New("workingmemory: too many concurrent writers")
	// ErrMaybeApplied means the store reported a write as failed (a
	// deadline, a lost connection) and reading the state back could not
	// tell whether the write landed anyway: the read failed too, or more
	// writes followed than the write log keeps (16). The error also wraps
	// the store's error. Look at the state before sending the update
	// again.
	ErrMaybeApplied = errors.New("workingmemory: update may have been applied (look at the working memory before sending it again)")
)
