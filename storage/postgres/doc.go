// Package postgres is a [storage.Store] and [storage.Searcher] kept in
// PostgreSQL tables, through a jackc/pgx v5 connection pool: the backend
// for services that already run PostgreSQL. Any number of processes and
// machines may share one database.
//
// Open it from a URL, or from the application's own *pgxpool.Pool so that
// it shares the pool's tracing and TLS settings:
//
//	st, err := postgres.Open(ctx, postgres.Config{URL: "postgres://app@db/app"})
//
// # Tables
//
// The store keeps five tables in [Config.Schema] (the connection's
// current schema when empty), named by [Config.Prefix] (memlayer_ by
// default): kv (the records); docs, postings and doc_stats (the search
// index: the documents, their terms, and each collection's counts); and
// meta (the schema version). Identifiers are quoted; keys, values and documents
// are always statement parameters, never part of the SQL text. [Open]
// creates the tables on first use and records [SchemaVersion]; tables of
// an earlier version are migrated in one transaction, under an advisory
// lock so that processes opening at once do not race: tables of version
// 2 get every document's postings then, once, in time proportional to
// the documents. Tables written by a newer version are refused.
//
// # Writes
//
// Each Put and Delete is one statement: the version check and the write
// are atomic across connections and processes. Keys sort by byte
// (COLLATE "C"), so List reads one range of the primary key. A new key
// takes the version [storage.FirstVersion] and each write adds one, so a
// version never repeats even if the tables are dropped and created again.
// A write is durable as the server commits it (synchronous_commit).
//
// The store is a [storage.Batcher]: [Store.WriteBatch] sends several
// conditional writes in one round trip as one transaction, all or
// nothing, so that they wait for one flush of the server's log. Package
// thread writes each agent step this way. [Config.AsyncCommit] makes the
// store's sessions acknowledge a commit before the flush, the durability
// of SQLite's default: a server crash then loses the last fraction of a
// second of acknowledged writes.
//
// Reads run under the caller's context: when it ends, pgx cancels the
// statement. A write waits for a connection no longer than ctx allows;
// once sent, it runs to its end whatever ctx does (up to 30 seconds) and
// is reported as it ended, so that a write reported failed has not
// landed. A write whose answer is lost, because the connection broke
// after it was sent, may or may not have been applied: it fails with
// [ErrOutcomeUnknown], which is also
// [storage.ErrNotDurable]. Any other failed write was not applied. A
// server that cannot be reached fails with [ErrUnavailable].
//
// # Search
//
// A document is posted under each of its distinct terms (the terms of
// the in-memory index: words and compounds, English stop words left out,
// plurals and verb endings folded) and under a token of each field, in a
// table whose primary key is (collection, term, seq). A text query reads
// a term's newest postings in the collection, one backward range of that
// key per term and at most 64 of each, so its cost does not grow with
// the collection; it ranks the candidates by the same BM25 as the
// in-memory index, weighing a term it did not read whole by an estimate
// of its documents. Each collection's count and total length of
// documents are kept in the transaction that writes them: writers of
// one collection commit one after another, writers of different
// collections do not wait for each other. A filter without text walks
// the postings of its first field. Vectors are stored as real[] arrays
// and re-rank the text query's candidates and the collection's most
// recent documents (up to 1,000 of each); they are not searched over the
// whole collection. pgvector is not used.
//
// [Store.Purge] rewrites the tables (VACUUM FULL) so that deleted values
// leave no dead row behind.
package postgres
