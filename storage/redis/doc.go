// Package redis is the distributed [storage.Store]: memory shared by agent
// processes on many machines through one Redis server or a Redis Cluster,
// using github.com/redis/go-redis/v9.
//
// # Connecting
//
//	s, err := redis.New(redis.Config{
//		URL:       "redis://127.0.0.1:6379/0", // or rediss:// for TLS
//		Namespace: "myapp:",
//	})
//	...
//	defer s.Close()
//
// [New] only parses the URL; the first operation connects, and
// [Store.Ping] checks the server at start-up. The URL takes go-redis's
// options as query parameters (dial_timeout, read_timeout, pool_size,
// max_retries, ...). Context deadlines always bound network waits
// (go-redis's ContextTimeoutEnabled is switched on).
//
// # Redis Cluster
//
// A URL with the scheme redis+cluster:// (rediss+cluster:// for TLS)
// selects Redis Cluster, through go-redis's cluster client:
//
//	redis+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000?dial_timeout=2s
//
// The hosts are seed nodes (one reachable node is enough; the client
// learns the others from it); user:password@ may precede them; the query
// takes go-redis's cluster options (see its ParseClusterURL), and the
// database, if given, must be 0, the only one a cluster has. A caller's
// *goredis.ClusterClient in [Config.Client] works too. [Store.Cluster]
// tells which kind a store is. Leave go-redis's read_only,
// route_by_latency and route_randomly off: they send reads to replicas,
// which may lag, so a read-modify-write would see an old version and lose
// its race until the replica caught up. Everything below holds on both kinds,
// except where a paragraph says otherwise.
//
// # Layout
//
// The store key k lives in the Redis hash Namespace+k, with fields v (the
// value), n (the version, in decimal), and the tokens of the last 16
// writes with the version each made (w:<token>, listed in wl). A key is created at [storage.FirstVersion], a random version
// the client draws, and each write adds one (HINCRBY): nothing kept on the
// server is needed for a key's versions not to repeat, so a key that
// expired, was deleted, or vanished with a server restarted without
// persistence or flushed never matches a version read before (see
// "Versions" in package storage). The scripts compare versions as strings,
// because Lua's numbers cannot hold versions above 2^53 exactly.
// The namespace defaults to "memlayer:" and keeps several applications or
// tenants apart on one database.
//
// On a cluster, keys carry a hash tag so that each thread's and each
// scope's keys sit in one slot, on one master: the thread ID of
// threads/{thread}/... and the scope key (the resource ID, the thread ID,
// ...) of layers/{layer}/{scope}/... are wrapped in braces, so the server
// key of storage.ThreadKey("t1", "checkpoint") is
// "memlayer:threads/{t1}/checkpoint" and every layer's state of resource
// r1 is "memlayer:layers/<layer>/{r1}/...". No operation of the store
// touches more than one key (each script reads and writes only its own
// key), so the tags are not needed for correctness today; they keep a
// thread, and a resource's state, together for whatever later reads or
// removes them as a group. Escaped key parts never hold braces, other keys
// are stored as they are, and the mapping is reversed when listing. A
// namespace holding braces itself ("{app}:") would override the tags and
// put every key in one slot. A single server keeps the plain layout
// (no tags), so data written before cluster support still loads; moving
// data between a single server and a cluster means renaming its keys.
//
// # Atomicity
//
// Put runs one Lua script: read the version, compare, write value and
// version, set or clear the expiry. The server runs scripts one at a time,
// so the check and the write are one step for every client of the server,
// and of many concurrent writers holding the same version exactly one
// wins. A conditional Delete is a script too; Get is one HMGET. Each
// script touches one key, so on a cluster it runs on the master of that
// key's slot, with the same guarantees.
//
// go-redis retries a command whose connection broke. If the reply to a Put
// was lost after the server applied it, the retry finds the write's own
// token and reports the version it made instead of a conflict with
// itself, so a read-modify-write loop does not apply its change twice,
// even when other writers got in between the lost reply and the retry
// (up to 16 later writes of the key; beyond that the retry reports a
// conflict although the first attempt landed).
//
// # Listing
//
// [Store.List] uses SCAN, never KEYS, so a large database is not blocked:
// the pattern is the namespaced prefix with the glob characters * ? [ ]
// and \ escaped, followed by *; each key is checked again with
// strings.HasPrefix, duplicates (SCAN may repeat keys) are dropped, and
// the result is sorted. SCAN is not a snapshot: a key present for the
// whole scan is listed, one created or deleted meanwhile may or may not
// be. Listing costs a walk over the whole database, so keep per-scope
// listing off hot paths on very large databases. On a cluster List scans
// every master (concurrently) and merges, with the same sorting, exact
// prefix match and duplicate removal; the pattern is built on the tagged
// form of the prefix, and the keys found are mapped back before
// matching, so the result is the one a single server gives.
//
// # Expiry
//
// [Config.TTL] maps a key to its time to live, evaluated on every Put, so
// thread- and execution-scoped state can disappear on its own while
// resource-scoped state stays; [PrefixTTL] builds the common rule. An
// expired key is simply missing; written again, it starts at a new random
// version, so a writer holding a version from before the expiry gets
// [storage.ErrConflict].
//
// # Failures
//
// Every error names the package and the operation. When the server is
// down or the connection breaks, the error is [ErrUnavailable] (with
// go-redis's defaults it comes after about two seconds of dial retries;
// dial_timeout and max_retries in the URL, or a context deadline, shorten
// that). Nothing needs to be recreated when the server comes back: the
// connection pool redials. A write that failed this way may or may not
// have been applied; read again before retrying a conditional write. An
// operation whose context ends fails with an error wrapping ctx.Err().
//
// The Store sends a write again itself after a broken connection, as
// often as go-redis would (max_retries; MaxRedirects on a cluster), with
// the token it wrote the first time: a key remembers the tokens of its
// last 16 writes, so a write already applied is reported done, once. A
// write sent again that finds the key at another version, or gone, fails
// with [ErrUnavailable], never [storage.ErrConflict] or
// [storage.ErrNotFound]: its first send may have been applied.
//
// On a cluster, a node that cannot be reached or a cluster that reports
// CLUSTERDOWN gives [ErrUnavailable] too, and makes the client reload the
// cluster's slot map at once (go-redis would otherwise keep sending a dead
// master's slots to it until a minute has passed). When a master fails and
// a replica is promoted, operations on its slots fail with
// [ErrUnavailable] until the promotion, then the same Store carries on;
// the tests kill a master under compare-and-swap writers, promote its
// replica and find every acknowledged write in place.
//
// # Replicas
//
// Redis replicates asynchronously: a master (of a cluster, or a single
// server with replicas and Sentinel) that crashes right after
// acknowledging a write may not have passed it on, and a failover can then
// lose it, and hand out that write's version again to a different value.
// [Config.WaitReplicas] closes that gap: each write is followed, on the
// same connection, by Redis's WAIT, and reported as done only once that
// many replicas have it, so promoting one of them keeps it; fewer within
// [Config.WaitTimeout] fail the write with [ErrNotReplicated] (applied on
// the master, outcome unknown, like [ErrUnavailable]; it matches
// storage.ErrNotDurable, and reading the key back, which the same master
// answers, proves nothing: the scratchpad reports such an update as
// "may have been applied", never as done). Any other failure of such a
// write that may have been applied (a broken connection, a deadline)
// matches storage.ErrNotDurable too. On a cluster the write goes through
// go-redis's cluster pipeline, which follows MOVED and ASK (a slot being
// migrated) as for any command, and a hook on each node's client sends
// the WAIT on the connection that carried the write. It costs a round
// trip to a replica per write, and writes fail while a master has fewer
// replicas than asked. Without it (the default), the tests have not seen a
// loss on loopback, but nothing prevents one. A manual failover (CLUSTER
// FAILOVER sent to the replica while its master is up, as for
// maintenance) waits for the replica to catch up and loses nothing either
// way.
//
// # Search
//
// A Store is a [storage.Searcher]. Its index is an inverted index kept in
// Redis beside the records, which works on any Redis server (7.0 and
// later, no module) and on Redis Cluster: every key of one collection
// carries one hash tag, so a collection lives in one slot and one Lua
// script changes it atomically. A collection holds, per document, its
// text, fields and vector (one hash entry), its terms with their counts
// and its fields' tags (one hash entry), and its place in a recency
// sorted set; per distinct term, a sorted set of the documents holding
// it, scored by when they were indexed; and per field value, the same
// of the documents that have it. Terms are those of storage.MemoryIndex
// (internal/lexical's tokenizer, stop words and stemmer), and BM25 is
// computed in the process with the same formula, so both rank a text
// query alike. A registry (one sorted set per namespace) lists the
// collection names, by prefix, for Collections and erase. The index keys
// hold a NUL byte, which no store key can, so List never returns them.
//
// A text query reads, of each of its terms, only the newest documents,
// as storage/sqlite does: 64 of each term, at most 512 in all (a
// query of more than 8 terms reads fewer of each, at least 16), or as
// many of each as the hits asked for if that is more. A term's weight
// uses its exact document frequency (the size of its set). The postings
// read are scored by BM25, and the best candidates (at least 20, and 1.5
// times the hits asked for) are read and scored in full from their text,
// so a document found by a rare term counts a common term of the query
// too. A document that shares only common terms with the query, and is
// older than their newest postings, is not found. With a filter, each
// term's list is walked newest first from the smallest of the term's set
// and the filter's sets, each document checked against the others,
// until enough pass or 10,000 were checked.
//
// What it costs, for a collection of n documents of t distinct terms
// and fields each, a query of q terms, P = the postings it reads per
// term (64 at most unless k is larger), and k hits:
//
//   - Index: one Lua script per call, O(t log n) per document, plus two
//     ZADDs to the registry.
//   - Unindex: one script, O(t log n) per document.
//   - A text query: one pipelined round trip, O(q (log n + P)), then one
//     HMGET of O(max(20, 1.5k)) documents (more when some were
//     unindexed meanwhile). Neither grows with n or with how many
//     documents hold a term.
//   - A filtered text query: one Lua script instead of the pipeline,
//     whose walk of each term checks up to 10,000 documents when the
//     filter and the term are both common and seldom together:
//     O(q (log n + min(W, 10,000))), W the smaller of the term's and the
//     filter's document counts.
//   - A query without text: O(log n + k) from the recency set, or with a
//     filter from the filter's smallest set, checking the others
//     (O(log n + k) for one field; up to 10,000 checks for several).
//   - A vector query: cosine over the text query's best 1,000 and the
//     1,000 most recent documents, not over the collection; a document
//     outside both is not found by its vector.
//   - Drop: one script, O(n·t), which blocks the server while it runs.
//   - Collections: O(log N + m) on the registry of N names, plus one
//     EXISTS per name found.
//   - Memory: the text, fields and vector of each document, plus about
//     t set entries of ~30 bytes and the document's ID: the index grows
//     linearly with the documents and their words.
//
// A collection written by an earlier version (a hash of postings per
// term, no sets of field values) is converted when it is first queried:
// the query runs scripts of 200 documents each, oldest first, until the
// collection is done, then reads it. Between the scripts other clients
// are served, and Index, Unindex and Drop keep a collection that is
// half converted consistent. It costs O(n·t) once, in O(n/200) round
// trips, and the first query waits for all of them. Every process
// writing to a collection must run this version or later once one has
// converted it.
//
// Index writes are not waited on by [Config.WaitReplicas]: the records
// are the source of truth and a layer can rebuild its index from them.
// The Redis Query Engine (FT.CREATE, FT.SEARCH, in Redis 8 and Redis
// Stack) is not used: the index above is the one code path.
//
// # Logging
//
// go-redis logs some failures itself (a pool that cannot dial, for one) to
// standard error, through one logger for the whole process. [SetLogger]
// sends those lines to a *slog.Logger instead; it is opt-in and affects
// every go-redis client of the process.
package redis
