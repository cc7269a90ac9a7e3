package workingmemory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// The scratchpad's schema, before and after a change: v2 renames "todo"
// to "tasks" and makes it required.
const (
	schemaV1 = `{"type":"object","properties":{"todo":{"type":"array","items":{"type":"string"}}},"additionalProperties":false}`
	schemaV2 = `{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"string"}},"version":{"const":2}},"required":["tasks","version"],"additionalProperties":false}`
)

// storeV1 stores a state under schema v1 in a fresh store and returns the
// store and the env that loads it.
func storeV1(t *testing.T) (storage.Store, layer.Env) {
	t.Helper()
	st := storage.NewMemoryStore()
	env := layer.Env{ThreadID: "t1", Store: st, Logger: slog.New(slog.DiscardHandler)}
	v1, err := workingmemory.New(workingmemory.Config{Schema: schemaV1})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := v1.Init(t.Context(), env)
	if err != nil {
		t.Fatal(err)
	}
	if err := bound.(*workingmemory.Layer).Update(t.Context(), json.RawMessage(`{"todo":["write docs"]}`)); err != nil {
		t.Fatal(err)
	}
	return st, env
}

// events collects a scratchpad's events.
type events struct {
	mu  sync.Mutex
	got []workingmemory.Warning
}

func (e *events) add(ev workingmemory.Warning) { e.mu.Lock(); e.got = append(e.got, ev); e.mu.Unlock() }

// TestFit01_MigrateAtLoad: a state stored under schema v1, loaded with
// schema v2 and a migration, becomes the migrated state, which is
// persisted with compare-and-swap and reported as migrated.
func TestFit01_MigrateAtLoad(t *testing.T) {
	ctx := t.Context()
	st, env := storeV1(t)
	before, err := st.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope("t1"), "state"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	var ev events
	calls := 0
	v2, err := workingmemory.New(workingmemory.Config{
		Schema:    schemaV2,
		OnWarning: ev.add,
		Migrate: func(old any) (any, error) {
			calls++
			m, ok := old.(map[string]any)
			if !ok {
				return nil, errors.New("not an object")
			}
			return map[string]any{"tasks": m["todo"], "version": 2}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := v2.Init(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("Migrate called %d times, want 1", calls)
	}
	got := bound.(*workingmemory.Layer).State()
	if want := `{"tasks":["write docs"],"version":2}`; compact(t, got) != want {
		t.Errorf("state = %s, want %s", compact(t, got), want)
	}
	after, err := st.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope("t1"), "state"))
	if err != nil {
		t.Fatal(err)
	}
	if after.Version == before.Version {
		t.Error("the migrated state was not persisted (same version)")
	}
	stored, err := workingmemory.StoredState(after.Value)
	if err != nil || string(stored) != `{"tasks":["write docs"],"version":2}` {
		t.Errorf("stored = %s, %v; want the migrated state", stored, err)
	}
	if len(ev.got) != 1 || ev.got[0].Kind != workingmemory.WarningMigrated {
		t.Fatalf("events = %+v, want one %q", ev.got, workingmemory.WarningMigrated)
	}
	if !strings.Contains(logs.String(), "migrated at load") || strings.Contains(logs.String(), "update rejected") {
		t.Errorf("log = %q, want a line saying the state was migrated at load", logs.String())
	}
	// Loaded again, the state passes v2: no second migration.
	if _, err := v2.Init(ctx, env); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("Migrate called %d times after a second load, want 1", calls)
	}
}

// TestFit02_QuarantineAtLoad: without a migration (or with one that fails
// or returns a state the schema rejects), the stored state is set aside
// under a quarantine key, the run starts from the template, and the
// warning says it was quarantined at load, with the key, instead of
// "update rejected".
func TestFit02_QuarantineAtLoad(t *testing.T) {
	cases := map[string]func(any) (any, error){
		"no migration":     nil,
		"migration fails":  func(any) (any, error) { return nil, errors.New("cannot migrate") },
		"migration is bad": func(any) (any, error) { return map[string]any{"tasks": "not a list"}, nil },
	}
	for name, migrate := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			st, env := storeV1(t)
			var logs bytes.Buffer
			env.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			var ev events
			v2, err := workingmemory.New(workingmemory.Config{
				Schema: schemaV2, Template: `{"tasks":[],"version":2}`, Migrate: migrate, OnWarning: ev.add,
			})
			if err != nil {
				t.Fatal(err)
			}
			bound, err := v2.Init(ctx, env)
			if err != nil {
				t.Fatal(err)
			}
			if got := compact(t, bound.(*workingmemory.Layer).State()); got != `{"tasks":[],"version":2}` {
				t.Errorf("state = %s, want the template", got)
			}
			if len(ev.got) != 1 || ev.got[0].Kind != workingmemory.WarningQuarantined || ev.got[0].Key == "" {
				t.Fatalf("events = %+v, want one %q with its key", ev.got, workingmemory.WarningQuarantined)
			}
			q, err := st.Get(ctx, ev.got[0].Key)
			if err != nil {
				t.Fatalf("quarantine key %q: %v", ev.got[0].Key, err)
			}
			if s, _ := workingmemory.StoredState(q.Value); string(s) != `{"todo":["write docs"]}` {
				t.Errorf("quarantined = %s, want the v1 state", s)
			}
			if _, err := st.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope("t1"), "state")); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("state key after quarantine: %v, want ErrNotFound", err)
			}
			l := logs.String()
			if !strings.Contains(l, "quarantined at load") || !strings.Contains(l, ev.got[0].Key) || strings.Contains(l, "update rejected") {
				t.Errorf("log = %q, want \"quarantined at load\" with the key, without \"update rejected\"", l)
			}
		})
	}
}

func compact(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// raceStore lets another writer store a state just before the first
// compare-and-swap Put of the state key.
type raceStore struct {
	storage.Store
	once  sync.Once
	other []byte
}

func (s *raceStore) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	if strings.HasSuffix(key, "/state") {
		s.once.Do(func() {
			if _, err := s.Store.Put(ctx, key, s.other, storage.AnyVersion); err != nil {
				panic(err)
			}
		})
	}
	return s.Store.Put(ctx, key, value, ifVersion)
}

// TestFit10_MigrateLosesNoConcurrentWrite: the migrated state is stored
// with compare-and-swap; when another writer stored a state meanwhile,
// the migration's write fails, Init reads again and takes the other
// writer's state (which passes the schema) instead of overwriting it.
func TestFit10_MigrateLosesNoConcurrentWrite(t *testing.T) {
	ctx := t.Context()
	st, env := storeV1(t)
	rs := &raceStore{Store: st, other: []byte(`{"tasks":["from the other writer"],"version":2}`)}
	env.Store = rs
	calls := 0
	v2, err := workingmemory.New(workingmemory.Config{Schema: schemaV2, Migrate: func(old any) (any, error) {
		calls++
		return map[string]any{"tasks": []string{"migrated"}, "version": 2}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := v2.Init(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := compact(t, bound.(*workingmemory.Layer).State()); got != `{"tasks":["from the other writer"],"version":2}` {
		t.Errorf("state = %s, want the other writer's", got)
	}
	it, _ := st.Get(ctx, storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope("t1"), "state"))
	if s, _ := workingmemory.StoredState(it.Value); string(s) != `{"tasks":["from the other writer"],"version":2}` {
		t.Errorf("stored = %s, want the other writer's", s)
	}
	if calls != 1 {
		t.Errorf("Migrate called %d times, want 1", calls)
	}
}
