// Package writepath is the write path the agent loop and the langchaingo
// memory share: it masks what a run keeps (Redactor), routes and keeps
// memory writes in a stack's layers (Keeper), and records each route,
// write and masking in the run's audit (Auditor).
package writepath
