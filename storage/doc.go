// Package storage is the persistence contract of memlayer: a small
// versioned key-value [Store] with compare-and-swap, the escaped key layout
// every layer uses, and an in-memory backend ([NewMemory]).
//
// # The contract
//
// A [Store] maps string keys to byte values. Every value carries a version,
// a positive integer that the store increments on each successful write.
// [Store.Put] writes only when the caller names the version it read
// ([NoVersion] for "the key must not exist yet", [AnyVersion] for an
// unconditional write); otherwise it fails with an error that is
// [ErrConflict]. Callers that read-modify-write (a layer merging an update
// into its state) retry on conflict, waiting [WaitRetry] between attempts
// so that contending writers spread out, and two processes updating one
// key never lose an update.
//
// # Keys
//
// Layer state lives under layers/{layerID}/{scopeKey}/{name}; thread
// checkpoints under threads/{threadID}/{name}. Every part is escaped by
// [Escape], so no thread or resource ID, whatever bytes it holds (/, ..,
// NUL, newline), can reach another's keys. Build keys with [LayerKey],
// [LayerPrefix] and [ThreadKey] rather than by hand.
//
// # Backends
//
// [NewMemory] is the in-process default. Durable backends live in
// subpackages: storage/sqlite (embedded, one file) and storage/redis (shared
// by many processes and machines). Every backend passes the conformance
// suite in storage/storagetest.
//
// Errors are checked with [errors.Is]: a backend wraps [ErrNotFound] and
// [ErrConflict] with context, never returns them bare-equal only.
package storage
