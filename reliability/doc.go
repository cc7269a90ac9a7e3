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
//     Redis; the final state must hold all 1,600 keys. The same runs
//     write to a resource-scoped key-value memory (kv.Layer,
//     persisted with kv.Layer.Flush).
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
//   - No ABA (TestABA): process A reads a key, the key's life ends
//     (deleted and recreated, the SQLite file recreated, Redis restarted
//     empty), process B writes it again, and A's stale compare-and-swap
//     must conflict; the control numbers versions from 1 in each life, as
//     before, and loses A's victim's write every round.
//   - File replaced (TestFileReplaced): the SQLite file a worker is
//     writing to is deleted or replaced; no write after that may be
//     acknowledged (storage/sqlite.ErrFileReplaced), so the next process
//     misses nothing it was told was stored; the control, without the
//     check, loses every acknowledged write.
//   - WaitReplicas failover (TestWaitReplicasFailover): a Redis Cluster
//     with a replica per master; the replica of a scratchpad key's
//     master stalls (SIGSTOP, disconnected), updates go on under
//     WaitReplicas: 1, the master is killed and the replica promoted;
//     no update reported applied may be missing. The control hides
//     storage.ErrNotDurable from the layer and loses updates.
//   - Slot migration (TestWaitReplicasSlotMigration): writers under
//     WaitReplicas: 1 while their slot moves key by key to another
//     master; no error may reach them. The control pipelines each write
//     and its WAIT to the slot's master without following redirects.
//   - Key-value memory per user (TestTrust03_KVScopedProcesses): one
//     process per user on one agent configuration and store; no entry of
//     one user may reach another's prompt, stored memory or checkpoint,
//     and none may be lost; the control shares one memory between users
//     and leaks.
//   - Return merge (TestReturnMergeKeepsSiblingWrites): sibling processes
//     update a resource's scratchpad while a child agent's copy of it is
//     out; the child's return must revert none of their updates; the
//     control (merging the child's whole state) reverts them.
//   - Writes landed despite an error (TestWritesLandedDespiteContextError):
//     processes delete list elements by index under random deadlines; a
//     write the store reported as failed but applied must be reported as
//     applied, so no delete is applied twice; the control, trusting the
//     store's error, deletes twice.
//   - Entity skew (TestEntitySkew): processes whose clocks are up to an
//     hour apart create and delete entities of one resource; no entity
//     just created may be missing and no deleted one may come back; the
//     control (the old merge by wall clock) loses and resurrects.
//   - Erase of overlapping users (TestEraseOverlappingUsers): users whose
//     thread IDs equal other users' resource IDs or are named like
//     another user's thread's child run their agents (with child agents)
//     on one store; one after another each stops its runs and is erased
//     while the others' agents keep running, on every backend. The erase
//     must delete no record of another user and leave none of the erased
//     one; the control applies the old selection (IDs equal across
//     kinds, thread-ID prefixes) to the same store and counts the other
//     users' records it would have deleted.
//   - Anonymous and named runs (TestAnonymousAndNamedRuns): users and
//     anonymous threads named like the users' resource IDs run at once;
//     no marker may cross between them, in prompts or in resource-scoped
//     memory; the control (the old fallback, an anonymous thread's
//     resource scope keyed by its thread ID in the resource namespace)
//     leaks.
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
//   - Personal data (TestPersonalDataReachesNoStore): redact's labelled
//     corpus (223 e-mail addresses, phone numbers, cards, IBANs and
//     secrets) goes through every storing path for two users whose IDs
//     nest: messages, checkpoints and thread-scoped snapshots, the audit
//     trail, semantic facts, episodes, the scratchpad, the key-value
//     memory, and a trace and a debug log that get a tool's error quoting
//     it; a scan of every key and value, the SQLite file, the spans and
//     the log must find none unmasked; the control, with redaction
//     disabled, finds them in each of those places.
//
// Two bugs this suite found were fixed in workingmemory the same day;
// their tests stay as regression tests: TestLegacyRejectedUpdateReported
// and TestTwoScratchpadsKeepTheirFences.
package reliability
