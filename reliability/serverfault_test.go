package reliability

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
)

// TestRedisServerFault stops a private Redis server (SIGKILL) in the
// middle of a stream of scratchpad updates, and restarts it:
//
//   - while it is down, every update and an agent run fail with an error
//     that is redis.ErrUnavailable and says "server unavailable", and the
//     scratchpad's state is unchanged;
//   - after the restart the same layer and store (nothing recreated)
//     succeed again;
//   - with persistence (AOF, appendfsync always) the final state holds
//     exactly the acknowledged updates, before and after the fault;
//     without persistence the restart empties the server, the layer
//     notices (its compare-and-swap conflicts) and goes on from the empty
//     state rather than writing its stale copy back.
func TestRedisServerFault(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if inCI() {
			t.Fatal("redis-server is not on PATH; CI must install it (apt-get install redis-server)")
		}
		t.Skip("redis-server is not on PATH: install it (apt-get install redis-server) to run the server-fault scenario")
	}
	variants := []bool{true, false}
	if !heavy() {
		variants = variants[:1] // each failing call takes ~2 s of go-redis dial retries
	}
	for _, persist := range variants {
		t.Run(map[bool]string{true: "aof", false: "no-persistence"}[persist], func(t *testing.T) {
			serverFault(t, bin, persist)
		})
	}
}

func serverFault(t *testing.T, bin string, persist bool) {
	ctx := t.Context()
	srv, err := startRedis(bin, t.TempDir(), persist)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	spec := storeSpec{Backend: "redis", URL: srv.url, Namespace: "fault:"}
	if !heavy() {
		// go-redis's defaults take about two seconds of dial retries to
		// give up; the normal suite fails fast instead.
		spec.URL += "?max_retries=-1"
	}
	st := mustOpen(t, spec)

	const resource = "team-1"
	wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	stack, err := layer.NewStack(layer.StackConfig{
		Layers:       []layer.Layer{wm},
		Env:          layer.Env{ThreadID: "fault-thread", ResourceID: resource, Store: st},
		ValidateArgs: agentloop.ValidateArgs,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := stack.Init(ctx); err != nil {
		t.Fatal(err)
	}
	defer stack.Close(ctx)
	bound, _ := layer.Find[layer.Layer](stack, workingmemory.DefaultID)
	scratchpad := bound.(*workingmemory.Layer)
	tool := layer.ToolName(workingmemory.DefaultID, "update")
	acked := map[string]bool{}
	update := func(i int) error {
		k := fmt.Sprintf("k%04d", i)
		_, err := stack.CallTool(ctx, tool, fmt.Sprintf(`{%q: %d}`, k, i))
		if err == nil {
			acked[k] = true
		}
		return err
	}
	n := pick(200, 20)
	i := 0
	for ; i < n; i++ {
		if err := update(i); err != nil {
			t.Fatalf("update %d before the fault: %v", i, err)
		}
	}

	srv.stop()
	stateBefore, _ := json.Marshal(scratchpad.State())
	agent, err := agentloop.New(agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("hi"))), Layers: []layer.Layer{wm}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	for range pick(3, 1) {
		start := time.Now()
		err := update(i)
		i++
		if !errors.Is(err, redis.ErrUnavailable) || !strings.Contains(err.Error(), "server unavailable") {
			t.Fatalf("update while the server is down: %v, want redis.ErrUnavailable saying \"server unavailable\"", err)
		}
		t.Logf("update while down failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
	if _, err := agent.Run(ctx, agentloop.RunInput{ThreadID: "fault-thread", ResourceID: resource, Input: "hi"}); !errors.Is(err, redis.ErrUnavailable) {
		t.Errorf("agent run while the server is down: %v, want redis.ErrUnavailable", err)
	} else {
		t.Logf("agent run while down: %v", err)
	}
	if stateAfter, _ := json.Marshal(scratchpad.State()); string(stateAfter) != string(stateBefore) {
		t.Errorf("failed updates changed the in-memory state")
	}

	if err := srv.start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("server down for %v", time.Since(down).Round(time.Millisecond))
	if !persist {
		// Everything acknowledged before the restart is gone with the
		// server's memory.
		clear(acked)
	}
	for end := i + n; i < end; i++ {
		if err := update(i); err != nil {
			t.Fatalf("update %d after the restart: %v", i, err)
		}
	}
	if _, err := agent.Run(ctx, agentloop.RunInput{ThreadID: "fault-thread", ResourceID: resource, Input: "hi"}); err != nil {
		t.Errorf("agent run after the restart: %v", err)
	}

	// The stored state is exactly what was acknowledged.
	it, err := st.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ResourceScope(resource), "state"))
	if err != nil {
		t.Fatal(err)
	}
	var state map[string]any
	if err := json.Unmarshal(scratchpadState(t, it.Value), &state); err != nil {
		t.Fatalf("stored state after the fault: %v\n%.300s", err, it.Value)
	}
	if got, want := slices.Sorted(maps.Keys(state)), slices.Sorted(maps.Keys(acked)); !slices.Equal(got, want) {
		t.Errorf("stored state has %d keys, %d acknowledged:\ngot  %.20q\nwant %.20q", len(got), len(want), got, want)
	}
	if got, _ := scratchpad.State().(map[string]any); len(got) != len(state) {
		t.Errorf("the layer holds %d keys, the server %d", len(got), len(state))
	}
}

// TestSQLiteLockedFault is the embedded store's counterpart of a server
// going down: another process holds SQLite's write lock longer than the
// store's BusyTimeout. Updates fail with sqlite.ErrLocked, saying the
// database is locked, and change nothing; reads still work (WAL); once the
// lock is released the same layer and store succeed again.
func TestSQLiteLockedFault(t *testing.T) {
	ctx := t.Context()
	path := t.TempDir() + "/locked.db"
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path, BusyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := wm.Init(ctx, layer.Env{ThreadID: "t", ResourceID: "team-1", Store: st})
	if err != nil {
		t.Fatal(err)
	}
	pad := bound.(*workingmemory.Layer)
	if err := pad.Update(ctx, json.RawMessage(`{"before":1}`)); err != nil {
		t.Fatal(err)
	}
	key := storage.LayerKey(workingmemory.DefaultStorageID, storage.ResourceScope("team-1"), "state")
	before, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}

	// Another program takes the write lock and keeps it.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = pad.Update(ctx, json.RawMessage(`{"during":1}`))
	if !errors.Is(err, sqlite.ErrLocked) || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("update while locked: %v, want sqlite.ErrLocked saying the database is locked", err)
	}
	t.Logf("update while locked failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	if _, ok := pad.State().(map[string]any)["during"]; ok {
		t.Error("a failed update changed the layer's state")
	}
	if it, err := st.Get(ctx, key); err != nil || string(it.Value) != string(before.Value) {
		t.Errorf("read while locked: %s, %v; want the state before", it.Value, err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := pad.Update(ctx, json.RawMessage(`{"after":1}`)); err != nil {
		t.Fatalf("update after the lock is released: %v", err)
	}
	it, err := st.Get(ctx, key)
	if err != nil || string(scratchpadState(t, it.Value)) != `{"after":1,"before":1}` {
		t.Errorf("final state %s, %v; want before and after, not during", it.Value, err)
	}
}
