package workingmemory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// TestTrust19_DuplicateKeysLastWins: of duplicate keys in a JSON object
// the last one wins, as in encoding/json, at every depth, in objects of
// every size (the decoder sorts small and large objects differently), on
// the update path and when a stored state is loaded.
func TestTrust19_DuplicateKeysLastWins(t *testing.T) {
	var big strings.Builder
	big.WriteString(`{"k":"first"`)
	for i := range 80 {
		fmt.Fprintf(&big, `,"f%02d":%d`, i, i)
	}
	big.WriteString(`,"k":"last"}`)
	inputs := []string{
		`{"k":"first","k":"last"}`,
		`{"o":{"k":"first","z":1,"k":"last"}}`,
		`{"a":[{"k":"first","k":"last"}]}`,
		`{"k":"first","b":1,"k":"middle","c":2,"k":"last"}`,
		big.String(),
	}
	for _, in := range inputs {
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			l := newLayer(t, Config{})
			if err := applyVia(t, path, l, in); err != nil {
				t.Fatalf("%s %.60s: %v", path, in, err)
			}
			if got := roundTrip(t, l.State()); !jsonDeepEqual(got, want) {
				t.Errorf("%s %.60s: state = %s, want the last duplicate (%s)", path, in, mustJSON(t, got), mustJSON(t, want))
			}
		}
		st := storage.NewMemoryStore()
		putState(t, st, DefaultStorageID, "thread-1", in)
		l := initLayer(t, Config{}, testEnv(st))
		if got := roundTrip(t, l.State()); !jsonDeepEqual(got, want) {
			t.Errorf("stored %.60s: loaded state = %s, want the last duplicate", in, mustJSON(t, got))
		}
	}
}

// TestTrust17_JSONSchemaGivesEveryVerdict: numbers that round to an
// allowed float64 but are not allowed (jsonschema compares them exactly)
// are rejected on every path: Update, the tool, the legacy call, a stored
// state at Init, Restore and the template.
func TestTrust17_JSONSchemaGivesEveryVerdict(t *testing.T) {
	cases := []struct{ schema, value string }{
		{`{"type":"number","maximum":10}`, `10.0000000000000000001`},
		{`{"type":"integer"}`, `1.0000000000000000001`},
		{`{"enum":[10]}`, `10.0000000000000000001`},
	}
	for _, c := range cases {
		schema := `{"type":"object","properties":{"x":` + c.schema + `}}`
		doc := `{"x":` + c.value + `}`
		for _, path := range paths {
			l := newLayer(t, Config{Schema: schema})
			if err := applyVia(t, path, l, doc); !errors.Is(err, ErrSchema) {
				t.Errorf("%s: %s with x=%s: err = %v, want ErrSchema", path, c.schema, c.value, err)
			}
			assertState(t, l, `{}`)
		}
		st := storage.NewMemoryStore()
		putState(t, st, DefaultStorageID, "thread-1", doc)
		l := initLayer(t, Config{Schema: schema}, testEnv(st))
		assertState(t, l, `{}`) // quarantined, not loaded
		if err := l.Restore(t.Context(), json.RawMessage(doc)); !errors.Is(err, ErrSchema) {
			t.Errorf("Restore: %s with x=%s: err = %v, want ErrSchema", c.schema, c.value, err)
		}
		if _, err := New(Config{Schema: schema, Template: doc}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("template: %s with x=%s: err = %v, want ErrInvalidConfig", c.schema, c.value, err)
		}
	}
}

// TestTrust16_SchemaLoadsNoExternalReference: a $ref to a file or any
// URL is not followed (the file's content would become the schema and be
// quoted in errors the model reads) unless Config.SchemaLoader is set.
func TestTrust16_SchemaLoadsNoExternalReference(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.json")
	if err := os.WriteFile(secret, []byte(`{"const":"TOPSECRET-4711"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + filepath.ToSlash(secret), "http://127.0.0.1:1/s.json", "other.json"} {
		schema := `{"type":"object","properties":{"x":{"$ref":"` + ref + `"}}}`
		_, err := New(Config{Schema: schema})
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), "SchemaLoader") {
			t.Errorf("$ref %s: err = %v, want ErrInvalidConfig naming Config.SchemaLoader", ref, err)
		}
		if strings.Contains(fmt.Sprint(err), "TOPSECRET") {
			t.Errorf("$ref %s: the error quotes the file: %v", ref, err)
		}
	}
	// With a loader the reference is the loader's to resolve.
	var asked []string
	l, err := New(Config{
		Schema: `{"type":"object","properties":{"x":{"$ref":"https://example.com/x.json"}}}`,
		SchemaLoader: func(url string) ([]byte, error) {
			asked = append(asked, url)
			return []byte(`{"type":"integer"}`), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 || asked[0] != "https://example.com/x.json" {
		t.Errorf("loader asked for %q", asked)
	}
	l = bindMem(t, l)
	if err := l.Update(t.Context(), json.RawMessage(`{"x":"no"}`)); !errors.Is(err, ErrSchema) {
		t.Errorf("loaded schema not applied: err = %v", err)
	}
}

// TestTrust16_SchemaSelfReferenceRejected: a schema whose references
// loop without consuming any of the value ({"$ref":"#"}) fails every
// value, so New rejects it; recursion through a property is fine.
func TestTrust16_SchemaSelfReferenceRejected(t *testing.T) {
	for _, schema := range []string{
		`{"$ref":"#"}`,
		`{"type":"object","allOf":[{"$ref":"#"}]}`,
		`{"type":"object","properties":{"x":{"$ref":"#/$defs/a"}},"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}}}`,
	} {
		if _, err := New(Config{Schema: schema}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "cycle") {
			t.Errorf("New(%s): err = %v, want ErrInvalidConfig naming the cycle", schema, err)
		}
	}
	l, err := New(Config{Schema: `{"type":"object","properties":{"name":{"type":"string"},"child":{"$ref":"#"}}}`})
	if err != nil {
		t.Fatalf("recursive tree schema: %v", err)
	}
	l = bindMem(t, l)
	if err := l.Update(t.Context(), json.RawMessage(`{"child":{"child":{"name":"leaf"}}}`)); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(t.Context(), json.RawMessage(`{"child":{"child":{"name":1}}}`)); !errors.Is(err, ErrSchema) {
		t.Errorf("recursive schema not applied: err = %v", err)
	}
}

// TestTrust16_SchemaSizeBounded: a schema over MaxSchemaBytes, or a
// pattern over MaxSchemaPattern bytes (a 1 MB pattern took seconds and
// 760 MB to compile), is refused at New, quickly.
func TestTrust16_SchemaSizeBounded(t *testing.T) {
	huge := strings.Repeat("a", 1<<20)
	for name, schema := range map[string]string{
		"pattern":           `{"type":"object","properties":{"x":{"type":"string","pattern":"` + huge + `"}}}`,
		"patternProperties": `{"type":"object","patternProperties":{"` + strings.Repeat("b", MaxSchemaPattern+1) + `":true}}`,
		"document":          `{"type":"object","description":"` + strings.Repeat("d", MaxSchemaBytes) + `"}`,
	} {
		start := time.Now()
		_, err := New(Config{Schema: schema})
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: err = %.300v, want ErrInvalidConfig", name, err)
		} else if len(err.Error()) > 2000 {
			t.Errorf("%s: error of %d bytes, want it short", name, len(err.Error()))
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: New took %v", name, d)
		}
	}
	ok := `{"type":"object","properties":{"x":{"type":"string","pattern":"^` + strings.Repeat("a", MaxSchemaPattern-2) + `$"}}}`
	if _, err := New(Config{Schema: ok}); err != nil {
		t.Errorf("pattern of MaxSchemaPattern bytes: %v", err)
	}
}

// TestTrust02_ReturnMergesOnlyTheChildsChanges: under ReturnMerge a
// returning child's changes (against the state it was spawned with) are
// applied to the parent's latest stored state: what the parent and a
// sibling thread of the same resource wrote meanwhile stays, keys the
// child deleted go, and a key both changed takes the child's value and is
// reported.
func TestTrust02_ReturnMergesOnlyTheChildsChanges(t *testing.T) {
	ctx := t.Context()
	st := storage.NewMemoryStore()
	var events []Warning
	cfg := Config{Spec: layer.Spec{Scope: "resource"}, OnReturn: ReturnMerge, OnWarning: func(e Warning) { events = append(events, e) }}
	env := testEnv(st)
	parent := initLayer(t, cfg, env)
	if err := parent.Update(ctx, json.RawMessage(`{"a":1,"b":1,"c":1,"n":{"x":1,"y":1},"list":[1,2]}`)); err != nil {
		t.Fatal(err)
	}
	cl, err := parent.OnSpawn(ctx, layer.Env{ThreadID: "child", ResourceID: env.ResourceID})
	if err != nil {
		t.Fatal(err)
	}
	child := cl.(*Layer)
	// A sibling thread of the same resource writes while the child runs.
	env2 := env
	env2.ThreadID = "thread-2"
	sibling := initLayer(t, cfg, env2)
	if err := sibling.Update(ctx, json.RawMessage(`{"b":2,"n":{"y":2},"s":"sibling"}`)); err != nil {
		t.Fatal(err)
	}
	if err := child.Update(ctx, json.RawMessage(`{"$delete":["c"],"a":3,"b":4,"n":{"x":3},"k":"child"}`)); err != nil {
		t.Fatal(err)
	}
	if err := parent.OnReturn(ctx, child); err != nil {
		t.Fatal(err)
	}
	want := `{"a":3,"b":4,"n":{"x":3,"y":2},"list":[1,2],"s":"sibling","k":"child"}`
	assertState(t, parent, want)
	if got, _ := storedState(t, st, storage.LayerKey(DefaultStorageID, storage.ResourceScope(env.ResourceID), "state")); !jsonDeepEqual(got, jsonOf(t, want)) {
		t.Errorf("stored %s, want %s", mustJSON(t, got), want)
	}
	if len(events) != 1 || events[0].Kind != WarningReturnConflict || fmt.Sprint(events[0].Paths) != "[/b]" {
		t.Errorf("events = %+v, want one return conflict on /b", events)
	}
}

// TestTrust02_RebaseCases: the three-way merge, case by case.
func TestTrust02_RebaseCases(t *testing.T) {
	tests := []struct {
		name, base, child, cur, want, conflicts string
	}{
		{"child unchanged keeps cur", `{"a":1}`, `{"a":1}`, `{"a":2,"b":1}`, `{"a":2,"b":1}`, `[]`},
		{"disjoint keys", `{"a":1,"b":1}`, `{"a":2,"b":1}`, `{"a":1,"b":3}`, `{"a":2,"b":3}`, `[]`},
		{"nested disjoint", `{"o":{"x":1,"y":1}}`, `{"o":{"x":2,"y":1}}`, `{"o":{"x":1,"y":3,"z":1}}`, `{"o":{"x":2,"y":3,"z":1}}`, `[]`},
		{"same change twice", `{"a":1}`, `{"a":2}`, `{"a":2}`, `{"a":2}`, `[]`},
		{"both changed: child wins", `{"o":{"x":1}}`, `{"o":{"x":2}}`, `{"o":{"x":3}}`, `{"o":{"x":2}}`, `["/o/x"]`},
		{"child deletes, cur unchanged", `{"a":1,"b":1}`, `{"b":1}`, `{"a":1,"b":2}`, `{"b":2}`, `[]`},
		{"child deletes what cur changed", `{"a":1}`, `{}`, `{"a":5}`, `{}`, `["/a"]`},
		{"cur deleted, child changed it too", `{"a":1,"b":1}`, `{"a":1,"b":2}`, `{"a":1}`, `{"a":1,"b":2}`, `["/b"]`},
		{"cur deleted, child left it", `{"a":1,"b":1}`, `{"a":2,"b":1}`, `{"a":1}`, `{"a":2}`, `[]`},
		{"both added the key", `{}`, `{"k/~":1}`, `{"k/~":2}`, `{"k/~":1}`, `["/k~1~0"]`},
		{"cur replaced the object", `{"o":{"x":1}}`, `{"o":{"x":2}}`, `{"o":"text"}`, `{"o":{"x":2}}`, `["/o"]`},
		{"arrays replace whole", `{"l":[1,2]}`, `{"l":[1]}`, `{"l":[1,2,3]}`, `{"l":[1]}`, `["/l"]`},
	}
	for _, tt := range tests {
		var conflicts []string
		got := rebase(mustDecode(t, tt.base), mustDecode(t, tt.child), mustDecode(t, tt.cur), nil, &conflicts)
		if g := string(jsonx.Append(nil, got, "")); !jsonDeepEqual(jsonOf(t, g), jsonOf(t, tt.want)) {
			t.Errorf("%s: got %s, want %s", tt.name, g, tt.want)
		}
		if conflicts == nil {
			conflicts = []string{}
		}
		if g, _ := json.Marshal(conflicts); string(g) != tt.conflicts {
			t.Errorf("%s: conflicts %s, want %s", tt.name, g, tt.conflicts)
		}
	}
}

// landThenFail is a store whose next Puts fail with a deadline error,
// after applying the write when land is set (as SQLite and Redis do when
// the deadline strikes after the write), and after running after (another
// writer, say). getErr makes Get fail too.
type landThenFail struct {
	storage.Store
	fails  int
	land   bool
	after  func()
	getErr error
}

func (s *landThenFail) Put(ctx context.Context, key string, v []byte, ver int64) (int64, error) {
	if s.fails == 0 {
		return s.Store.Put(ctx, key, v, ver)
	}
	s.fails--
	if s.land {
		if _, err := s.Store.Put(ctx, key, v, ver); err != nil {
			return 0, err
		}
		if s.after != nil {
			s.after()
		}
	}
	return 0, fmt.Errorf("landThenFail: put %q: %w", key, context.DeadlineExceeded)
}

func (s *landThenFail) Get(ctx context.Context, key string) (storage.Item, error) {
	if s.getErr != nil {
		return storage.Item{}, s.getErr
	}
	return s.Store.Get(ctx, key)
}

// TestTrust07_WriteLandedDespiteContextError: a write the store applied
// but reported as failed (a deadline error) is found by reading the key
// back, and reported as applied, so the model does not retry; a legacy
// call processed twice applies once; a write that did not land is
// reported as not applied; one whose fate cannot be read back says so.
func TestTrust07_WriteLandedDespiteContextError(t *testing.T) {
	ctx := t.Context()
	const start = `{"list":["a","b","c"]}`
	const del = `{"$delete":["list/0"]}`
	setup := func(t *testing.T) (*Layer, *landThenFail) {
		st := &landThenFail{Store: storage.NewMemoryStore()}
		l := initLayer(t, Config{Spec: layer.Spec{Scope: "resource"}}, testEnv(st))
		if err := l.Update(ctx, json.RawMessage(start)); err != nil {
			t.Fatal(err)
		}
		return l, st
	}
	stored := func(t *testing.T, st *landThenFail) string {
		got, _ := storedState(t, st.Store, storage.LayerKey(DefaultStorageID, storage.ResourceScope("user-1"), "state"))
		b, _ := json.Marshal(got)
		return string(b)
	}
	t.Run("landed: reported applied", func(t *testing.T) {
		l, st := setup(t)
		st.fails, st.land = 1, true
		if err := l.Update(ctx, json.RawMessage(del)); err != nil {
			t.Fatalf("Update = %v, want nil: the write landed", err)
		}
		assertState(t, l, `{"list":["b","c"]}`)
		if got := stored(t, st); got != `{"list":["b","c"]}` {
			t.Errorf("stored %s", got)
		}
	})
	t.Run("landed under a later write: reported applied", func(t *testing.T) {
		l, st := setup(t)
		env2 := testEnv(st.Store)
		env2.ThreadID = "thread-2"
		sibling := initLayer(t, Config{Spec: layer.Spec{Scope: "resource"}}, env2)
		st.fails, st.land = 1, true
		st.after = func() {
			if err := sibling.Update(ctx, json.RawMessage(`{"other":1}`)); err != nil {
				t.Error(err)
			}
		}
		if err := l.Update(ctx, json.RawMessage(del)); err != nil {
			t.Fatalf("Update = %v, want nil: the write landed", err)
		}
		if got := stored(t, st); got != `{"list":["b","c"],"other":1}` {
			t.Errorf("stored %s", got)
		}
	})
	t.Run("legacy call processed twice applies once", func(t *testing.T) {
		l, st := setup(t)
		turn := layer.Turn{ToolCalls: []layer.ToolCall{{ID: "call-7", Name: LegacyFunction, Arguments: del}}}
		st.fails, st.land = 1, true
		err := l.Store(ctx, turn)
		if err != nil {
			t.Logf("first Store: %v", err)
		}
		if err := l.Store(ctx, turn); err != nil { // the runtime retries the step
			t.Fatal(err)
		}
		if got := stored(t, st); got != `{"list":["b","c"]}` {
			t.Errorf("stored %s after a retried call, want one element deleted", got)
		}
		if err != nil {
			t.Errorf("first Store = %v, want nil: the write landed", err)
		}
		// A new call with the same arguments is a new update.
		turn.ToolCalls[0].ID = "call-8"
		if err := l.Store(ctx, turn); err != nil {
			t.Fatal(err)
		}
		if got := stored(t, st); got != `{"list":["c"]}` {
			t.Errorf("stored %s after a second call, want two elements deleted", got)
		}
	})
	t.Run("not landed: reported not applied", func(t *testing.T) {
		l, st := setup(t)
		st.fails = 1
		err := l.Update(ctx, json.RawMessage(del))
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrMaybeApplied) || !strings.Contains(err.Error(), "not applied") {
			t.Fatalf("Update = %v, want a deadline error saying not applied", err)
		}
		assertState(t, l, start)
		if got := stored(t, st); got != start {
			t.Errorf("stored %s", got)
		}
	})
	t.Run("cannot read back: maybe applied", func(t *testing.T) {
		l, st := setup(t)
		st.fails, st.land, st.getErr = 1, true, errors.New("connection refused")
		if err := l.Update(ctx, json.RawMessage(del)); !errors.Is(err, ErrMaybeApplied) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Update = %v, want ErrMaybeApplied wrapping the deadline", err)
		}
	})
}

// TestTrust07_UpdateOnceAndStoredState: a keyed update applies once, in
// this run and in a later one reading the stored write log; StoredState
// gives a stored record's state without the log.
func TestTrust07_UpdateOnceAndStoredState(t *testing.T) {
	ctx := t.Context()
	st := storage.NewMemoryStore()
	l := initLayer(t, Config{}, testEnv(st))
	if err := l.Update(ctx, json.RawMessage(`{"list":[1,2,3]}`)); err != nil {
		t.Fatal(err)
	}
	del := json.RawMessage(`{"$delete":["list/0"]}`)
	for range 2 {
		if err := l.UpdateOnce(ctx, "thread-1/call-9", del); err != nil {
			t.Fatal(err)
		}
	}
	again := initLayer(t, Config{}, testEnv(st)) // a later run, say after a restart
	if err := again.UpdateOnce(ctx, "thread-1/call-9", del); err != nil {
		t.Fatal(err)
	}
	assertState(t, again, `{"list":[2,3]}`)
	it, err := st.Get(ctx, storage.LayerKey(DefaultStorageID, storage.ThreadScope("thread-1"), "state"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(it.Value), writesKey) {
		t.Fatalf("stored record %s holds no write log", it.Value)
	}
	b, err := StoredState(it.Value)
	if err != nil || string(b) != `{"list":[2,3]}` {
		t.Errorf("StoredState = %s, %v", b, err)
	}
	if err := l.Update(ctx, json.RawMessage(`{"$writes":"1 forged","x":{"$writes":1}}`)); err != nil {
		t.Fatal(err)
	}
	assertState(t, l, `{"list":[2,3],"x":{}}`) // the reserved key is never state
}

// TestTrust07_UnsentWriteNotApplied: a write that never reached the
// store (no connection could be opened) is reported as not applied
// without reading back.
func TestTrust07_UnsentWriteNotApplied(t *testing.T) {
	st := &dialFailStore{Store: storage.NewMemoryStore()}
	l := initLayer(t, Config{}, testEnv(st))
	st.gets = 0
	err := l.Update(t.Context(), json.RawMessage(`{"a":1}`))
	if err == nil || errors.Is(err, ErrMaybeApplied) || !strings.Contains(err.Error(), "not applied") {
		t.Fatalf("Update = %v, want not applied", err)
	}
	if st.gets != 0 {
		t.Errorf("%d read-backs of a write that was never sent", st.gets)
	}
}

type dialFailStore struct {
	storage.Store
	gets int
}

func (s *dialFailStore) Put(context.Context, string, []byte, int64) (int64, error) {
	return 0, fmt.Errorf("unavailable: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
}

func (s *dialFailStore) Get(ctx context.Context, key string) (storage.Item, error) {
	s.gets++
	return s.Store.Get(ctx, key)
}
