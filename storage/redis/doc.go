// Package redis is the distributed [storage.Store]: memory shared by agent
// processes on many machines through one Redis server, using
// github.com/redis/go-redis/v9.
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
// # Layout
//
// The store key k lives in the Redis hash Namespace+k, with fields v (the
// value), n (the version, in decimal) and w (a token naming the write that
// set them). A key is created at [storage.FirstVersion], a random version
// the client draws, and each write adds one (HINCRBY): nothing kept on the
// server is needed for a key's versions not to repeat, so a key that
// expired, was deleted, or vanished with a server restarted without
// persistence or flushed never matches a version read before (see
// "Versions" in package storage). The scripts compare versions as strings,
// because Lua's numbers cannot hold versions above 2^53 exactly.
// The namespace defaults to "memlayer:" and keeps several applications or
// tenants apart on one database.
//
// # Atomicity
//
// Put runs one Lua script: read the version, compare, write value and
// version, set or clear the expiry. The server runs scripts one at a time,
// so the check and the write are one step for every client of the server,
// and of many concurrent writers holding the same version exactly one
// wins. A conditional Delete is a script too; Get is one HMGET.
//
// go-redis retries a command whose connection broke. If the reply to a Put
// was lost after the server applied it, the retry finds the write's own
// token and reports success instead of a conflict with itself, so a
// read-modify-write loop does not apply its change twice. (If another
// writer got in between the lost reply and the retry, the retry reports a
// conflict even though the first attempt landed; no network store can
// tell that case apart.)
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
// listing off hot paths on very large databases.
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
// Redis Cluster is not supported (List scans a single node).
package redis
