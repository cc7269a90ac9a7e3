// Package episodicmemory is the episodic memory layer: a time-ordered log
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
//	Earlier tool calls and turns, oldest first. [ref] is the reference: call episodic-memory_read with {"ref": "..."} to read a full result.
//	[call_3] step 1 cms_createPage {"title":"About"} → ok, 812 bytes: About, page-123
//	[turn-4] step 2 turn: "Create an About page" → answered: Done: page-123 is live.
//	</episodic_memory>
//
// and the model reads any episode's full result with the tool
// "episodic-memory_read" and the
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
// Recall scores each candidate (the digests and raw episodes the run
// holds) by similarity to the input — BM25 over the digest lines,
// normalised by the best score (package internal/lexical, shared with the
// semantic layer) — and by recency in episodes, takes the best
// Config.MaxRecall that fit the budget, and shows them oldest first. It
// depends on nothing but the log and the input: no clock, no randomness,
// and a run that loads the log afresh recalls what a long-running one
// does.
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
// # Compaction and retention
//
// Past Config.CompactAfter raw episodes (64) or Config.CompactTokens
// tokens (50,000), the oldest are folded into digests, written as one
// digest record, until half of each threshold remains. Digests keep the
// references; a run holds the newest Config.MaxDigests (512) of them.
// Raw episodes stay stored, and the read tool returns them, until they
// fall Config.Retain segments (1,000 steps) behind; then they are deleted
// and the read tool gives the digest instead.
//
// # Snapshots, spawn and failures
//
// Snapshot returns a bounded summary of the run's view as versioned JSON
// (the newest 64 digests and the raw episodes, results cut at 256 bytes:
// agentloop checkpoints it at every step, and the log itself is in the
// store); Restore replaces the log with one, and is a no-op for a
// snapshot equal to the current one. A child agent of
// a thread-scoped layer starts with an empty, unpersisted log; a
// resource-scoped layer's child appends to the resource's log. A stored
// record that cannot be read is set aside with storage.Quarantine and
// reported; a record from a newer version fails Init and is left alone.
package episodicmemory
