// Package audit keeps the audit trail of a thread's memory: every memory
// operation of a turn — a recall (which candidates, their scores, what
// was packed), a write, the route a write took or the reason it was
// refused, a superseded or forgotten fact, an eviction, a redaction — as
// an [Event], and the events of one turn as a [Turn], stored with the
// thread through storage.Store, so the memory, SQLite and Redis backends
// all keep it.
//
// agentloop records the events of each run and commits them as one turn
// when the run ends (see agentloop.AuditConfig); code that uses the
// layers outside the agent loop commits its own turns with [Log.Commit]:
//
//	log := audit.New(audit.Config{Store: store})
//	turn, err := log.Commit(ctx, threadID, []audit.Event{
//		{Op: audit.OpWrite, Layer: "semantic", Key: "f3", Kind: "preference", Text: "The user prefers tea."},
//	})
//	turns, err := log.Turns(ctx, threadID) // oldest first
//
// # Storage
//
// Turn n of a thread is one value under storage.ThreadKey(threadID,
// "audit.<n in 16 digits>"), beside the thread's checkpoint (agentloop's
// Inspector erases it with the thread). A thread keeps its last
// Config.Keep turns ([DefaultKeep] by default): committing a turn
// deletes the one it pushes out, so the audit of a long thread stays
// bounded and a commit writes one turn, never the thread's whole audit.
// A commit is a create-only Put (which claims the turn's number: two
// commits never share one) and a Delete; a Log lists the thread's turns
// only for its first commit on a thread, or when another process took
// the number it expected.
//
// A stored turn that cannot be decoded, or that a newer version of this
// package wrote, is skipped by [Log.Turns] with a warning through
// Config.Logger; it never stops a commit, and retention deletes it in
// its time. A run never fails because of its audit: agentloop reports a
// failed commit as an EventAudit with its error.
package audit
