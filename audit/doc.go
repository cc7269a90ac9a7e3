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
// A thread's turns are one value under storage.ThreadKey(threadID,
// [Name]), beside the thread's checkpoint (agentloop's Inspector erases
// it with the thread). It holds the last Config.Keep turns
// ([DefaultKeep] by default): committing a turn drops the oldest beyond
// that, so the audit of a long thread stays bounded. A commit is a Get
// and a compare-and-swap Put (two round trips, retried on a lost race):
// one value per thread, rather than one per turn, so that retention never
// needs a List and never leaves a key behind.
//
// A stored value that is not an audit record is moved aside, under
// storage.ThreadKey(threadID, [Name]+".quarantine.<unix-nanos>"), and
// reported through Config.Logger; the next commit starts afresh. A turn
// inside a readable record that cannot be decoded is skipped, with a
// warning, by [Log.Turns] and dropped by the next commit. A record written
// by a newer version of this package fails both with [ErrVersion] and is
// left untouched. A run never fails because of its audit: agentloop
// reports a failed commit as an EventAudit with its error.
package audit
