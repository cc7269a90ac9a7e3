// Package storage is the persistence contract of memlayer: a small
// versioned key-value [Store] with compare-and-swap, the escaped key layout
// every layer uses, and an in-memory backend ([NewMemoryStore]).
//
// A write names the version it read, so a stale writer fails:
//
//	s := storage.NewMemoryStore() // or sqlite.Open, redis.New
//	key := storage.LayerKey("working_memory", "thread-1", "state")
//	v1, err := s.Put(ctx, key, []byte(`{"plan":"draft"}`), storage.NoVersion)
//	_, err = s.Put(ctx, key, []byte(`{"plan":"final"}`), v1) // ok
//	_, err = s.Put(ctx, key, []byte(`{"plan":"stale"}`), v1) // storage.ErrConflict
//
// # The contract
//
// A [Store] maps string keys to byte values. Every value carries a version
// that changes on each successful write. [Store.Put] writes only when the
// caller names the version it read ([NoVersion] for "the key must not
// exist yet", [AnyVersion] for an unconditional write); otherwise it fails
// with an error that is [ErrConflict]. Callers that read-modify-write (a
// layer merging an update into its state) retry on conflict, waiting
// [WaitRetry] between attempts so that contending writers spread out, and
// two processes updating one key never lose an update. A writer should
// wait after the lost race and before it reads again (a wait between its
// read and its write only widens the window another writer wins in);
// [WaitRetryAfter] scales the wait to the time an attempt takes, for
// backends slower than the fixed bounds.
//
// # Versions
//
// A version is an opaque positive int64: compare versions for equality
// only, never with < or by adding one, and do not assume a new key starts
// at 1. A key's versions do not repeat in the life of a store, even after
// the key is deleted (a Clear, a quarantine), expires (a Redis TTL) or the
// whole store is emptied behind the writers' backs (Redis restarted
// without persistence or flushed, an SQLite file deleted and created
// again, a process restarted with a new in-memory store). So a writer
// still holding a version read before any of these always gets
// [ErrConflict], never overwrites data it has not seen (no ABA).
//
// How: a key is created at a random version, [FirstVersion] (uniform in
// [1, 2^62]), and each later write adds one. Nothing needs to survive
// for this to hold, which is the point: a Redis server restarted empty has
// lost any counter it kept, a recreated file any sequence it held. Within
// one life of a key (from its creation to its deletion) the versions are
// consecutive and never repeat. Across lives, a stale version v matches
// only if the new life's range of versions happens to cover v: with m
// writes in the new life that has probability at most m/2^62 (about
// 2×10^-10 for a billion writes to one key), the same order as a random
// UUID colliding. Versions are therefore not ordered across lives (a
// recreated key's version may be smaller), and within one life they are
// ordered only as an accident of the scheme, which callers must not rely
// on.
//
// # Keys
//
// Layer state lives under layers/{layerID}/{scopeKey}/{name}; thread
// checkpoints under threads/{threadID}/{name}; a resource's own records
// (its list of threads) under resources/{resourceID}/{name}. Every part
// is escaped by [Escape], so no thread or resource ID, whatever bytes it
// holds (/, .., NUL, newline), can reach another's keys. Build keys with
// [LayerKey], [LayerPrefix], [ThreadKey] and [ResourceKey] rather than
// by hand.
//
// # Reading several keys
//
// Every backend of this module is also a [MultiGetter]: it reads several
// keys in one round trip (the in-memory store under one hold of its
// lock, storage/sqlite and storage/postgres in one statement,
// storage/redis in one pipeline). Read with [GetMany], which falls back
// to one Get per key on a store without it. The episodic and semantic
// layers read the records of a run's view this way: in one round trip,
// or a few, rather than one per record.
//
// # Search
//
// A store may also be a [Searcher]: it keeps a search index beside its
// records, so that a layer recalls from everything a user's memory holds
// by querying the top k instead of loading it. A layer indexes small
// [Document]s in a collection named by [IndexName] under its scope, and
// erasing the scope drops them ([DropIndexes]). [MemoryStore] searches with
// [MemoryIndex], which ranks by BM25 in the process.
//
// What each backend's search costs, for a collection of n documents, a
// text query whose terms occur in p of them, and k hits:
//
//   - Memory ([MemoryIndex]): a text query scores and sorts every
//     document, O(n log n), however rare its terms;
//     an index write is O(t) for a document of t terms (an unindex, or a
//     replace that changes the text, rebuilds the collection's corpus on
//     the next query, O(n)). A filtered listing without text reads the
//     documents of the filter's rarest value, O(m log m) for m of them.
//     Bounded by the process's memory.
//   - storage/sqlite: a postings table in the same file (a b-tree keyed
//     by term, each term tagged with its collection, and document),
//     ranked by the same BM25 as [MemoryStore]. A text query of q terms
//     reads at most the 64 newest documents of each term in the
//     collection, one range of the key per term, and scores in full the
//     candidates its terms' weights put first: O(log n + k) per term,
//     however large the collection. A term in more than 64 documents
//     is weighed by an estimate and found only in its newest 64, which
//     matters little: such a term weighs little beside a rarer one.
//     Without text, O(k) from an index. An index write is one row and
//     its postings, O(t log n).
//   - storage/redis: a sorted set per term and per field value of a
//     collection, all in the collection's slot. A text query reads each
//     term's newest postings (the same bounds as SQLite) and the sets'
//     sizes, its exact document frequencies, in one round trip: O(q log n).
//     Without text, O(log n + k). An index write is O(t log n) on the
//     server, in one Lua script.
//   - storage/postgres: a postings table keyed by collection, term and
//     ordinal, read backwards per term (the same bounds as SQLite) in one
//     statement: O(q log n). Without text, O(log n + k). An index write
//     is O(t log n), in one transaction that also keeps the collection's
//     counts.
//
// On every backend, a vector query ranks by cosine only the text query's
// best candidates and the most recent documents (SQLite, Redis and
// PostgreSQL: 1,000 of each; Memory: all), and a filter is checked on
// candidates, so a filter that rejects most documents costs more reads
// (SQLite, Redis and PostgreSQL check at most 10,000 of a term's
// documents).
//
// To erase a scope's search data, call [DropIndexes] with the scope's
// [LayerPrefix] for each layer: it lists the collections with
// [Searcher.Collections] and drops each one.
//
// # Backends
//
// [NewMemoryStore] is the in-process default. Durable backends live in
// subpackages: storage/sqlite (embedded, one file), storage/redis (shared
// by many processes and machines) and storage/postgres (shared the same
// way, on the database a service already runs). Every backend passes the conformance
// suite in storage/storagetest.
//
// Errors are checked with [errors.Is]: a backend wraps [ErrNotFound] and
// [ErrConflict] with context, never returns them bare-equal only. Errors
// name keys through [Quote], which shortens a long key to its first 64
// bytes and its size.
package storage
