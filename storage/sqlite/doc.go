// Package sqlite is the embedded, durable [storage.Store]: every key lives
// in one SQLite file, read and written through the pure-Go driver
// modernc.org/sqlite (no cgo).
//
// # Opening
//
// A file path is all it needs:
//
//	s, err := sqlite.Open(ctx, sqlite.Config{Path: "memory.db"})
//	...
//	defer s.Close()
//
// The file and its table are created if missing. The zero [Config] opens a
// private in-memory database instead, handy in tests. Open fails at once
// on a file that is not a database ([ErrCorrupt]), is locked by another
// program for longer than [Config.BusyTimeout] ([ErrLocked]) or cannot be
// opened; [Config.ReadOnly] opens an existing store for reading only, and
// its writes fail with [ErrReadOnly].
//
// # Layout
//
// One table, memlayer_kv (key TEXT PRIMARY KEY, value BLOB, version
// INTEGER). Keys compare bytewise, so [Store.List] walks the primary key
// from the prefix and stops at the first key that lacks it: no LIKE or
// GLOB pattern is built, and '%', '_' or '*' in a prefix are plain
// characters.
//
// The search index ([storage.Searcher]) lives in the same file:
// memlayer_docs holds the documents, each with its tokens: its distinct
// terms (those of the library's BM25, stemmed, without English function
// words), each tagged with a hash of its collection, and a hash of each
// of its fields; memlayer_postings (token, doc), a b-tree without
// rowids, holds one row per token of each document, written and deleted
// with the document by triggers; memlayer_doc_stats holds each
// collection's count and total length of documents. A document becomes
// searchable in the transaction that indexes it. A text query reads at
// most the 64 newest documents of each of its terms in the collection,
// one range of the postings' key per term, so its cost does not grow
// with the collection (see [Store.Search]).
//
// A file written by an earlier version, whose index was an FTS5 table
// (of the documents' text ranked by bm25(), or of their tokens), is
// indexed anew the first time it is opened to write: its documents'
// postings are written in one transaction, which takes time in
// proportion to them, and the earlier table and its triggers are
// dropped. Opened read-only before that, it has no search hits.
//
// # Atomicity and concurrency
//
// Every Put is a single SQL statement, so the version check and the write
// cannot be separated, whichever connection or process runs them:
//
//   - NoVersion: INSERT ... ON CONFLICT (key) DO NOTHING (no row inserted
//     means the key exists: [storage.ErrConflict]);
//   - a version: UPDATE ... SET version = version + 1 WHERE key = ? AND
//     version = ? (no row changed: conflict);
//   - AnyVersion: INSERT ... ON CONFLICT DO UPDATE ... RETURNING version.
//
// A key is inserted at [storage.FirstVersion], a random version, so a
// key deleted and created again, or a file deleted and created again,
// never gives a writer holding an old version a match (see "Versions" in
// package storage).
//
// A Store is safe for concurrent use. Its writes go through one writer
// slot (waiting for it honours the context), so goroutines of one process
// queue in Go instead of spinning on SQLite's lock; reads run in parallel
// on a small connection pool. Several Stores or processes may open the
// same file: SQLite's file lock orders their writes, and a writer waits up
// to [Config.BusyTimeout] (default 5s) before failing with [ErrLocked].
// The wait is retried from Go in short steps rather than left to SQLite's
// busy handler, so it also ends as soon as the context does.
// The file lives on a local disk: WAL mode needs shared memory, so network
// file systems are not supported.
//
// # Durability
//
// The database runs in WAL mode. Each write is one transaction, so after a
// crash each value is either the old or the new one, never torn. The
// default [SyncNormal] (synchronous=NORMAL) makes a write survive the
// crash of the process as soon as Put returns; an operating-system crash
// or power loss may lose the last writes before the next checkpoint, but
// never corrupts the file. [SyncFull] (synchronous=FULL) also survives
// power loss, at the price of an fsync per write. The default suits agent
// memory: losing the last step after a power cut is acceptable, a slow
// step is not.
//
// # A file deleted or replaced while open
//
// SQLite keeps writing to the file it opened even after the path was
// deleted or made to name another file (a restored backup, a new volume):
// those writes would succeed and be lost to every later Open. The store
// remembers the file it opened (its device and inode) and, after every
// Put and Delete, checks with one stat(2) that the path still names it;
// when it does not, the write fails with [ErrFileReplaced], as do all
// later writes. A write that fails so may have reached the old file:
// treat it as lost, close the store and open the path again. Reads are
// not checked: they go on returning the old file's contents. The check
// costs one stat(2) per write.
//
// # Erased bytes
//
// The store is opened with SQLite's secure_delete on: a deleted value, and
// the old value of an overwritten key, are overwritten with zeros in the
// database file instead of staying in free pages. Until the write-ahead
// log is checkpointed it still holds earlier page images; [Store.Purge]
// checkpoints it and truncates it to zero bytes (closing the last
// connection does the same). The operator API's erase calls Purge.
//
// # Cancellation
//
// A context that ends before a write's statement starts (while it waits
// for the writer slot or for another process's lock) fails the write with
// an error wrapping ctx.Err(), and nothing is changed. A statement that
// has started runs to its end, since it writes one row.
// Put and Delete then report what it did, success included, even if the
// context ended meanwhile.
// The driver alone would report the context's error for a statement that
// had already committed.
// Reads stop when the context ends.
package sqlite
