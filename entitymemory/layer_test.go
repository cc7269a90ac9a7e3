package entitymemory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

func turn(results ...layer.ToolResult) layer.Turn { return layer.Turn{Results: results} }

func result(tool, args, content string) layer.ToolResult {
	return layer.ToolResult{ToolCall: layer.ToolCall{Name: tool, Arguments: args}, Content: content}
}

func ids(es []Entity) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ID
	}
	return out
}

func store(t testing.TB, l *Layer, results ...layer.ToolResult) {
	t.Helper()
	if err := l.Store(t.Context(), turn(results...)); err != nil {
		t.Fatal(err)
	}
}

func TestMRU(t *testing.T) {
	clk := newClock()
	l := mustBound(t, Config{Capacity: 4, Now: clk.Now})
	store(t, l, result("cms_createPage", `{"title":"About Us"}`, `{"page":{"id":"page-123","title":"About Us"}}`))
	clk.Advance(time.Second)
	store(t, l, result("cms_addSection", `{"pageId":"page-123"}`, `{"section":{"id":"sec-456","heading":"Hero"}}`))
	if got, want := ids(l.Entities()), []string{"sec-456", "page-123"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("newest first: got %v, want %v", got, want)
	}

	// A re-seen ID moves to the front and takes the new name.
	clk.Advance(time.Second)
	store(t, l, result("cms_updatePage", `{"pageId":"page-123","title":"About Our Team"}`, `{"page":{"id":"page-123","title":"About Our Team"}}`))
	es := l.Entities()
	if es[0].ID != "page-123" || es[0].Name != "About Our Team" || len(es) != 2 {
		t.Fatalf("rename: got %+v", es)
	}
	if !es[0].SeenAt.Equal(clk.Now()) {
		t.Errorf("SeenAt = %v, want %v", es[0].SeenAt, clk.Now())
	}
	// A later result naming it only by ID keeps the name.
	store(t, l, result("cms_publishPage", `{"pageId":"page-123"}`, `{"id":"page-123","status":"published"}`))
	if es := l.Entities(); es[0].Name != "About Our Team" {
		t.Errorf("ID-only result renamed the page to %q", es[0].Name)
	}

	// A list keeps its order at the front; the oldest drop off.
	store(t, l, result("list_pages", ``, `{"pages":[{"id":"p1","title":"A"},{"id":"p2","title":"B"},{"id":"p3","title":"C"}]}`))
	if got, want := ids(l.Entities()), []string{"p1", "p2", "p3", "page-123"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after list: got %v, want %v", got, want)
	}
	// Several results of one step: the last one's entities end up first.
	store(t, l,
		result("get_page", ``, `{"id":"p3","title":"C"}`),
		result("get_section", ``, `{"id":"sec-456","heading":"Hero"}`))
	if got, want := ids(l.Entities()), []string{"sec-456", "p3", "p1", "p2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("two results: got %v, want %v", got, want)
	}
	// Same ID, other type: another entity.
	store(t, l, result("get_post", ``, `{"id":"p1","title":"A post"}`))
	if es := l.Entities(); es[0].Type != "post" || es[3].Type != "page" || es[3].ID != "p1" {
		t.Errorf("type+ID identity: got %+v", es)
	}
}

func TestStoreForgetsDeleted(t *testing.T) {
	l := mustBound(t, Config{})
	store(t, l, result("list_pages", ``, `{"pages":[{"id":"p1","title":"A"},{"id":"p2","title":"B"}]}`))
	store(t, l, result("cms_deletePage", `{"pageId":"p1"}`, `{"success":true}`))
	if got := ids(l.Entities()); !reflect.DeepEqual(got, []string{"p2"}) {
		t.Errorf("after deleting p1 by argument: %v", got)
	}
	// Stripe answers a delete with the deleted object.
	store(t, l, result("stripe_create_customer", ``, `{"id":"cus_1","object":"customer","name":"Jenny"}`))
	store(t, l, result("stripe_delete_customer", `{"customer":"cus_1"}`, `{"id":"cus_1","object":"customer","deleted":true}`))
	if got := ids(l.Entities()); !reflect.DeepEqual(got, []string{"p2"}) {
		t.Errorf("after deleting cus_1 by result: %v", got)
	}
	// A failed delete forgets nothing.
	store(t, l, result("cms_deletePage", `{"pageId":"p2"}`, `{"error":"locked"}`))
	if got := ids(l.Entities()); !reflect.DeepEqual(got, []string{"p2"}) {
		t.Errorf("after a failed delete: %v", got)
	}
}

func TestStoreSkipsErrorsAndUsesCalls(t *testing.T) {
	l := mustBound(t, Config{})
	tr := layer.Turn{
		ToolCalls: []layer.ToolCall{
			{ID: "c1", Name: "cms_addSection", Arguments: `{"pageId":"page-1"}`},
			{ID: "c2", Name: "cms_getPage", Arguments: `{"pageId":"page-2"}`},
		},
		Results: []layer.ToolResult{
			{ToolCall: layer.ToolCall{ID: "c1"}, Content: `{"section":{"id":"sec-1","heading":"Hero"}}`},
			{ToolCall: layer.ToolCall{ID: "c2", Name: "cms_getPage"}, Content: `{"page":{"id":"page-2","title":"Two"}}`, IsError: true},
		},
	}
	if err := l.Store(t.Context(), tr); err != nil {
		t.Fatal(err)
	}
	es := l.Entities()
	if len(es) != 1 || es[0].Type != "section" || es[0].Parent != "page-1" {
		t.Errorf("got %+v, want sec-1 (type and parent from the call), and nothing from the failed call", es)
	}
}

func TestTTL(t *testing.T) {
	clk := newClock()
	l := mustBound(t, Config{TTL: time.Minute, Now: clk.Now})
	l.Add(Entity{Type: "page", ID: "old", Name: "Old"})
	clk.Advance(40 * time.Second)
	l.Add(Entity{Type: "page", ID: "new", Name: "New"})
	if txt := recallText(t, l); !strings.Contains(txt, "(old)") {
		t.Fatalf("entity dropped before its TTL:\n%s", txt)
	}
	clk.Advance(30 * time.Second)
	txt := recallText(t, l)
	if strings.Contains(txt, "(old)") || !strings.Contains(txt, "(new)") {
		t.Errorf("after 70s: want only new:\n%s", txt)
	}
	clk.Advance(time.Hour)
	if txt := recallText(t, l); txt != "" {
		t.Errorf("all expired: got %q", txt)
	}
}

func TestConfig(t *testing.T) {
	l, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	sp := l.Spec()
	if sp.ID != DefaultID || sp.StorageName() != DefaultStorageID || sp.Slot != layer.SlotEntities || sp.Scope != layer.ScopeThread || l.cfg.Capacity != 10 {
		t.Errorf("zero config: %+v capacity %d", sp, l.cfg.Capacity)
	}
	for _, bad := range []Config{
		{Spec: layer.Spec{ID: "Bad ID"}}, {Capacity: -1}, {MaxPerList: -1}, {TTL: -time.Second},
		{MaxResultBytes: -1}, {Spec: layer.Spec{Scope: "planet"}}, {Spec: layer.Spec{Budget: layer.Budget{Min: 10, Max: 5}}},
	} {
		if _, err := New(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func env(st storage.Store, thread string) layer.Env {
	return layer.Env{ThreadID: thread, ExecutionID: "exec-" + thread, Store: st, Logger: slog.New(slog.DiscardHandler)}
}

func initLayer(t testing.TB, tmpl *Layer, e layer.Env) *Layer {
	t.Helper()
	b, err := tmpl.Init(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	return b.(*Layer)
}

func TestPersistAcrossProcesses(t *testing.T) {
	st := storage.NewMemoryStore()
	tmpl := mustNew(t, Config{})
	a := initLayer(t, tmpl, env(st, "thread-1"))
	store(t, a, result("cms_createPage", ``, `{"page":{"id":"page-123","title":"About Us"}}`))
	if len(tmpl.Entities()) != 0 {
		t.Fatal("Init modified the template")
	}
	// A new process: a fresh template, same store and thread.
	b := initLayer(t, mustNew(t, Config{}), env(st, "thread-1"))
	if got := recallText(t, b); !strings.Contains(got, `"About Us" (page-123)`) {
		t.Errorf("new process recalls:\n%s", got)
	}
	if got := recallText(t, initLayer(t, tmpl, env(st, "thread-2"))); got != "" {
		t.Errorf("other thread recalls %q", got)
	}
	if _, err := st.Get(t.Context(), storage.LayerKey("entities", storage.ThreadScope("thread-1"), "state")); err != nil {
		t.Errorf("state not under the documented key: %v", err)
	}
	// Execution scope never persists.
	ex := mustNew(t, Config{Spec: layer.Spec{Scope: layer.ScopeExecution}})
	store(t, initLayer(t, ex, env(st, "thread-1")), result("get_page", ``, `{"id":"x","title":"X"}`))
	if keys, _ := st.List(t.Context(), "layers/entities/execution"); len(keys) != 0 {
		t.Errorf("execution scope persisted %v", keys)
	}
}

func TestCASMerge(t *testing.T) {
	st := storage.NewMemoryStore()
	clk := newClock()
	tmpl := mustNew(t, Config{Spec: layer.Spec{Scope: layer.ScopeResource}, Now: clk.Now})
	e := layer.Env{ThreadID: "t1", ResourceID: "site-1", Store: st}
	a := initLayer(t, tmpl, e)
	e.ThreadID = "t2"
	b := initLayer(t, tmpl, e) // both loaded the empty state
	clk.Advance(time.Second)
	store(t, a, result("get_page", ``, `{"id":"pa","title":"A"}`))
	clk.Advance(time.Second)
	store(t, b, result("get_page", ``, `{"id":"pb","title":"B"}`)) // conflicts, merges
	if got, want := ids(b.Entities()), []string{"pb", "pa"}; !reflect.DeepEqual(got, want) {
		t.Errorf("b after merge: %v, want %v", got, want)
	}
	c := initLayer(t, tmpl, e)
	if got, want := ids(c.Entities()), []string{"pb", "pa"}; !reflect.DeepEqual(got, want) {
		t.Errorf("stored after merge: %v, want %v", got, want)
	}
}

func TestCASConcurrentWriters(t *testing.T) {
	st := storage.NewMemoryStore()
	tmpl := mustNew(t, Config{Capacity: 100, Now: time.Now})
	const writers, each = 4, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := initLayer(t, tmpl, env(st, "shared"))
			for i := range each {
				res := fmt.Sprintf(`{"id":"w%d-%d","title":"x"}`, w, i)
				if err := l.Store(context.Background(), turn(result("get_page", "", res))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	final := initLayer(t, tmpl, env(st, "shared"))
	if n := len(final.Entities()); n != writers*each {
		t.Errorf("stored %d entities, want %d: an update was lost", n, writers*each)
	}
}

// faultyStore fails Puts while fail is set.
type faultyStore struct {
	storage.Store
	fail atomic.Bool
}

var errDisk = errors.New("disk on fire")

func (f *faultyStore) Put(ctx context.Context, key string, v []byte, ver int64) (int64, error) {
	if f.fail.Load() {
		return 0, errDisk
	}
	return f.Store.Put(ctx, key, v, ver)
}

func TestSaveFailureKeepsStateAndRetries(t *testing.T) {
	st := &faultyStore{Store: storage.NewMemoryStore()}
	tmpl := mustNew(t, Config{})
	l := initLayer(t, tmpl, env(st, "t"))
	st.fail.Store(true)
	err := l.Store(t.Context(), turn(result("get_page", ``, `{"id":"p1","title":"One"}`)))
	if !errors.Is(err, errDisk) || !strings.HasPrefix(err.Error(), "entitymemory: ") {
		t.Fatalf("Store error = %v, want wrapped errDisk", err)
	}
	if got := recallText(t, l); !strings.Contains(got, "(p1)") {
		t.Errorf("in-memory state lost on a failed save:\n%s", got)
	}
	st.fail.Store(false)
	if err := l.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := ids(initLayer(t, tmpl, env(st, "t")).Entities()); !reflect.DeepEqual(got, []string{"p1"}) {
		t.Errorf("Close did not save pending changes: %v", got)
	}
}

// TestInitRefusesBadState: state from a newer version fails Init and is
// left as it is; unreadable state is quarantined and the run starts
// empty.
func TestInitRefusesBadState(t *testing.T) {
	for name, tc := range map[string]struct {
		data string
		want error // nil: quarantined
	}{
		"future version": {`{"version":99,"entities":[]}`, ErrVersion},
		"corrupt":        {`{"version":1,"entities":"nope"}`, nil},
		"not json":       {`hello`, nil},
		"no version":     {`{"entities":[]}`, nil},
		"huge clock":     {`{"version":2,"clock":18446744073709551615,"entities":[]}`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			st := storage.NewMemoryStore()
			key := storage.LayerKey("entities", storage.ThreadScope("t"), "state")
			if _, err := st.Put(t.Context(), key, []byte(tc.data), storage.NoVersion); err != nil {
				t.Fatal(err)
			}
			_, err := mustNew(t, Config{}).Init(t.Context(), env(st, "t"))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Init = %v, want %v", err, tc.want)
			}
			it, _ := st.Get(t.Context(), key)
			if tc.want != nil {
				if string(it.Value) != tc.data {
					t.Errorf("stored state changed to %s", it.Value)
				}
				return
			}
			if it.Value != nil {
				t.Errorf("unreadable state left in place: %s", it.Value)
			}
			keys, _ := st.List(t.Context(), storage.LayerPrefix("entities", storage.ThreadScope("t")))
			if len(keys) != 1 || !strings.Contains(keys[0], "quarantine") {
				t.Fatalf("keys after Init: %v, want one quarantine key", keys)
			}
			if q, _ := st.Get(t.Context(), keys[0]); string(q.Value) != tc.data {
				t.Errorf("quarantined %q, want %q", q.Value, tc.data)
			}
		})
	}
}

func TestSnapshotRestore(t *testing.T) {
	ctx := t.Context()
	st := storage.NewMemoryStore()
	l := initLayer(t, mustNew(t, Config{}), env(st, "t"))
	store(t, l, result("get_pages", ``, `{"pages":[{"id":"p1","title":"One"},{"id":2,"title":"Two","slug":"two"}]}`))
	snap, err := l.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ Version int }
	if err := json.Unmarshal(snap, &head); err != nil || head.Version != StateVersion {
		t.Fatalf("snapshot %s: version %d, %v", snap, head.Version, err)
	}
	before := l.Entities()

	// Bad snapshots change nothing.
	for _, bad := range []string{`{"version":3,"entities":[]}`, `{"version":1,"entities":[{"id":{}}]}`, `42`, ``} {
		err := l.Restore(ctx, json.RawMessage(bad))
		if !errors.Is(err, ErrVersion) && !errors.Is(err, ErrCorrupt) {
			t.Errorf("Restore(%s) = %v, want ErrVersion or ErrCorrupt", bad, err)
		}
		if !reflect.DeepEqual(l.Entities(), before) {
			t.Errorf("Restore(%s) changed the state", bad)
		}
	}
	if err := l.Restore(ctx, json.RawMessage(`{"version":3}`)); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "version 3") {
		t.Errorf("future version error is not clear: %v", err)
	}

	// Version 0 (a bare array, numeric IDs, no seenAt) migrates.
	v0 := `[{"type":"Page","id":7,"name":"Seven\nlines"},{"type":"section","id":"s1","name":"Hero","parent":7},{"type":"","id":"x"}]`
	if err := l.Restore(ctx, json.RawMessage(v0)); err != nil {
		t.Fatal(err)
	}
	got := ents(l.Entities())
	want := []ent{{"page", "7", "Seven lines", "", ""}, {"section", "s1", "Hero", "", "7"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("v0 migration: got %+v, want %+v", got, want)
	}
	// Restore persists.
	if got := ents(initLayer(t, mustNew(t, Config{}), env(st, "t")).Entities()); !reflect.DeepEqual(got, want) {
		t.Errorf("restored state not persisted: %+v", got)
	}
	// And round-trips.
	if err := l.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l.Entities(), before) {
		t.Errorf("round trip: got %+v, want %+v", l.Entities(), before)
	}
}

func TestRestoreFailedSaveKeepsState(t *testing.T) {
	st := &faultyStore{Store: storage.NewMemoryStore()}
	l := initLayer(t, mustNew(t, Config{}), env(st, "t"))
	l.Add(Entity{Type: "page", ID: "p1", Name: "One"})
	before := l.Entities()
	st.fail.Store(true)
	if err := l.Restore(t.Context(), json.RawMessage(`{"version":1,"entities":[]}`)); !errors.Is(err, errDisk) {
		t.Fatalf("Restore = %v", err)
	}
	if !reflect.DeepEqual(l.Entities(), before) {
		t.Errorf("failed restore changed the state")
	}
}

// TestFrozenSnapshots loads the snapshots of every released format.
func TestFrozenSnapshots(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "state-v*.json"))
	if len(files) < StateVersion+1 {
		t.Fatalf("want frozen snapshots of versions 0 to %d, got %v", StateVersion, files)
	}
	want := []ent{{"page", "page-123", "About Us", "about-us", ""}, {"section", "sec-456", "Hero", "", "page-123"}}
	for _, f := range files {
		l := mustBound(t, Config{})
		if err := l.Restore(t.Context(), json.RawMessage(readFixture(t, f))); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if got := ents(l.Entities()); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %+v, want %+v", f, got, want)
		}
	}
}

func TestSpawn(t *testing.T) {
	st := storage.NewMemoryStore()
	parent := initLayer(t, mustNew(t, Config{}), env(st, "t"))
	store(t, parent, result("get_page", ``, `{"id":"p1","title":"One"}`))
	cl, err := parent.OnSpawn(t.Context(), env(st, "child"))
	if err != nil {
		t.Fatal(err)
	}
	child := cl.(*Layer)
	if got := recallText(t, child); !strings.Contains(got, "(p1)") {
		t.Fatalf("child does not start with the parent's entities:\n%s", got)
	}
	store(t, child, result("get_page", ``, `{"id":"c1","title":"Child page"}`))
	store(t, parent, result("get_page", ``, `{"id":"p2","title":"Two"}`))
	if got := ids(parent.Entities()); !reflect.DeepEqual(got, []string{"p2", "p1"}) {
		t.Errorf("parent sees the child's changes: %v", got)
	}
	if got := ids(child.Entities()); !reflect.DeepEqual(got, []string{"c1", "p1"}) {
		t.Errorf("child sees the parent's later changes: %v", got)
	}
}

func TestProvidesStatsClear(t *testing.T) {
	st := storage.NewMemoryStore()
	l := initLayer(t, mustNew(t, Config{}), env(st, "t"))
	store(t, l, result("get_page", ``, `{"id":"p1","title":"One"}`))
	if es := l.Entities(); len(es) != 1 || es[0].ID != "p1" {
		t.Errorf("Entities = %#v", es)
	}
	// "bytes" is the size of the stored state (read from the size the
	// last save wrote, not encoded again), and follows a change.
	stored, err := st.Get(t.Context(), l.key)
	if err != nil {
		t.Fatal(err)
	}
	if m := l.Metrics(); m["entries"] != 1 || m["bytes"] != int64(len(stored.Value)) {
		t.Errorf("Metrics = %v, want bytes %d", m, len(stored.Value))
	}
	l.mu.Lock()
	l.list = append(l.list, Entity{Type: "page", ID: "p-unsaved", Name: "Unsaved"})
	l.dirty = true
	want := len(encodeState(l.list, l.clock))
	l.mu.Unlock()
	if m := l.Metrics(); m["bytes"] != int64(want) {
		t.Errorf("Metrics after a change = %v, want bytes %d", m, want)
	}
	if err := l.Clear(t.Context()); err != nil {
		t.Fatal(err)
	}
	if m := l.Metrics(); m["entries"] != 0 || m["bytes"] != int64(len(encodeState(nil, l.clock))) {
		t.Errorf("Metrics after Clear = %v", m)
	}
	if recallText(t, l) != "" || len(initLayer(t, mustNew(t, Config{}), env(st, "t")).Entities()) != 0 {
		t.Errorf("Clear left entities behind")
	}
	store(t, l, result("get_page", ``, `{"id":"p2","title":"Two"}`)) // saves after a clear
	if got := ids(initLayer(t, mustNew(t, Config{}), env(st, "t")).Entities()); !reflect.DeepEqual(got, []string{"p2"}) {
		t.Errorf("after clear and store: %v", got)
	}
}

func TestDisabled(t *testing.T) {
	st := storage.NewMemoryStore()
	l := mustNew(t, Config{Disabled: true, RenderEmpty: true})
	live := initLayer(t, l, env(st, "t"))
	store(t, live, result("cms_createPage", ``, `{"page":{"id":"page-1","title":"One"}}`))
	live.Add(Entity{Type: "page", ID: "x", Name: "x"})
	if got := recallText(t, live); got != "" {
		t.Errorf("disabled layer recalls %q", got)
	}
	if keys, _ := st.List(t.Context(), ""); len(keys) != 0 {
		t.Errorf("disabled layer wrote %v", keys)
	}
	// In a stack next to another layer, nothing breaks.
	other := layer.Text(layer.Spec{ID: "rules", Slot: 10}, "be nice")
	s, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{l, other}, Env: env(st, "t")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := s.Init(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Store(ctx, turn(result("cms_createPage", ``, `{"page":{"id":"page-1"}}`))); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Recall(ctx, layer.Query{}, nil)
	if err != nil || len(rec) != 1 || rec[0].ID != "rules" {
		t.Errorf("Recall = %+v, %v", rec, err)
	}
	if _, err := s.Snapshot(ctx); err != nil {
		t.Errorf("Snapshot: %v", err)
	}
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestStack runs the layer in a layer.Stack across two runs on the same
// thread, as the agent loop does.
func TestStack(t *testing.T) {
	st := storage.NewMemoryStore()
	tmpl := mustNew(t, Config{})
	run := func(f func(ctx context.Context, s *layer.Stack)) {
		s, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{tmpl}, Env: env(st, "thread")})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if err := s.Init(ctx); err != nil {
			t.Fatal(err)
		}
		f(ctx, s)
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	run(func(ctx context.Context, s *layer.Stack) {
		if err := s.Store(ctx, turn(result("cms_createPage", `{"title":"About Us"}`, `{"page":{"id":"page-123","title":"About Us"}}`))); err != nil {
			t.Fatal(err)
		}
		l, _ := layer.Find[*Layer](s, DefaultID)
		if es := l.Entities(); len(es) != 1 {
			t.Errorf("Entities = %#v", es)
		}
	})
	run(func(ctx context.Context, s *layer.Stack) {
		rec, err := s.Recall(ctx, layer.Query{Text: "now add a hero section to it"}, nil)
		if err != nil || len(rec) != 1 || !strings.Contains(rec[0].Items[0].Text, `"About Us" (page-123)`) {
			t.Fatalf("second run recalls %+v, %v", rec, err)
		}
		child, err := s.Spawn(ctx, layer.Env{ThreadID: "child"})
		if err != nil {
			t.Fatal(err)
		}
		rec, _ = child.Recall(ctx, layer.Query{}, nil)
		if len(rec) != 1 || !strings.Contains(rec[0].Items[0].Text, "page-123") {
			t.Errorf("child recalls %+v", rec)
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	st := storage.NewMemoryStore()
	l := initLayer(t, mustNew(t, Config{Now: time.Now, TTL: time.Hour}), env(st, "t"))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for i := range 50 {
				switch i % 5 {
				case 0:
					_ = l.Store(ctx, turn(result("get_page", "", fmt.Sprintf(`{"id":"g%d-%d","title":"t"}`, g, i))))
				case 1:
					_, _ = l.Recall(ctx, layer.Query{})
				case 2:
					_ = l.Metrics()
				case 3:
					_, _ = l.Snapshot(ctx)
				default:
					_ = l.Entities()
				}
			}
		}()
	}
	wg.Wait()
	if n := len(l.Entities()); n != DefaultCapacity {
		t.Errorf("%d entities, want %d", n, DefaultCapacity)
	}
}

func TestMain(m *testing.M) {
	os.Exit(m.Run())
}

// With no counter in the query, Recall reports the default estimate of
// its block, counted once per change; a counter in the query is used
// instead.
func TestRecallTokensCachedDefault(t *testing.T) {
	l := mustBound(t, Config{})
	store(t, l, result("get_page", ``, `{"page":{"id":"p1","title":"About"}}`))
	for range 2 {
		items, err := l.Recall(t.Context(), layer.Query{})
		if err != nil || len(items) != 1 {
			t.Fatalf("Recall: %v, %v", items, err)
		}
		if want := (layer.Query{}).Count(items[0].Text); items[0].Tokens != want {
			t.Errorf("Tokens = %d, want the default estimate %d", items[0].Tokens, want)
		}
	}
	items, _ := l.Recall(t.Context(), layer.Query{Counter: byteCounter{}})
	if len(items) != 1 || items[0].Tokens != len(items[0].Text) {
		t.Errorf("with a counter: %+v", items)
	}
}

type byteCounter struct{}

func (byteCounter) Count(s string) int { return len(s) }

// TestSnapshotIsTheState: Snapshot returns the bytes the last save wrote
// while nothing changed since (the agent loop snapshots every layer each
// step), a copy the caller may keep; after a change not saved yet, a
// deletion, a Clear, and without a store, it is the state as it is now.
func TestSnapshotIsTheState(t *testing.T) {
	ctx := t.Context()
	snap := func(l *Layer) string {
		t.Helper()
		b, err := l.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	now := func(l *Layer) string {
		l.mu.Lock()
		defer l.mu.Unlock()
		return string(encodeState(l.list, l.clock))
	}
	st := storage.NewMemoryStore()
	l := initLayer(t, mustNew(t, Config{}), env(st, "t"))
	store(t, l, result("get_page", ``, `{"id":"p1","title":"One"}`))
	stored, err := st.Get(ctx, l.key)
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.Snapshot(ctx)
	if err != nil || string(first) != string(stored.Value) || string(first) != now(l) {
		t.Fatalf("Snapshot %s (%v), stored %s, state %s", first, err, stored.Value, now(l))
	}
	clear(first) // the caller's copy
	if snap(l) != now(l) {
		t.Error("modifying a snapshot changed the next one")
	}
	l.mu.Lock()
	l.list = append(l.list, Entity{Type: "page", ID: "p-unsaved", Name: "Unsaved"})
	l.dirty = true
	l.mu.Unlock()
	if s := snap(l); !strings.Contains(s, "p-unsaved") || s != now(l) {
		t.Errorf("after an unsaved change, Snapshot %s", s)
	}
	store(t, l, result("delete_page", `{"id":"p1"}`, `{"id":"p1","deleted":true}`))
	if s := snap(l); strings.Contains(s, `"p1"`) || s != now(l) {
		t.Errorf("after a deletion, Snapshot %s", s)
	}
	if err := l.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if s := snap(l); s != now(l) || strings.Contains(s, "page") {
		t.Errorf("after Clear, Snapshot %s", s)
	}
	mem := initLayer(t, mustNew(t, Config{}), env(nil, "t"))
	store(t, mem, result("get_page", ``, `{"id":"p9","title":"Nine"}`))
	if s := snap(mem); !strings.Contains(s, "p9") || s != now(mem) {
		t.Errorf("without a store, Snapshot %s", s)
	}
}
