// Package thread stores an agent's conversation threads: each thread's
// head, its message segments, its rolling summary, its layer snapshots
// and its owner record, in any storage.Store.
//
// A run reads a thread with [Load] and writes each step with a [Writer]:
//
//	l, err := thread.Load(ctx, store, "thread-1")
//	if err != nil {
//		return err
//	}
//	w := thread.NewWriter(store, "thread-1", l) // l is nil for a new thread
//	err = w.Write(ctx, thread.Step{Messages: []thread.Message{{Role: thread.RoleUser, Text: "hello"}}})
//
// [LoadAll] reads every retained message of a thread, for audit and
// export. The operator API, package inspect, lists and erases threads
// from the key layout alone.
//
// # Threads for applications
//
// A [Catalog] is what an application shows its users: a resource's
// threads newest first, page by page, filtered by metadata; each
// thread's title and metadata; a thread's messages, page by page:
//
//	c := thread.Catalog{Store: store}
//	page, err := c.List(ctx, "user-7", thread.ListQuery{Limit: 20})
//	...
//	title := "Pricing in French"
//	_, err = c.Update(ctx, "thread-1", thread.Update{Title: &title, Set: map[string]string{"project": "acme"}})
//	msgs, err := c.Messages(ctx, "thread-1", thread.MessageQuery{From: -50}) // the last 50
//
// A thread's title is the one set with [Catalog.Update], else the one a
// [Writer] derived from the thread's first request ([DeriveTitle]). The
// request is derived from as stored, after the run's redaction, so a
// title holds nothing the stored messages do not. Package inspect
// deletes a thread (inspect.Inspector.DeleteThread) or a resource.
//
// # The stored thread
//
// A thread is JSON written with encoding/json from this package's own
// types, never from a model library's, so upgrading one cannot change
// what is stored. Each message is a [Message]:
//
//	{"role": "user" | "assistant" | "tool",
//	 "text": "...",                                            (omitted when empty)
//	 "tool_calls": [{"id": "...", "name": "...", "arguments": "{...}"}],  (assistant)
//	 "tool_results": [{"call_id": "...", "name": "...", "content": "..."}]}  (tool)
//
// From version 4 a thread is several records under
// storage.ThreadPrefix(threadID):
//
//	checkpoint              the head: "version", "agent", "thread_id", "resource_id",
//	                        "steps", "usage", "updated_at", "messages" (how many),
//	                        "tail" (the newest segment), "compacted", "summary" and
//	                        "covers", "retained", "snapshot_version", "snapshot_name",
//	                        "layers" (layer ID -> record name)
//	seg.<first>.<nonce>     a step's messages: {"first", "prev", "messages"}
//	sum.<version>.<nonce>   a [Summary]: {"version", "covers", "text"}
//	layer.<id>.<nonce>      one layer's snapshot, written again only when it changes
//	owner                   {"resource_id"}: the owner of a thread no head names one for
//	meta                    {"title", "metadata", "updated_at"}: what [Catalog.Update] set
//
// The head also holds "title", derived from the first request, when the
// thread's first write had one; a head written before titles were has
// none, and its title is derived from its first segment when read.
// Under storage.ResourceKey(resourceID, [IndexName]), a resource's list
// of its threads, {"version": 1, "threads": [...]}, lets [Catalog.List]
// read a resource's threads without listing the store. [IndexedKey]
// marks a store whose older threads were added to the lists.
//
// Only the head is written with compare-and-swap; the others are written
// once, under a new name, before the head that names them. A write that
// loses the compare-and-swap leaves records no head names, which are
// never read. A step writes a segment and a small head (plus the layer
// snapshots that changed and, every few turns, a summary), whatever the
// thread's length. Loading reads the head, the summary, the layers and
// the segments back to the summary's coverage.
//
// When a summary is stored with [Step].Retain set, the messages it
// covers that are older than the last Retain are deleted. The covered
// ones kept have each text, argument or result over [ElideAbove] cut to
// a stub with its size and SHA-256 ([Elided]). The summary's record
// names the covered segments kept, so retention never lists the store.
//
// # Versions
//
// The format has a version ([Version]). Every older version loads and is
// migrated, and the thread's next write is in the current one:
//
//   - Version 1 stored each message as langchaingo v0.1.14 encoded an
//     llms.MessageContent. It marked a compacted tool result only by its
//     text ("[compacted] "), so its messages up to the last such result
//     load as compacted.
//   - Version 2 added "compacted", the compaction watermark.
//   - Version 3 stores each message as a [Message].
//   - Versions 1 to 3 are one record holding the whole thread, rewritten
//     every step. A migrated thread's first write stores its messages as
//     one segment.
//   - Version 4 is the head and records above.
//
// Package threadtest holds a frozen thread of each version, and a test
// loads every one.
package thread
