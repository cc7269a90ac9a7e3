package layer

import (
	"fmt"
	"math"
)

// MaxIDLen is the longest layer ID accepted.
const MaxIDLen = 48

// ValidateID reports whether id is a valid layer ID: lowercase words of
// [a-z0-9] joined by single '-', starting with a letter, at most MaxIDLen
// bytes.
func ValidateID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("layer id %q: must be 1 to %d bytes: %w", id, MaxIDLen, ErrInvalidSpec)
	}
	if id[0] < 'a' || id[0] > 'z' || id[len(id)-1] == '-' {
		return fmt.Errorf("layer id %q: must start with a-z and not end with '-': %w", id, ErrInvalidSpec)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && id[i-1] != '-':
		default:
			return fmt.Errorf("layer id %q: only a-z, 0-9 and single '-' are allowed: %w", id, ErrInvalidSpec)
		}
	}
	return nil
}

// Validate reports whether the spec is usable: a valid ID, a known scope,
// and a budget with no NaN or negative bound and Min <= Max (when Max is
// set).
func (s Spec) Validate() error {
	if err := ValidateID(s.ID); err != nil {
		return err
	}
	switch s.Scope {
	case "", ScopeThread, ScopeResource, ScopeGlobal, ScopeExecution:
	default:
		return fmt.Errorf("layer %s: unknown scope %q: %w", s.ID, s.Scope, ErrInvalidSpec)
	}
	return s.Budget.validate(s.ID)
}

func (b Budget) validate(id string) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"Min", b.Min}, {"Max", b.Max}} {
		if math.IsNaN(f.v) || f.v < 0 { // -Inf included
			return fmt.Errorf("layer %s: budget %s is %v, want a number >= 0: %w", id, f.name, f.v, ErrInvalidSpec)
		}
	}
	if math.IsInf(b.Min, 1) {
		return fmt.Errorf("layer %s: budget Min is +Inf: %w", id, ErrInvalidSpec)
	}
	if b.Max != 0 && b.Min > b.Max {
		return fmt.Errorf("layer %s: budget Min %v exceeds Max %v: %w", id, b.Min, b.Max, ErrInvalidSpec)
	}
	return nil
}

// Unbounded reports whether the budget has no cap (Max is 0 or +Inf).
func (b Budget) Unbounded() bool { return b.Max == 0 || math.IsInf(b.Max, 1) }

// EffectiveScope returns the spec's scope, with the zero value mapped to
// ScopeThread.
func (s Spec) EffectiveScope() Scope {
	if s.Scope == "" {
		return ScopeThread
	}
	return s.Scope
}
