// Package reliability is memlayer's reliability suite. It holds no library
// code: its tests drive the public API of the other packages (layer,
// storage and its backends, workingmemory, entitymemory, prompt,
// agentloop) through the failures production brings, and measure what
// RELIABILITY.md reports.
//
// # Running it
//
// Under plain go test (make test) every scenario runs in a reduced form
// that takes seconds, so the normal suite stays fast. The full scenarios
// run with MEMLAYER_RELIABILITY=1 (make reliability):
//
//	MEMLAYER_RELIABILITY=1 go test -count=1 -timeout 30m -v ./reliability/...
//
// Figures are logged as lines starting with "FIGURE" (run with -v to see
// them). The suite is meant to run without -race for its figures; the
// reduced form runs under -race in make test.
//
// Redis: the scenarios use the server named by MEMLAYER_REDIS_URL, or
// start their own redis-server (found on PATH) on a free loopback port.
// Without either, the Redis runs are skipped with a message, except in CI
// (CI=true), where that is a failure. The server-fault scenario always
// starts a private server, because it kills and restarts it.
//
// # Worker processes
//
// The multi-process scenarios run copies of the test binary itself:
// TestMain turns the binary into a worker when MEMLAYER_RELIABILITY_WORKER
// names a role, with its arguments as JSON in MEMLAYER_RELIABILITY_ARGS.
// Workers are built with the same flags as the tests (-race included),
// talk to the test through stdin and stdout lines ("ready", "go",
// "result {...}", "ack K N"), and are killed when their test ends.
//
// # Scenarios
//
//   - Lost updates (TestLostUpdates): 8 processes × 200 updates, each
//     adding a distinct key to one resource-scoped scratchpad through its
//     update tool, released together, against SQLite (one file) and
//     Redis; the final state must hold all 1,600 keys. The key-value
//     memory has no persistence of its own, so the same runs against a
//     KV snapshot kept in the store the way a caller must keep it (read,
//     Restore, Set, Snapshot, compare-and-swap).
//   - Crash (TestCrash): a worker streams checksummed records of up to
//     60 KB, scratchpad updates, key-value memory entries and thread
//     checkpoints into an SQLite file and is killed with SIGKILL at a
//     random point; the file must open and pass PRAGMA integrity_check,
//     every record must be the last acknowledged write or the one in
//     flight, and the thread must resume from its checkpoint with its
//     working memory in the prompt and its key-value memory restored
//     (agentloop.Config.RestoreLayers).
//   - Server faults (TestRedisServerFault): a private redis-server is
//     killed in the middle of a stream of updates and restarted; while it
//     is down every operation fails with storage/redis.ErrUnavailable,
//     the layer's state is unchanged, and afterwards the same store and
//     layer work again. With AOF (appendfsync always) the final state is
//     exactly the acknowledged updates; without persistence the restart
//     empties the server and the layer goes on from the empty state.
//   - SQLite lock (TestSQLiteLockedFault): another program holds the
//     write lock longer than the store's BusyTimeout; updates fail with
//     storage/sqlite.ErrLocked and change nothing, reads go on, and the
//     same layer works again once the lock is released.
//   - Overlapping runs (TestOverlappingRuns): 8 runs of one thread at
//     once, on every backend: each finishes or fails with a checkpoint
//     conflict, the final checkpoint is one well-formed history, and the
//     thread's scratchpad holds exactly the updates that succeeded,
//     including those of the runs that lost.
//   - Bad input (badinput_test.go): malformed, non-object, oversized
//     (10 MB) and deeply nested (10,000 and 100,000 levels) tool
//     arguments, schema violations, "__proto__" at every depth, IDs and
//     keys with '/', "..", NUL and newline, entity names that try to
//     close their block, templates that do not parse, and garbage under
//     layer state and checkpoint keys: each gives a clear error or is
//     neutralised, and the store's contents are compared before and after.
//   - Load (TestLoad): 1,000 threads × 20 steps on a scripted model, 16
//     at a time, on the in-process store, SQLite and Redis: throughput,
//     memlayer's overhead per step from agentloop's step events (the
//     step's time minus the model's and the tools'), and memory; a second
//     pass runs threads one at a time for the overhead of a step alone.
//
// Two bugs this suite found were fixed in workingmemory the same day;
// their tests stay as regression tests: TestLegacyRejectedUpdateReported
// and TestTwoScratchpadsKeepTheirFences.
package reliability
