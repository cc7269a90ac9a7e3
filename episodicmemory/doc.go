// Package episodicmemory is the episodic memory layer (ID
// "episodic_memory", its log stored under "episodic-memory",
// [DefaultStorageID]): a time-ordered log
// of what an agent did — every tool invocation (tool, arguments, result or
// error, duration, step, time, the IDs and names it touched), every
// turn's outcome (the request and the answer) and the notes the agent
// routes to it ([Layer.Note]: an outcome a layer's Store proposed) — per
// thread or per resource, kept in a storage.Store (any backend).
//
// Before each model call the layer recalls the episodes most relevant to
// the user's input, as one-line digests with a reference, in a fenced
// block:
//
//	<episodic_memory>
//	Earlier tool calls and turns, oldest first. [ref] is the reference: call episodic_memory_read with {"ref": "..."} to read a full result.
//	[call_3] step 1 cms_createPage {"title":"About"} → ok, 812 bytes: About, page-123
//	[turn-4] step 2 "Create an About page" → Done: page-123 is live.
//	</episodic_memory>
//
// and the model reads any episode's full result with the tool
// "episodic_memory_read" and the
// reference, a tool call ID. Call IDs are unique in a thread only (a
// provider that gives none gets "call_<n>_<i>" from agentloop in every
// thread), so in a log shared by threads (resource or global scope) a
// tool episode's reference is "<call ID>~<segment>", one episode each; a
// bare call ID reads the reading thread's own episode first, then the
// newest of any thread's. agentloop cuts a tool result longer than
// agentloop.Config.MaxToolResultBytes (16 KiB) in the history; the episode keeps
// it whole (up to Config.MaxResultBytes, 1 MiB by default), and the read
// tool returns it in pages of Config.ReadPageBytes (12 KiB), each under
// the history cap.
//
// # Use
//
//	ep, err := episodicmemory.New(episodicmemory.Config{})
//	agent, err := agentloop.New(agentloop.Config{Model: m, Store: store, Layers: []layer.Layer{ep}})
//
// The zero Config is valid: thread scope, slot layer.SlotEpisodic, the
// defaults documented on [Config]. With layer.ScopeResource every thread
// of a resource appends to one log.
//
// # Recall
//
// Recall queries the store's search index with the situation
// (layer.Query.Situation: the user's message, the scratchpad's goal and plan,
// the entities the recent turns touched). The index holds one document
// per episode of the whole log, its digest line, the same whether the
// episode is raw or folded. Candidates are the episodes the query's text
// ranks best and the most recent ones; each is scored by its text
// similarity (normalised by the best score) and its recency in steps,
// and the best Config.MaxRecall that fit the budget are shown oldest
// first. It depends on nothing but the log and the query: no clock, no
// randomness, and a run that opens the log afresh recalls what a
// long-running one does.
//
// The read tool finds a reference through the index too (a lookup by
// reference or call ID, newest first) and reads the one segment that
// holds the episode; when retention has dropped the segment, it gives
// the digest.
//
// # Storage
//
// The log is append-only: a step writes its episodes once, in a segment
// of its own under the next number (create-only), then advances a small
// head record past it (compare-and-swap). So a step costs the same at
// episode 10 and at episode 10,000, and two processes appending to one
// resource's log lose nothing; a writer that stops between its two
// writes blocks no one (the next writer publishes its segment). See
// [FormatVersion] for the records and their keys.
//
// The records are the source of truth; the index is derived from them.
// It lives in the store when the store can search (storage.Searcher), in
// the collection storage.IndexName(id, scope, "episodes"), with a marker
// naming the segments it covers. A writer indexes its segment after
// publishing it, before Store returns. Init reads the head and the
// marker and indexes the segments the index lacks: none in a steady
// state, the whole log once when a log written before the index is first
// used (that is the migration: nothing else is needed). The view the
// layer writes from (the newest digests and the raw episodes not yet
// folded, bounded by the configuration) is read at the first write. So
// neither Init nor Recall reads anything that grows with the log. Erasing
// a scope drops its collections with storage.DropIndexes beside deleting
// its records.
//
// A store without search gets an index of the run's own
// (storage.MemoryIndex), filled from the view Init reads (the newest
// Config.MaxDigests digests and the raw episodes not yet folded): recall
// covers that view, and the read tool walks the digest records for older
// references.
//
// # Compaction and retention
//
// Past Config.CompactAfter raw episodes (64) or Config.CompactTokens
// tokens (50,000), the oldest are folded into digests, written as one
// digest record, until half of each threshold remains. Digests keep the
// references. Compaction changes no index document. Raw episodes stay
// stored, and the read tool returns them, until they fall Config.Retain
// segments (1,000 steps) behind; then they are deleted and the read tool
// gives the digest instead.
//
// # Task episodes and links
//
// A thread's entries are grouped into task episodes, numbered from 1 in
// each thread ([Episode.Task], also a field of each index document). A
// new one starts at the thread's first entry, at a call of
// [Layer.NewTask], after a pause of Config.EpisodeGap (30 minutes), and
// at a request that turns to another task: none of its targets (the
// entities it names, the values of the arguments of the calls made for
// it) is the task's, and an entity is among them or its words are far
// from the task's ([Layer.Task] says why the current one started). A
// run reads the current task from the thread's newest index documents,
// once.
//
// In a log shared by a resource's threads (layer.ScopeResource), the
// current task is linked to the tasks of the resource's other threads
// that share an entity with it or are lexically close ([Layer.Links]),
// and Recall offers their entries, each line marked with its link. Links
// are found through the log's own index, so they never lead to another
// resource, and erasing a resource leaves none. The steps of a turn that
// ask the same question for links share one search: a new request, a
// new task, the turn's end, another thread's matching entry that the
// run's write finds, a Clear or an erase make the next step search
// again.
//
// # Capacity and eviction
//
// With the store's index, what recall covers is bounded by Config.Capacity
// (100,000 episodes and 4,000,000 tokens of digest lines by default).
// Past a bound, the episodes of lowest utility density leave the index
// first (importance by kind, time decay and use, per token), with a
// sampling term that keeps a long log's old episodes as a sample biased
// toward importance; notes are guarded. An evicted episode stays in the
// log, read by reference and listed by Layer.Evicted. The counts live in
// the head, so below capacity a step does no more I/O.
//
// # Snapshots, spawn and failures
//
// With a store, Snapshot returns a mark of the log's position (its scope
// and head, a few hundred bytes however long the log): agentloop
// checkpoints it at every step, and the log itself is in the store.
// Restore reads the view the mark names back from the log, in the same
// store and scope: a mark naming another scope (another thread's or
// user's) is refused, and nothing is read from it. Without a store, Snapshot is a bounded copy of the view (the
// newest 8 digests and 8 raw episodes, results cut at 128 bytes), the
// form earlier versions wrote with a store too; Restore still reads it.
// Restore replaces the log, and is a no-op for a snapshot equal to the
// current state. A child agent of
// a thread-scoped layer starts with an empty, unpersisted log; a
// resource-scoped layer's child appends to the resource's log. A stored
// record that cannot be read is set aside with storage.Quarantine and
// reported; a record from a newer version fails the read that meets it (Init reads
// the head; the first write reads the view) and is left alone.
package episodicmemory
