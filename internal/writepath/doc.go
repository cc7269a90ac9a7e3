// Package writepath is the write path the agent loop and the langchaingo
// memory share: it masks what a run keeps (Redactor), routes and keeps
// memory writes in a stack's layers (Keeper), and records each route,
// write and masking in the run's audit (Auditor).
package writepath

import "errors"

// ErrPanic is agentloop.ErrPanic: a panic recovered in a model call, a
// tool, a child agent, a router or a Proposer.
var ErrPanic = errors.New("agentloop: panic")
