package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// storeSpec says which store a test or a worker process opens. It is
// passed to workers as JSON.
type storeSpec struct {
	Backend   string `json:"backend"`             // "memory", "sqlite", "redis" or "postgres"
	Path      string `json:"path,omitempty"`      // sqlite file
	URL       string `json:"url,omitempty"`       // redis or postgres URL
	Namespace string `json:"namespace,omitempty"` // redis key prefix; postgres schema
}

// openers open a store of each backend. The Redis one is registered by
// redis_test.go.
var openers = map[string]func(ctx context.Context, s storeSpec) (storage.Store, func() error, error){
	"memory": func(context.Context, storeSpec) (storage.Store, func() error, error) {
		return storage.NewMemoryStore(), func() error { return nil }, nil
	},
	"sqlite": func(ctx context.Context, s storeSpec) (storage.Store, func() error, error) {
		st, err := sqlite.Open(ctx, sqlite.Config{Path: s.Path})
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	},
}

// openWorkerStore decodes a worker's JSON arguments into args and opens
// the store they name: the arguments of every worker that shares a
// backend carry it as "store".
func openWorkerStore(ctx context.Context, raw string, args any) (storage.Store, func() error, error) {
	if err := json.Unmarshal([]byte(raw), args); err != nil {
		return nil, nil, err
	}
	var named struct {
		Store storeSpec `json:"store"`
	}
	if err := json.Unmarshal([]byte(raw), &named); err != nil {
		return nil, nil, err
	}
	return openStore(ctx, named.Store)
}

// openStore opens the store s names; the func closes it.
func openStore(ctx context.Context, s storeSpec) (storage.Store, func() error, error) {
	open, ok := openers[s.Backend]
	if !ok {
		return nil, nil, fmt.Errorf("unknown backend %q", s.Backend)
	}
	return open(ctx, s)
}

// sharedBackends returns the specs of the durable backends a
// multi-process scenario runs against, each fresh: an SQLite file in a
// temporary directory, a new namespace on the Redis server (skipped
// when there is none, see redisURL), and a new schema on the PostgreSQL
// server (skipped likewise, see postgres_test.go).
func sharedBackends(t *testing.T) []storeSpec {
	t.Helper()
	specs := []storeSpec{{Backend: "sqlite", Path: filepath.Join(t.TempDir(), "shared.db")}}
	if spec, ok := redisSpec(t); ok {
		specs = append(specs, spec)
	}
	if spec, ok := postgresSpec(t); ok {
		specs = append(specs, spec)
	}
	return specs
}

// postgresSpec is replaced by postgres_test.go.
var postgresSpec = func(t testing.TB) (storeSpec, bool) { return storeSpec{}, false }

// stopSharedPostgres is replaced by postgres_test.go.
var stopSharedPostgres = func() {}

// redisSpec is replaced by redis_test.go once the Redis backend exists.
var redisSpec = func(t *testing.T) (storeSpec, bool) {
	t.Helper()
	t.Log("redis: backend not built into this suite")
	return storeSpec{}, false
}

// stopSharedRedis is replaced by redis_test.go.
var stopSharedRedis = func() {}

// mustOpen opens s for a test and closes it at the end.
func mustOpen(t *testing.T, s storeSpec) storage.Store {
	t.Helper()
	st, closeFn, err := openStore(t.Context(), s)
	if err != nil {
		t.Fatalf("open %s store: %v", s.Backend, err)
	}
	t.Cleanup(func() {
		if err := closeFn(); err != nil {
			t.Errorf("close %s store: %v", s.Backend, err)
		}
	})
	return st
}

// dump returns every key and value of a store, to compare its contents
// before and after an operation.
func dump(ctx context.Context, t *testing.T, st storage.Store) map[string]string {
	t.Helper()
	keys, err := st.List(ctx, "")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		it, err := st.Get(ctx, k)
		if err != nil {
			t.Fatalf("Get(%q): %v", k, err)
		}
		out[k] = string(it.Value)
	}
	return out
}

// sameContents fails the test when after differs from before, except for
// the keys allowed to appear (new keys with these prefixes).
func sameContents(t *testing.T, what string, before, after map[string]string, newPrefixes ...string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(before)) {
		v, ok := after[k]
		switch {
		case !ok:
			t.Errorf("%s: key %q was lost", what, k)
		case v != before[k]:
			t.Errorf("%s: key %q was altered:\nbefore: %.200q\nafter:  %.200q", what, k, before[k], v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; ok {
			continue
		}
		allowed := false
		for _, p := range newPrefixes {
			if len(k) >= len(p) && k[:len(p)] == p {
				allowed = true
			}
		}
		if !allowed {
			t.Errorf("%s: unexpected new key %q = %.200q", what, k, after[k])
		}
	}
}
