// Package audit keeps the audit trail of a thread's memory: every memory
// operation of a turn — a recall (which candidates, their scores, what
// was packed), a write, the route a write took or the reason it was
// refused, a superseded or forgotten fact, an eviction, a redaction — as
// an [Entry], and the entries of one turn as a [Turn], stored with the
// thread through storage.Store, so the memory, SQLite and Redis backends
// all keep it.
//
// agentloop records the entries of each run and commits them as one turn
// when the run ends (see agentloop.AuditConfig); code that uses the
// layers outside the agent loop commits its own turns with [Log.Commit]:
//
//	log := audit.New(audit.Config{Store: store})
//	turn, err := log.Commit(ctx, threadID, []audit.Entry{
//		{Op: audit.OpWrite, Layer: "semantic_memory", Key: "f3", Kind: "preference", Text: "The user prefers tea."},
//	})
//	turns, err := log.Turns(ctx, threadID) // oldest first
//
// A turn's [Commit] ([Turn.Commit], or [CommitOf] of any entries) sorts
// what it did to memory into its writes (each with its size), its routes
// (kept or refused, with the reason) and its evictions (the records
// pushed out): agentloop returns it with each run as Result.Commit, and
// code outside the loop makes the same value from the entries it
// records or the turns it reads.
//
// # Storage
//
// A thread's audit is stored with the thread: a small head under
// storage.ThreadKey(threadID, [Name]) holds the number of its last turn,
// and the Keep it was written with, and turn n is stored in slot n mod
// Keep, under
// storage.ThreadKey(threadID, "audit.<slot>"). A thread so keeps its last
// Keep turns ([DefaultKeep] by default) in at most Keep+1 keys, a commit
// writes one turn (never the thread's whole audit), and no commit or read
// ever lists keys. agentloop's Inspector erases the audit with the
// thread.
//
// A commit is two writes: a compare-and-swap of the head, which claims
// the turn's number (two commits never share one, across processes
// too), then the turn, over the turn that falls out of the window. A
// Log remembers the heads it wrote, so only its first commit on a
// thread, or one after another writer moved the head, reads it first.
//
// A stored turn that cannot be decoded, or that a newer version of this
// package wrote, is skipped by [Log.Turns] with a warning through
// Config.Logger; a head that cannot be decoded is reported and replaced
// by the next commit, which numbers from 1 again. None of it stops a
// commit, and a run never fails because of its audit: agentloop reports
// a failed commit as an EventAudit with its error.
package audit
