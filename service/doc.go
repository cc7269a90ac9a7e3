// Package service is a user's memory for code outside the agent loop: an
// HTTP handler, a support dashboard, a job that seeds a profile before a
// user's first conversation.
//
//	mem, err := service.New(store, service.Config{})
//	f, err := mem.Add(ctx, "ada", service.Memo{Kind: "profile", Text: "Ada lives in Lisbon."})
//	hits, err := mem.Search(ctx, "ada", service.Query{Text: "where does Ada live", Kind: "profile"})
//	err = mem.Delete(ctx, "ada", f.ID)
//
// A [Memory] offers, by user and on any storage.Store: [Memory.Add] (a
// fact), [Memory.AddMessages] (a conversation, through extractors),
// [Memory.Search] (a query, a kind filter, top k), [Memory.Get],
// [Memory.List] (paged), [Memory.Update] and [Memory.Delete] by fact ID,
// [Memory.History] (a fact's versions) and [Memory.EraseUser]. The type
// is named Memory because it is what the caller holds: service.Memory is
// one namespace of the users' memory, served to code; it has no Env, no
// Init and nothing to type-assert.
//
// # The same memory as the agent's
//
// A Memory reads and writes the facts of package semanticmemory, through
// that layer itself: each call binds the layer to the user, as an
// agent's run does, and calls it. So a fact added here is in the next
// agent run's prompt, an agent's memorized fact is found here, and the
// store's keys, search index, versions and quarantine are the layer's.
// Give Config.Facts the agent's semanticmemory.Config (the same ID, kinds
// pinned, Embedder) so that both rank and pin the same way.
//
// A user is the agent's resource ID (layer.Env.ResourceID): facts are
// kept in the layer's resource scope. An empty user is an error wrapping
// [ErrInvalidUser]; users' IDs never share keys, whatever they hold ("a"
// and "a/b" are two users). The namespace is the semantic layer's ID
// (Config.Facts.ID, "semantic_memory" by default): an agent with two semantic
// layers has two namespaces, and a Memory serves one. Memories of several
// namespaces share a store.
//
// # Writes go the loop's way
//
// A fact added here takes the path of the agent's memorize tool: its text
// is masked by Config.Redaction (package redact, on by default, as in an
// agentloop.Agent), the write is routed and gated by Config.Router
// (package route; route.Default sends kinds fact, preference, profile,
// decision, ... to semantic memory, and gates a write by its importance,
// its novelty and its size), and the route, the write, a superseded
// version and what was masked are recorded in the audit (Config.Audit).
// A write the router sends elsewhere or the gate refuses (a word-for-word
// restatement of a stored fact, say) is an error wrapping [ErrRefused]. A
// fact that restates a live fact of its kind in other words supersedes
// it, as in the loop (semanticmemory.SupersedeThreshold).
//
// [Memory.AddMessages] hands a conversation to Config.Extractors, layers
// whose Store proposes writes (layer.Proposer), as the loop hands each
// turn to its layers; their proposals are masked, routed, kept and
// audited as the loop keeps them. With Config.Facts.Consolidate, semantic
// memory's model-based consolidation also reads each turn, and adds,
// updates or deletes facts (see semanticmemory.Consolidator), masked,
// gated and audited as in the loop; AddMessages waits for it. Without
// an extractor or a consolidating model, AddMessages is an error
// wrapping [ErrNoExtractor].
//
// Each write is audited as one turn of the thread Config.AuditThread
// names for the user ("memory-service:<user>" by default), recorded as
// the user's, so [Memory.EraseUser] erases it with the rest. A failed
// audit commit is logged and does not fail the write, as in the loop.
//
// # Erase
//
// [Memory.EraseUser] erases everything stored for the user, by every
// layer and in every namespace: it is inspect.Inspector's EraseResource
// (threads, layer records, search collections, audits), and leaves every
// other user's memory as it was.
//
// # Cost
//
// Each call binds the layer as a run's Init does (it reads the layer's
// head and its index's marker). Add, Update, Delete, Get and Search then
// query the search index and read the records it names, as a run does:
// they read no record that grows with the user's facts. List and History
// read the user's whole fact log, as semanticmemory's audit view does.
// On a store without search (not a storage.Searcher) each call reads the
// newest Config.Facts.FallbackFacts fact versions into an index of its
// own, as a run does there.
//
// A Memory is safe for concurrent use; it keeps no state between calls,
// so several processes may serve the same users on one store.
package service
