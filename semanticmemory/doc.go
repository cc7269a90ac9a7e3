// Package semanticmemory is the semantic memory layer (ID
// "semantic_memory", its facts stored under "semantic",
// [DefaultStorageID]): distilled facts
// about a resource (a user, a project) — or a thread, or everyone — that
// outlive any one conversation, recalled by hybrid retrieval for the
// user's latest message.
//
//	facts, err := semanticmemory.New(semanticmemory.Config{})
//	agent, err := agentloop.New(agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{facts}})
//
// The model writes facts with the layer's "memorize" tool
// ("semantic_memory_memorize"); code writes
// them with [Layer.Remember] on the layer a run initialized.
//
// # Facts
//
// A [Fact] has an ID, one line of text, a kind ("preference", "profile",
// "fact" ...), an importance in [0, 1], a [Source] (who wrote it, in which
// thread, step and tool), its created and updated times and a version.
// The model writes facts through the layer's tools, "memorize" {text,
// kind, importance} and "forget" {id}; code through [Layer.Remember],
// [Layer.Update], [Layer.Forget], [Layer.Get], [Layer.Facts],
// [Layer.Versions], [Layer.Search] and [Layer.SearchKind] on the layer
// Init returns (package service offers them by user, without Init). On the template New returns they fail with an
// error wrapping layer.ErrTemplate: a template belongs to no run.
//
// A new fact that restates a live fact of the same kind — the Jaccard
// index of their distinct tokens is at least [SupersedeThreshold] (0.7) —
// supersedes it: it is written as that fact's next version, with its ID,
// instead of piling up beside it. Forgetting writes a last version marked
// Forgotten. Every version stays stored for the audit ([Layer.Versions]);
// only the last version of a fact not forgotten is recalled.
//
// # Retrieval
//
// Recall queries the store's search index (storage.Searcher) with the
// situation (layer.Query.Situation: the user's message, the scratchpad's goal
// and plan, the entities the recent turns touched). Sparse: the index's
// text ranking (BM25 in the in-memory store, the backend's full-text rank
// elsewhere). Dense, optional: the cosine similarity of the query's
// embedding to the facts' (Config.Embedder, any langchaingo
// embeddings.Embedder; each fact version is embedded once when written,
// and the embedding is stored with it and is its index document's
// vector), or the search of a langchaingo vector store ([VectorStore]).
// Without a dense ranker retrieval is sparse alone. The rankings (equal
// scores ordered by fact ID) are fused by reciprocal-rank fusion with
// k = 60 ([RRFK]): a fact scores Σ 1/(60 + rank) over the rankings that
// found it; facts are ordered by that score, ties broken by fact ID, so
// the same facts and query always give the same block, byte for byte.
// [Layer.Candidates] offers the facts to prompt.Assemble with the best of
// the rankers' own similarities (the text score divided by the query's
// top score, the cosine), in [0, 1]: the fused score orders, it does not
// say how well a fact matches.
//
// Facts that describe the user — the kinds in Config.PinKinds, "profile"
// and "preference" by default — and facts of importance at least
// Config.PinImportance (0.8) are pinned: Recall shows them first, the
// newest first and at most Config.MaxPinned (4), whatever the query, by
// a filtered query of the index that reads no text.
//
// # Storage
//
// Facts persist through storage.Store only, so the memory, SQLite and
// Redis backends all work and several processes share the facts of a
// resource. The layout is the episodic layer's: a head under
// LayerKey(id, scope, "head") names the records [Base, Next), and record
// n, under LayerKey(id, scope, "r-<n>"), holds fact versions. A write
// claims the next number by creating its record (create-only), then
// publishes it by advancing the head with compare-and-swap; a writer
// that finds a number taken publishes that record and tries the next.
//
// The records are the source of truth; the index is derived from them.
// The collection storage.IndexName(id, scope, "facts") holds one
// document per live fact (its last version), a tombstone without text
// per forgotten or evicted one, and a marker naming the records it
// covers. A writer indexes its
// record after the record is published, before Remember or Forget
// returns, so a fact acknowledged by another process before a Recall
// starts is in it. Init reads the head and the marker and applies the
// records the index lacks: none in a steady state, every record once
// when a log written before the index is first used (that is the
// migration: nothing else is needed). So Init and Recall read nothing
// that grows with the number of facts; superseded and forgotten versions
// stay stored for the audit ([Layer.Versions], [Layer.Facts],
// [Layer.Snapshot] read the whole log) and no run reads them again. A
// new fact is compared with the facts of its kind the index ranks best
// for its text to find the one it restates. Erasing a scope drops its
// collections with storage.DropIndexes beside deleting its records.
//
// A store without search gets an index of the run's own
// (storage.MemoryIndex), filled from the newest records holding
// Config.FallbackFacts (4,096) fact versions; older facts are not
// recalled there, and each Recall reads the head (one Get) and the
// records written since.
//
// A record that cannot be decoded is moved aside with storage.Quarantine
// and reported; one from a newer version of this package ([ErrVersion])
// fails the read and is left untouched. Clear and Restore write one
// record that replaces every fact before it, so a reader sees the old
// facts or the new ones, never a mix; then they move the head's Base to
// it, delete the older records, and rebuild the index from it.
//
// # Capacity and eviction
//
// A scope's live facts are bounded by count and by tokens
// (Config.Capacity: 100,000 facts and 4,000,000 tokens by default). A
// write that would pass either bound evicts, in the same record, the
// facts of lowest utility density, importance × exp(−λΔt) × (1 + uses)
// per token (see [Capacity]); facts of importance 0.9 or more are
// guarded and never evicted, and a write that only guarded facts could
// make room for fails with [ErrCapacity] and writes nothing. An evicted
// fact gets a last version marked Evicted: like a forgotten one it is
// not recalled, and its versions stay readable for the audit.
//
// The cost of a write does not grow with the facts. The head holds a
// small ledger (the live facts' count and tokens, and the lowest
// eviction band in use); every record carries the ledger after it and
// publishing the record installs it, under the head's compare-and-swap,
// so the count is exact however many processes write at once. The
// collection storage.IndexName(id, scope, "evict") holds one document
// per fact that may be evicted, with its density's band (see
// internal/evict): a write below the capacity adds one index document;
// a write at it also queries the lowest band (once per band found empty
// since) and reads the victim's record. Uses count the runs that
// showed a fact (its Recall, or scored assembly's RenderBlock), at most
// one per HalfLife/64 (11 hours by default); a run notes them in memory
// and writes them at Close: one index query per fact shown, and one
// index write when one is counted. The counts live in the index
// only: an index rebuilt from the records counts afresh. A log written
// before the ledger gets one at its first write, reading every record
// once. A forgotten or
// evicted fact leaves a tombstone in the facts' collection, so a process
// applying an old record late cannot bring it back; the index has no
// compare-and-swap, and only a process stalled between the lookup and
// the write of one document, while another applies several records, can
// still do so: then the memory may hold one fact over its capacity.
//
// # Skills
//
// The layer learns skills, procedural memory, from what the agent does:
// its Store follows each turn's tool calls, and a sequence of calls that
// ends a turn in success Config.Skills.MinSuccesses times (2 by default),
// in any of the scope's threads, becomes a [Skill], kept as a fact of
// kind [SkillKind]. A skill holds a name, its steps (each a tool and the
// shape of its arguments: keys sorted, IDs, free text, times, URLs and
// numbers as placeholders such as <id>, one-word lowercase values such
// as "published" kept), the requests that started it (its triggers),
// its success count and its evidence: the thread and tool call IDs of
// its turns, which the episodic memory's read tool takes as references.
// Sequences of the same steps are one skill. Its successes are counted
// in the scope's candidate record and added to its fact, as its next
// version with the count, evidence (the newest Config.Skills.MaxEvidence)
// and triggers updated, each time they would double its count: a skill
// in use writes a version at 4, 8, 16 ... successes, and its text shows
// the count of the last (Layer.Skills adds those since). Its text names it,
// its triggers and its steps, so Recall offers it, through the index
// like any fact, to a request that shares their words:
//
//	[f12 skill] Skill "publish page" (succeeded 4 times; for requests like "Publish the About page"): cms_getPage {"id":"<id>"} → cms_updatePage {"id":"<id>","status":"published"}
//
// A turn is a success when no call of it failed (a tool error, or a
// result that says so: a JSON object with a non-empty "error" or
// "errors", "ok" or "success" false, a failure "status", or text that
// starts with "error" or "failed") and the model's answer reports no
// failure ("failed", "could not", "unable", "sorry" ...). A failed turn,
// or one the run left unanswered, counts for nothing. The calls of the
// built-in memory layers' tools (Config.Skills.IgnoreTools) are not
// steps.
//
// Extraction is incremental: a turn's calls are kept in memory until the
// turn ends; a successful turn then finds its skill by signature in the
// index and writes its next version, or counts its sequence in one of
// eight small candidate records of the scope (at most
// Config.Skills.MaxCandidates sequences, the least recently seen dropped
// first). Nothing grows with the log. An unreadable candidate record is
// reported and replaced (later successes rebuild its counts); one from a
// newer version of this package fails Store with [ErrVersion] and is left
// untouched. A skill is named by the verb its
// requests start with and its last tool's object ("publish page"), or by
// a [SkillNamer] such as [ModelNamer], which asks a langchaingo model.
// Config.NoSkills turns extraction off.
//
// # Model-based consolidation
//
// With Config.Consolidate, a langchaingo model reads each turn after it
// ends, proposes the durable facts it states, and decides for each,
// against the stored facts most like it, to add it, update one, delete
// one or do nothing (see [Consolidator]). It runs on a goroutine of the
// run, off the step; [Layer.Close] waits for it. Its writes are masked
// and gated as the memorize tool's, and reported for the audit
// ([Layer.AuditEntries]). Without it the layer stores what it did before.
//
// # Block
//
// Recall renders the best facts, at most Config.TopK and within the
// layer's budget, fenced with fence.Wrap (the tag is the layer ID with
// '_' for '-', <semantic_memory> by default), one line per fact:
//
//	<semantic_memory>
//	[f3 preference] The user prefers tea to coffee.
//	</semantic>
//
// Fact text is collapsed to one line when written, and the fence defangs
// any text that would close or reopen the block.
package semanticmemory
