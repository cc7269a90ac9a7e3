package entitymemory

import "errors"

// Errors returned by this package. Check them with [errors.Is]: they are
// wrapped with the operation that failed.
var (
	// ErrInvalidConfig means a Config field is out of range or the layer
	// ID is not a valid layer ID.
	ErrInvalidConfig = errors.New("entitymemory: invalid config")
	// ErrVersion means stored or snapshot state was written by a newer
	// version of this package. Nothing is changed.
	ErrVersion = errors.New("entitymemory: unsupported state version")
	// ErrCorrupt means stored or snapshot state is not readable. Nothing
	// is changed.
	ErrCorrupt = errors.New("entitymemory: unreadable state")
)
