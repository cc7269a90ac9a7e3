package prompt

import "errors"

// Errors reported by this package. Check them with [errors.Is]; they are
// wrapped with the detail (the field, the line, the variable).
var (
	// ErrInvalidBudget means an allocation request is unusable: a
	// negative size, a negative or inverted layer budget, a duplicate
	// layer ID, or budgets adding up past layer.Unbounded. The message
	// names the field.
	ErrInvalidBudget = errors.New("prompt: invalid budget")
	// ErrTemplate means a template, partial or helper could not be
	// parsed or registered. The message names the line where raymond
	// reports one.
	ErrTemplate = errors.New("prompt: invalid template")
	// ErrRender means a template failed while rendering: a helper
	// returned an error or panicked, or a variable could not be
	// serialised.
	ErrRender = errors.New("prompt: render failed")
	// ErrNameConflict means two values claim one template variable: a
	// user variable named "layers" or "instructions", or two layers (or
	// a layer and a reserved name) whose IDs map to the same camelCase
	// name.
	ErrNameConflict = errors.New("prompt: template variable conflict")
)
