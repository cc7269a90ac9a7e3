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
// The store keeps three tables in [Config.Schema] (the connection's
// current schema when empty), named by [Config.Prefix] (memlayer_ by
// default): kv (the records), docs (the search index) and meta (the
// schema version). Identifiers are quoted; keys, values and documents
// are always statement parameters, never part of the SQL text. [Open]
// creates the tables on first use and records [SchemaVersion]; tables of
// an earlier version are migrated in one transaction, under an advisory
// lock so that processes opening at once do not race. Tables written by
// a newer version are refused.
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
// A document's text is indexed as a tsvector (English stemming and stop
// words) with a GIN index. A text query matches the documents that share
// any of its words (OR, so recall does not need every word), ranked by
// the words' rarity among the matches, with ts_rank_cd to break ties.
// Vectors are stored as real[] arrays and re-rank the text query's
// candidates and the collection's most recent documents (up to 1,000 of
// each); they are not searched over the whole collection. pgvector is not
// used.
//
// [Store.Purge] rewrites the tables (VACUUM FULL) so that deleted values
// leave no dead row behind.
package postgres
