package layer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxIDLen is the longest layer ID accepted.
const maxIDLen = 48

// validateID reports whether id is a valid layer ID (see [Spec.ID]).
func validateID(id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("layer id %q: must be 1 to %d bytes: %w", id, maxIDLen, ErrInvalidSpec)
	}
	if last := id[len(id)-1]; id[0] < 'a' || id[0] > 'z' || last == '-' || last == '_' {
		return fmt.Errorf("layer id %q: must start with a-z and not end with '-' or '_': %w", id, ErrInvalidSpec)
	}
	if strings.ContainsFunc(id, notIDChar) || repeatedSeparator(id) {
		return fmt.Errorf("layer id %q: only a-z, 0-9 and single '_' or '-' are allowed: %w", id, ErrInvalidSpec)
	}
	return nil
}

// repeatedSeparator reports whether id has two separators ('_' or '-')
// in a row.
func repeatedSeparator(id string) bool {
	for i := 1; i < len(id); i++ {
		if isSeparator(id[i]) && isSeparator(id[i-1]) {
			return true
		}
	}
	return false
}

// isSeparator reports whether c separates the words of a layer ID.
func isSeparator(c byte) bool { return c == '_' || c == '-' }

// idChars are the characters of layer IDs.
const idChars = "abcdefghijklmnopqrstuvwxyz0123456789-_"

// isIDChar marks the bytes of idChars.
var isIDChar = func() (t [256]bool) {
	for i := 0; i < len(idChars); i++ {
		t[idChars[i]] = true
	}
	return t
}()

// notIDChar reports whether r is not one of idChars.
func notIDChar(r rune) bool { return r >= utf8.RuneSelf || !isIDChar[r] }

// Validate reports whether the spec is usable: a valid ID (lowercase words
// of [a-z0-9] joined by single '_' or '-', starting with a letter, at
// most 48 bytes) and StorageID (empty, or valid as an ID), a known scope,
// and a budget with no negative bound and Min <= Max (when Max is set).
// The error wraps [ErrInvalidSpec].
func (s Spec) Validate() error {
	if err := validateID(s.ID); err != nil {
		return err
	}
	if s.StorageID != "" {
		if err := validateID(s.StorageID); err != nil {
			return fmt.Errorf("layer %s: StorageID: %w", s.ID, err)
		}
	}
	switch s.Scope {
	case "", ScopeThread, ScopeResource, ScopeGlobal, ScopeExecution:
	default:
		return fmt.Errorf("layer %s: unknown scope %q: %w", s.ID, s.Scope, ErrInvalidSpec)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("layer %s: Timeout is %v, want >= 0: %w", s.ID, s.Timeout, ErrInvalidSpec)
	}
	return s.Budget.check(s.ID)
}

// StorageName is the name the layer's stored data is keyed by:
// StorageID when set, else ID.
func (s Spec) StorageName() string {
	if s.StorageID != "" {
		return s.StorageID
	}
	return s.ID
}

// check reports whether the budget of layer id has no negative bound and
// Min <= Max (when Max is set).
func (b Budget) check(id string) error {
	switch {
	case b.Min < 0:
		return fmt.Errorf("layer %s: budget Min is %d, want >= 0: %w", id, b.Min, ErrInvalidSpec)
	case b.Max < 0:
		return fmt.Errorf("layer %s: budget Max is %d, want >= 0 (0 or layer.Unbounded for no cap): %w", id, b.Max, ErrInvalidSpec)
	case b.Max != 0 && b.Min > b.Max:
		return fmt.Errorf("layer %s: budget Min %d exceeds Max %d: %w", id, b.Min, b.Max, ErrInvalidSpec)
	}
	return nil
}
