package workingmemory

import "errors"

// Errors of this package. Check them with [errors.Is]: they are always
// wrapped with details (which key, which limit, what was sent).
var (
	// ErrInvalidConfig means a Config or KVConfig cannot be used: a bad
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

	// ErrInvalidKey means a key-value key is empty, too long, or holds
	// control characters or invalid UTF-8.
	ErrInvalidKey = errors.New("workingmemory: invalid key")
	// ErrInvalidValue means a key-value value cannot be serialised to
	// JSON (a channel, a func, a cycle, NaN) or metadata is out of range.
	ErrInvalidValue = errors.New("workingmemory: invalid value")
	// ErrLimit means a key-value limit was reached; the message names it
	// (entries, entry size or scopes).
	ErrLimit = errors.New("workingmemory: limit reached")
	// ErrDisposed means a key-value scope was used after Dispose.
	ErrDisposed = errors.New("workingmemory: scope disposed")
	// ErrScopeExists means a child scope of that name already exists.
	ErrScopeExists = errors.New("workingmemory: scope exists")
)
