package agentloop_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// eraseMarker is planted in one user's inputs; after the erase it must be
// nowhere in the store.
const eraseMarker = "QZXMARKER9047"

// allLayersAgent is an agent with every built-in layer: a resource-scoped
// scratchpad and entity memory, a thread-scoped kv layer and episodic
// log, and the history summary (a window of one turn). Its model copies
// the user's input into the scratchpad, the kv memory and a page it
// creates, then answers with it.
func allLayersAgent(t *testing.T, st storage.Store) *agentloop.Agent {
	t.Helper()
	wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	kvl, err := kv.NewLayer(kv.LayerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	em, err := entitymemory.New(entitymemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := episodicmemory.New(episodicmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	kvSet := agentloop.NewContextTool("kv_set", "Remember a value.", nil, func(ctx context.Context, run *agentloop.ToolContext, in struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}) (string, error) {
		mem, err := kv.From(run.Stack(), "")
		if err != nil {
			return "", err
		}
		return "ok", kv.Set(mem, in.Key, in.Value)
	})
	n := 0
	createPage := agentloop.NewTool("createPage", "Create a page.", nil, func(ctx context.Context, in struct {
		Title string `json:"title"`
	}) (map[string]string, error) {
		n++
		return map[string]string{"id": fmt.Sprintf("page-%d", n), "title": in.Title, "status": "draft"}, nil
	})
	update := layer.ToolName(workingmemory.DefaultID, "update")
	memorize := layer.ToolName(semanticmemory.DefaultID, "memorize")
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		user := r.LastUser()
		if len(r.ToolResults()) == 0 {
			return agenttest.Calls(
				agenttest.Call(update, map[string]any{"note": user}),
				agenttest.Call("kv_set", map[string]any{"key": "last", "value": user}),
				agenttest.Call("createPage", map[string]any{"title": user}),
				agenttest.Call(memorize, map[string]any{"text": "The user said: " + user, "kind": "note"}),
			), nil
		}
		return agenttest.Text("Noted: " + user), nil
	})
	a, err := agentloop.New(agentloop.Config{
		Model:   model,
		Layers:  []layer.Layer{wm, kvl, em, ep, sem},
		Tools:   []agentloop.Tool{kvSet, createPage},
		Store:   st,
		History: history.Config{MaxTurns: 1, SummarizeAfter: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// backends returns the stores the erasure runs on: memory, an SQLite
// file (its path returned), and Redis when MEMLAYER_REDIS_URL is set.
type backend struct {
	name string
	open func(t *testing.T) (storage.Store, string)
}

func eraseBackends() []backend {
	return []backend{
		{"memory", func(t *testing.T) (storage.Store, string) { return storage.NewMemoryStore(), "" }},
		{"sqlite", func(t *testing.T) (storage.Store, string) {
			path := filepath.Join(t.TempDir(), "mem.db")
			st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st, path
		}},
		{"redis", func(t *testing.T) (storage.Store, string) {
			u := os.Getenv("MEMLAYER_REDIS_URL")
			if u == "" {
				if os.Getenv("CI") == "true" {
					t.Fatal("MEMLAYER_REDIS_URL is not set")
				}
				t.Skip("MEMLAYER_REDIS_URL is not set")
			}
			st, err := redis.New(redis.Config{URL: u, Namespace: fmt.Sprintf("operate-%d:", time.Now().UnixNano())})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx := context.Background()
				keys, _ := st.List(ctx, "")
				for _, k := range keys {
					_ = st.Delete(ctx, k, storage.AnyVersion)
				}
				st.Close()
			})
			return st, ""
		}},
	}
}

// findMarker returns the keys whose key or value holds s.
func findMarker(t *testing.T, st storage.Store, s string) []string {
	t.Helper()
	keys, err := st.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var hits []string
	for _, k := range keys {
		it, err := st.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(k, s) || bytes.Contains(it.Value, []byte(s)) {
			hits = append(hits, k)
		}
	}
	// The store's search index too: every document of every collection.
	if idx, ok := st.(storage.Searcher); ok {
		cols, err := idx.Collections(t.Context(), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			docs, err := idx.Search(t.Context(), c, storage.Query{K: storage.MaxK})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range docs {
				if strings.Contains(d.Text, s) || strings.Contains(d.ID, s) || strings.Contains(fmt.Sprint(d.Fields), s) {
					hits = append(hits, "index "+c+" "+d.ID)
				}
			}
		}
	}
	return hits
}

// TestOperate30_EraseResourceEveryBackend: a user's inputs carry a
// marker that every built-in layer and the thread store copy; after
// EraseResource no key and no value of the store holds it, on every
// backend, nor any byte of the closed SQLite file and its log, while
// another user's threads and state are kept.
func TestOperate30_EraseResourceEveryBackend(t *testing.T) {
	for _, b := range eraseBackends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			st, path := b.open(t)
			a := allLayersAgent(t, st)
			for i, run := range []agentloop.RunInput{
				{ThreadID: "alice-1", ResourceID: "alice", Input: "My code word is " + eraseMarker},
				{ThreadID: "alice-1", ResourceID: "alice", Input: "Again: " + eraseMarker + " please"},
				{ThreadID: "alice-1", ResourceID: "alice", Input: "Third turn about " + eraseMarker},
				{ThreadID: "alice-2", ResourceID: "alice", Input: "Other thread " + eraseMarker},
				{ThreadID: "bob-1", ResourceID: "bob", Input: "Bob's note: keep me"},
				{ThreadID: "bob-1", ResourceID: "bob", Input: "Bob again"},
			} {
				if _, err := a.Run(ctx, run); err != nil {
					t.Fatalf("run %d: %v", i, err)
				}
			}
			in := inspect.Inspector{Store: st}
			before := findMarker(t, st, eraseMarker)
			kinds := map[string]bool{}
			for _, k := range before {
				if lk, ok := inspect.ParseLayerKey(k); ok {
					kinds[lk.LayerID] = true
				} else if strings.Contains(k, "/sum.") {
					kinds["summary"] = true
				}
			}
			for _, want := range []string{workingmemory.DefaultStorageID, kv.DefaultStorageID, entitymemory.DefaultStorageID, episodicmemory.DefaultStorageID, semanticmemory.DefaultStorageID, "summary"} {
				if !kinds[want] {
					t.Errorf("before the erase no %s record holds the marker (records with it: %v)", want, before)
				}
			}

			e, err := in.EraseResource(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if hits := findMarker(t, st, eraseMarker); len(hits) > 0 {
				t.Fatalf("after the erase the marker is still in %v", hits)
			}
			if len(e.Threads) != 2 || e.Counts["thread.head"] != 2 || e.Counts["thread.segment"] == 0 || e.Counts["thread.summary"] == 0 ||
				e.Counts["layer."+workingmemory.DefaultStorageID] == 0 || e.Counts["layer."+episodicmemory.DefaultStorageID] == 0 {
				t.Errorf("report: threads %v counts %v", e.Threads, e.Counts)
			}
			total := 0
			for _, c := range e.Counts {
				total += c
			}
			if total != len(e.Keys) {
				t.Errorf("counts add up to %d, %d keys", total, len(e.Keys))
			}
			if ts, err := in.Threads(ctx, inspect.ThreadQuery{ResourceID: "alice"}); err != nil || len(ts) != 0 {
				t.Errorf("alice's threads after the erase: %v, %v", ts, err)
			}
			ts, err := in.Threads(ctx, inspect.ThreadQuery{})
			if err != nil || len(ts) != 1 || ts[0].ThreadID != "bob-1" || ts[0].ResourceID != "bob" {
				t.Fatalf("threads left: %+v, %v", ts, err)
			}
			state, err := in.LayerState(ctx, workingmemory.DefaultStorageID, storage.ResourceScope("bob"))
			if err != nil || len(state) == 0 || !bytes.Contains(state[0].Value, []byte("Bob again")) {
				t.Errorf("bob's scratchpad: %v, %v", state, err)
			}
			th, err := in.Thread(ctx, "bob-1")
			if err != nil || th.ResourceID != "bob" || th.First+len(th.Messages) != th.Total || th.Summary.Text == "" {
				t.Errorf("bob's thread: %+v, %v", th, err)
			}
			// Running again for the erased user starts from nothing.
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "alice-1", ResourceID: "alice", Input: "hello"}); err != nil {
				t.Fatal(err)
			}
			if hits := findMarker(t, st, eraseMarker); len(hits) > 0 {
				t.Fatalf("a new run brought the marker back in %v", hits)
			}
			if path == "" {
				return
			}
			if err := st.(*sqlite.Store).Close(); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{path, path + "-wal"} {
				data, err := os.ReadFile(f)
				if errors.Is(err, os.ErrNotExist) {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if i := bytes.Index(data, []byte(eraseMarker)); i >= 0 {
					t.Errorf("%s holds the marker at byte %d of %d", filepath.Base(f), i, len(data))
				}
			}
		})
	}
}

// TestOperate31_QuarantineListedAndRestored: a scratchpad state the layer
// cannot read is quarantined by a run and listed with its layer, scope
// and time; a good state set aside is restored (refused over a newer
// state unless replace) and the next run's prompt shows it again.
func TestOperate31_QuarantineListedAndRestored(t *testing.T) {
	ctx := t.Context()
	st := storage.NewMemoryStore()
	a := allLayersAgent(t, st)
	in := inspect.Inspector{Store: st}
	stateKey := storage.LayerKey(workingmemory.DefaultStorageID, storage.ResourceScope("carol"), "state")

	if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "c-1", ResourceID: "carol", Input: "remember teal"}); err != nil {
		t.Fatal(err)
	}
	good, err := st.Get(ctx, stateKey)
	if err != nil || !bytes.Contains(good.Value, []byte("remember teal")) {
		t.Fatalf("scratchpad state: %q, %v", good.Value, err)
	}
	// A broken state: the next run quarantines it.
	if _, err := st.Put(ctx, stateKey, []byte("{not json"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "c-1", ResourceID: "carol", Input: "second"}); err != nil {
		t.Fatal(err)
	}
	qs, err := in.Quarantined(ctx)
	if err != nil || len(qs) != 1 {
		t.Fatalf("quarantined: %+v, %v", qs, err)
	}
	q := qs[0]
	if q.LayerID != workingmemory.DefaultStorageID || q.ScopeKey != storage.ResourceScope("carol") || q.At.IsZero() || time.Since(q.At) > time.Minute {
		t.Errorf("quarantined record: %+v", q)
	}
	if it, err := st.Get(ctx, q.Key); err != nil || string(it.Value) != "{not json" {
		t.Errorf("quarantined copy: %q, %v", it.Value, err)
	}

	// Set the good state aside as the layer would, and restore it.
	if _, err := st.Put(ctx, q.Key, good.Value, storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := in.RestoreQuarantined(ctx, q.Key, false); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("restore over the newer state: %v, want ErrConflict", err)
	}
	target, err := in.RestoreQuarantined(ctx, q.Key, true)
	if err != nil || target != stateKey {
		t.Fatalf("restore: %q, %v", target, err)
	}
	if _, err := st.Get(ctx, q.Key); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the copy is still there: %v", err)
	}
	if qs, _ := in.Quarantined(ctx); len(qs) != 0 {
		t.Errorf("still listed: %+v", qs)
	}
	var sys string
	probe := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		sys = r.System()
		return agenttest.Text("ok"), nil
	})
	wm, _ := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	b, err := agentloop.New(agentloop.Config{Model: probe, Layers: []layer.Layer{wm}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Run(ctx, agentloop.RunInput{ThreadID: "c-2", ResourceID: "carol", Input: "what did I say?"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sys, "remember teal") {
		t.Errorf("the restored scratchpad is not in the prompt:\n%s", sys)
	}
	if _, err := in.RestoreQuarantined(ctx, stateKey, false); !errors.Is(err, inspect.ErrInvalidKey) {
		t.Errorf("restoring a non-quarantine key: %v", err)
	}
}

// TestOperate35_ThreadsPaginatedAndDeleted: threads are listed newest
// first, by resource and by page; a deleted thread loses every record
// under its prefix and its thread-scoped layer state, and the others
// keep theirs.
func TestOperate35_ThreadsPaginatedAndDeleted(t *testing.T) {
	ctx := t.Context()
	st := storage.NewMemoryStore()
	a := allLayersAgent(t, st)
	for _, r := range []agentloop.RunInput{
		{ThreadID: "t/1", ResourceID: "r1", Input: "one"},
		{ThreadID: "t/2", ResourceID: "r2", Input: "two"},
		{ThreadID: "t/3", ResourceID: "r1", Input: "three"},
	} {
		if _, err := a.Run(ctx, r); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond) // distinct UpdatedAt
	}
	in := inspect.Inspector{Store: st}
	ids := func(q inspect.ThreadQuery) string {
		ts, err := in.Threads(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, th := range ts {
			s = append(s, th.ThreadID)
		}
		return strings.Join(s, ",")
	}
	for q, want := range map[inspect.ThreadQuery]string{
		{}:                           "t/3,t/2,t/1",
		{ResourceID: "r1"}:           "t/3,t/1",
		{Limit: 2}:                   "t/3,t/2",
		{Offset: 2, Limit: 2}:        "t/1",
		{Offset: 5}:                  "",
		{ResourceID: "none"}:         "",
		{ResourceID: "r1", Limit: 1}: "t/3",
	} {
		if got := ids(q); got != want {
			t.Errorf("Threads(%+v) = %q, want %q", q, got, want)
		}
	}
	th, err := in.Thread(ctx, "t/1")
	if err != nil || th.ResourceID != "r1" || len(th.Messages) != th.Total || th.Messages[0].Text != "one" {
		t.Fatalf("Thread: %+v, %v", th, err)
	}
	if _, err := in.Thread(ctx, "t/9"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("a thread never stored: %v", err)
	}
	if items, err := in.LayerState(ctx, episodicmemory.DefaultStorageID, storage.ThreadScope("t/1")); err != nil || len(items) == 0 {
		t.Fatalf("episodic state of t/1: %v, %v", items, err)
	}

	e, err := in.DeleteThread(ctx, "t/1")
	if err != nil || len(e.Threads) != 1 || e.Counts["thread.head"] != 1 || e.Counts["layer."+episodicmemory.DefaultStorageID] == 0 {
		t.Fatalf("DeleteThread: %+v, %v", e, err)
	}
	if keys, _ := st.List(ctx, storage.ThreadPrefix("t/1")); len(keys) != 0 {
		t.Errorf("thread records left: %v", keys)
	}
	if items, _ := in.LayerState(ctx, episodicmemory.DefaultStorageID, storage.ThreadScope("t/1")); len(items) != 0 {
		t.Errorf("episodic state left: %v", items)
	}
	if items, _ := in.LayerState(ctx, workingmemory.DefaultStorageID, storage.ResourceScope("r1")); len(items) == 0 {
		t.Errorf("the resource's scratchpad went with one of its threads")
	}
	if got := ids(inspect.ThreadQuery{}); got != "t/3,t/2" {
		t.Errorf("after the delete: %q", got)
	}
	if e, err := in.DeleteThread(ctx, "t/1"); err != nil || len(e.Keys) != 0 {
		t.Errorf("deleting again: %+v, %v", e, err)
	}
	if _, err := in.EraseResource(ctx, ""); !errors.Is(err, thread.ErrInvalidID) {
		t.Errorf("erasing the empty resource: %v", err)
	}
}
