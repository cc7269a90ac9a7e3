package episodicmemory

import "errors"

// Errors returned by this package. Check them with [errors.Is]: they are
// wrapped with the operation that failed.
var (
	// ErrInvalidConfig means a Config field is out of range or the layer
	// ID is not a valid layer ID.
	ErrInvalidConfig = errors.New("episodicmemory: invalid config")
	// ErrVersion means a stored record or a snapshot was written by a
	// newer version of this package. Nothing is changed.
	ErrVersion = errors.New("episodicmemory: unsupported format version")
	// ErrCorrupt means a stored record or a snapshot is not readable, or
	// a snapshot names the log of a scope not the layer's own. Nothing
	// is changed.
	ErrCorrupt = errors.New("episodicmemory: unreadable record")
	// ErrNoEpisode means no episode has the reference asked for.
	ErrNoEpisode = errors.New("episodicmemory: no such episode")
)
