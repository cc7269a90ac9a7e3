package kv

import "errors"

// Errors of this package. Check them with [errors.Is]: they are always
// wrapped with details (which key, which limit, what was sent).
var (
	// ErrInvalidKey means a key or scope name is empty, too long, or
	// holds control characters or invalid UTF-8 (or, for a scope name, a
	// '/'), or MergeToParent was called on the root.
	ErrInvalidKey = errors.New("kv: invalid key")
	// ErrInvalidValue means a value cannot be serialised to JSON (a
	// channel, a func, a cycle, NaN), does not decode into the type asked
	// for, metadata is out of range, or a snapshot cannot be read.
	ErrInvalidValue = errors.New("kv: invalid value")
	// ErrVersion means a snapshot or stored state was written by a newer
	// version of this package. It also matches ErrInvalidValue. A layer
	// refuses such stored state and leaves it as it is.
	ErrVersion = errors.New("kv: unsupported snapshot version")
	// ErrLimit means a limit was reached; the message names it (entries,
	// entry size or scopes).
	ErrLimit = errors.New("kv: limit reached")
	// ErrDisposed means a scope was used after Dispose.
	ErrDisposed = errors.New("kv: scope disposed")
	// ErrInvalidConfig means a LayerConfig cannot be used (a bad ID or
	// scope), or a state method was called on a layer template (that
	// error matches layer.ErrTemplate too).
	ErrInvalidConfig = errors.New("kv: invalid config")
	// ErrConflict means a persist kept losing compare-and-swap races
	// against other writers and gave up after LayerConfig.MaxRetries
	// attempts. It also matches storage.ErrConflict.
	ErrConflict = errors.New("kv: too many concurrent writers")
)
