package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// Options are the optional hooks of [RunWith]. The zero Options is valid:
// the checks that need a hook are skipped, with a message saying which.
type Options struct {
	// Wipe empties the backend the way an operator or a crash can behind
	// the stores' backs: Redis restarted without persistence or flushed, an
	// SQLite file deleted and created again, a new in-memory store. It
	// returns the store to use from then on: s itself when s survives the
	// wipe (a Redis namespace emptied), or a store opened anew on the same
	// place (s is then closed by Wipe or by the cleanup newStore
	// registered). The "restarted empty" checks hold a version read before
	// the wipe and require that it conflicts afterwards. nil skips them.
	Wipe func(t *testing.T, s storage.Store) storage.Store
}

// Run runs the conformance suite against the stores newStore returns, one
// fresh store per subtest. See the package documentation for what it
// checks and what newStore must guarantee. It is RunWith with the zero
// [Options]: the checks that need a hook are skipped.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Helper()
	RunWith(t, newStore, Options{})
}

// RunWith is [Run] with the hooks of opts.
func RunWith(t *testing.T, newStore func(t *testing.T) storage.Store, opts Options) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"CRUD/GetMissing", testGetMissing},
		{"CRUD/PutGet", testPutGet},
		{"CRUD/Overwrite", testOverwrite},
		{"CRUD/IndependentKeys", testIndependentKeys},
		{"CAS/NoVersionCreates", testCASNoVersionCreates},
		{"CAS/NoVersionOnExistingConflicts", testCASNoVersionExisting},
		{"CAS/StaleVersionConflicts", testCASStale},
		{"CAS/VersionForMissingKeyConflicts", testCASMissing},
		{"CAS/AnyVersion", testCASAnyVersion},
		{"CAS/ConcurrentCreateOneWinner", testCASConcurrentCreate},
		{"Delete/Unconditional", testDeleteUnconditional},
		{"Delete/MissingAnyVersion", testDeleteMissingAny},
		{"Delete/MissingWithVersion", testDeleteMissingVersion},
		{"Delete/StaleVersion", testDeleteStale},
		{"Delete/CurrentVersion", testDeleteCurrent},
		{"Delete/Recreate", testDeleteRecreate},
		{"List/SortedByPrefix", testListSorted},
		{"List/EmptyPrefixListsAll", testListAll},
		{"List/NoMatch", testListNoMatch},
		{"List/SiblingNotMatched", testListSibling},
		{"List/MetacharactersLiteral", testListMeta},
		{"List/ScopeIsolation", testListScopeIsolation},
		{"List/AfterDelete", testListAfterDelete},
		{"Keys/HostileIDs", testHostileIDs},
		{"Keys/TypedScopes", testTypedScopes},
		{"Keys/RawUnusualKeys", testRawUnusualKeys},
		{"Keys/Invalid", testInvalidKeys},
		{"Keys/MaxLen", testMaxLenKey},
		{"Values/Empty", testEmptyValue},
		{"Values/AllBytes", testAllBytes},
		{"Values/Large", testLargeValue},
		{"Values/PutCopies", testPutCopies},
		{"Values/GetCopies", testGetCopies},
		{"Context/Canceled", testContextCanceled},
		{"Context/DeadlineExceeded", testContextDeadline},
		{"Concurrency/IncrementsNoLostUpdate", testConcurrentIncrements},
		{"Versions/NoABAAfterDelete", testNoABAAfterDelete},
		{"Versions/NoABAAfterDeleteAnyVersion", testNoABAAfterDeleteAny},
		{"Versions/UniqueAcrossRecreates", testVersionsUnique},
		{"Versions/NoABAAfterWipe", func(t *testing.T, s storage.Store) { testNoABAAfterWipe(t, s, opts.Wipe) }},
		{"Errors/LongKeyShortened", testLongKeyShortened},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			if s == nil {
				t.Fatal("newStore returned nil")
			}
			tc.fn(t, s)
		})
	}
	if _, ok := newStore(t).(storage.MultiGetter); ok {
		RunGetMany(t, newStore)
	}
	if _, ok := newStore(t).(storage.Searcher); !ok {
		return
	}
	for _, tc := range searchTests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t).(storage.Searcher)) })
	}
}

// ---- helpers ----

func mustPut(t *testing.T, s storage.Store, key string, value []byte, ifVersion int64) int64 {
	t.Helper()
	v, err := s.Put(t.Context(), key, value, ifVersion)
	if err != nil {
		t.Fatalf("Put(%q, ifVersion=%d): %v", key, ifVersion, err)
	}
	if v <= 0 {
		t.Fatalf("Put(%q) returned version %d, want a positive version", key, v)
	}
	return v
}

func mustGet(t *testing.T, s storage.Store, key string) storage.Item {
	t.Helper()
	it, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if it.Key != key {
		t.Errorf("Get(%q).Key = %q, want the key asked for", key, it.Key)
	}
	return it
}

func mustList(t *testing.T, s storage.Store, prefix string) []string {
	t.Helper()
	keys, err := s.List(t.Context(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return keys
}

// wantValue checks that key holds want at version wantVersion (0: any).
func wantValue(t *testing.T, s storage.Store, key string, want []byte, wantVersion int64) {
	t.Helper()
	it := mustGet(t, s, key)
	if !bytes.Equal(it.Value, want) {
		t.Errorf("Get(%q).Value = %s, want %s", key, short(it.Value), short(want))
	}
	if wantVersion != 0 && it.Version != wantVersion {
		t.Errorf("Get(%q).Version = %d, want %d", key, it.Version, wantVersion)
	}
}

func wantMissing(t *testing.T, s storage.Store, key string) {
	t.Helper()
	_, err := s.Get(t.Context(), key)
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Get(%q) error = %v, want one that is storage.ErrNotFound", key, err)
	}
}

func wantKeys(t *testing.T, s storage.Store, prefix string, want []string) {
	t.Helper()
	got := mustList(t, s, prefix)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("List(%q) = %q, want %q", prefix, got, want)
	}
}

func short(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%q... (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// ---- CRUD ----

func testGetMissing(t *testing.T, s storage.Store) {
	wantMissing(t, s, "missing")
	wantMissing(t, s, storage.LayerKey("wm", "t1", "state"))
}

func testPutGet(t *testing.T, s storage.Store) {
	key := storage.LayerKey("working-memory", "thread-1", "state")
	v := mustPut(t, s, key, []byte(`{"plan":"x"}`), storage.NoVersion)
	it := mustGet(t, s, key)
	if string(it.Value) != `{"plan":"x"}` {
		t.Errorf("Value = %q, want %q", it.Value, `{"plan":"x"}`)
	}
	if it.Version != v {
		t.Errorf("Version = %d, want %d (returned by Put)", it.Version, v)
	}
}

func testOverwrite(t *testing.T, s storage.Store) {
	key := "k"
	v1 := mustPut(t, s, key, []byte("one"), storage.NoVersion)
	v2 := mustPut(t, s, key, []byte("two"), v1)
	// Versions are opaque: a write gives a new one, in no set order.
	if v2 == v1 {
		t.Errorf("version after second write = %d, the same as after the first", v2)
	}
	v3 := mustPut(t, s, key, []byte("three"), v2)
	if v3 == v2 || v3 == v1 {
		t.Errorf("version after third write = %d, given before (%d, %d)", v3, v1, v2)
	}
	wantValue(t, s, key, []byte("three"), v3)
}

func testIndependentKeys(t *testing.T, s storage.Store) {
	keys := []string{"a", "b", "a/b", "a/b/c", "b/a"}
	for i, k := range keys {
		mustPut(t, s, k, []byte("v"+strconv.Itoa(i)), storage.NoVersion)
	}
	mustPut(t, s, "a", []byte("changed"), storage.AnyVersion)
	for i, k := range keys[1:] {
		wantValue(t, s, k, []byte("v"+strconv.Itoa(i+1)), 0)
	}
	wantValue(t, s, "a", []byte("changed"), 0)
}

// ---- CAS ----

func testCASNoVersionCreates(t *testing.T, s storage.Store) {
	v := mustPut(t, s, "new", []byte("x"), storage.NoVersion)
	wantValue(t, s, "new", []byte("x"), v)
}

func testCASNoVersionExisting(t *testing.T, s storage.Store) {
	v := mustPut(t, s, "k", []byte("first"), storage.NoVersion)
	_, err := s.Put(t.Context(), "k", []byte("second"), storage.NoVersion)
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("create of an existing key: error = %v, want storage.ErrConflict", err)
	}
	wantValue(t, s, "k", []byte("first"), v)
}

func testCASStale(t *testing.T, s storage.Store) {
	v1 := mustPut(t, s, "k", []byte("one"), storage.NoVersion)
	v2 := mustPut(t, s, "k", []byte("two"), v1)
	// A writer that read v1 lost the race to the writer above.
	_, err := s.Put(t.Context(), "k", []byte("lost"), v1)
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Put with stale version: error = %v, want storage.ErrConflict", err)
	}
	wantValue(t, s, "k", []byte("two"), v2)
	// A version from the future is just as wrong.
	_, err = s.Put(t.Context(), "k", []byte("future"), v2+100)
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Put with future version: error = %v, want storage.ErrConflict", err)
	}
	wantValue(t, s, "k", []byte("two"), v2)
	// The current version still works after failures.
	v3 := mustPut(t, s, "k", []byte("three"), v2)
	wantValue(t, s, "k", []byte("three"), v3)
}

func testCASMissing(t *testing.T, s storage.Store) {
	_, err := s.Put(t.Context(), "absent", []byte("x"), 1)
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Put(version 1) of a missing key: error = %v, want storage.ErrConflict", err)
	}
	wantMissing(t, s, "absent")
}

func testCASAnyVersion(t *testing.T, s storage.Store) {
	v1 := mustPut(t, s, "k", []byte("one"), storage.AnyVersion)
	wantValue(t, s, "k", []byte("one"), v1)
	v2 := mustPut(t, s, "k", []byte("two"), storage.AnyVersion)
	if v2 == v1 {
		t.Errorf("AnyVersion overwrite returned version %d again", v2)
	}
	wantValue(t, s, "k", []byte("two"), v2)
}

func testCASConcurrentCreate(t *testing.T, s storage.Store) {
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.Put(t.Context(), "once", []byte(strconv.Itoa(i)), storage.NoVersion)
		})
	}
	wg.Wait()
	winner := soleWinner(t, "create", errs)
	wantValue(t, s, "once", []byte(strconv.Itoa(winner)), 0)
}

// ---- Delete ----

func testDeleteUnconditional(t *testing.T, s storage.Store) {
	mustPut(t, s, "k", []byte("x"), storage.NoVersion)
	mustPut(t, s, "other", []byte("y"), storage.NoVersion)
	if err := s.Delete(t.Context(), "k", storage.AnyVersion); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	wantMissing(t, s, "k")
	wantValue(t, s, "other", []byte("y"), 0)
}

func testDeleteMissingAny(t *testing.T, s storage.Store) {
	if err := s.Delete(t.Context(), "never-stored", storage.AnyVersion); err != nil {
		t.Fatalf("Delete(AnyVersion) of a missing key: %v, want nil", err)
	}
}

func testDeleteMissingVersion(t *testing.T, s storage.Store) {
	err := s.Delete(t.Context(), "never-stored", 1)
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Delete(version 1) of a missing key: error = %v, want storage.ErrNotFound", err)
	}
}

func testDeleteStale(t *testing.T, s storage.Store) {
	v1 := mustPut(t, s, "k", []byte("one"), storage.NoVersion)
	v2 := mustPut(t, s, "k", []byte("two"), v1)
	err := s.Delete(t.Context(), "k", v1)
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("Delete with stale version: error = %v, want storage.ErrConflict", err)
	}
	wantValue(t, s, "k", []byte("two"), v2)
}

func testDeleteCurrent(t *testing.T, s storage.Store) {
	v := mustPut(t, s, "k", []byte("one"), storage.NoVersion)
	if err := s.Delete(t.Context(), "k", v); err != nil {
		t.Fatalf("Delete with current version: %v", err)
	}
	wantMissing(t, s, "k")
	// A second conditional delete finds nothing.
	if err := s.Delete(t.Context(), "k", v); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second Delete: error = %v, want storage.ErrNotFound", err)
	}
}

func testDeleteRecreate(t *testing.T, s storage.Store) {
	mustPut(t, s, "k", []byte("old"), storage.NoVersion)
	if err := s.Delete(t.Context(), "k", storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	v := mustPut(t, s, "k", []byte("new"), storage.NoVersion)
	wantValue(t, s, "k", []byte("new"), v)
}

// ---- List ----

func testListSorted(t *testing.T, s storage.Store) {
	// Inserted out of order; byte order puts "B" before "a" and "a/b" before "a0".
	keys := []string{"p/zeta", "p/a0", "p/B", "p/a/b", "p/a", "q/a", "p", "o/p"}
	for _, k := range keys {
		mustPut(t, s, k, []byte(k), storage.NoVersion)
	}
	wantKeys(t, s, "p/", []string{"p/B", "p/a", "p/a/b", "p/a0", "p/zeta"})
	wantKeys(t, s, "p/a", []string{"p/a", "p/a/b", "p/a0"})
	wantKeys(t, s, "p", []string{"p", "p/B", "p/a", "p/a/b", "p/a0", "p/zeta"})
	got := mustList(t, s, "")
	if !slices.IsSorted(got) {
		t.Errorf("List(\"\") = %q, not sorted", got)
	}
}

func testListAll(t *testing.T, s storage.Store) {
	want := []string{"a", "b/c", "threads/x/checkpoint"}
	for _, k := range want {
		mustPut(t, s, k, nil, storage.NoVersion)
	}
	wantKeys(t, s, "", want)
}

func testListNoMatch(t *testing.T, s storage.Store) {
	wantKeys(t, s, "", nil)
	mustPut(t, s, "a/1", []byte("x"), storage.NoVersion)
	wantKeys(t, s, "b/", nil)
	wantKeys(t, s, "a/1/", nil)
	wantKeys(t, s, "a/10", nil)
}

func testListSibling(t *testing.T, s storage.Store) {
	for _, k := range []string{"a/b/x", "a/bc/x", "a/b", "a/bc", "a/b0"} {
		mustPut(t, s, k, []byte("v"), storage.NoVersion)
	}
	wantKeys(t, s, "a/b/", []string{"a/b/x"})
	wantKeys(t, s, "a/bc/", []string{"a/bc/x"})
}

func testListMeta(t *testing.T, s storage.Store) {
	// Characters that are wildcards or escapes in SQL LIKE, GLOB and Redis
	// MATCH patterns must be matched literally.
	keys := []string{
		"m/%/1", "m/_/1", "m/x/1", "m/*/1", "m/?/1", "m/[/1", "m/]/1",
		`m/\/1`, "m/[x]/1", "m/a%b/1", "m/aXb/1", "m/^/1", "m/-/1",
	}
	for _, k := range keys {
		mustPut(t, s, k, []byte(k), storage.NoVersion)
	}
	for _, k := range keys {
		prefix := strings.TrimSuffix(k, "1")
		wantKeys(t, s, prefix, []string{k})
	}
	wantKeys(t, s, "m/a%", []string{"m/a%b/1"})
	wantKeys(t, s, "m/[", []string{"m/[/1", "m/[x]/1"})
}

func testListScopeIsolation(t *testing.T, s storage.Store) {
	scopes := []string{"t1", "t10", "t1/x", "t", "T1"}
	for _, sc := range scopes {
		for _, name := range []string{"state", "quarantine"} {
			mustPut(t, s, storage.LayerKey("wm", sc, name), []byte(sc+"/"+name), storage.NoVersion)
		}
	}
	mustPut(t, s, storage.LayerKey("wm2", "t1", "state"), []byte("other layer"), storage.NoVersion)
	mustPut(t, s, storage.ThreadKey("t1", "checkpoint"), []byte("thread"), storage.NoVersion)
	for _, sc := range scopes {
		want := []string{storage.LayerKey("wm", sc, "quarantine"), storage.LayerKey("wm", sc, "state")}
		slices.Sort(want)
		wantKeys(t, s, storage.LayerPrefix("wm", sc), want)
	}
	wantKeys(t, s, storage.LayerPrefix("wm2", "t1"), []string{storage.LayerKey("wm2", "t1", "state")})
	wantKeys(t, s, storage.ThreadPrefix("t1"), []string{storage.ThreadKey("t1", "checkpoint")})
}

func testListAfterDelete(t *testing.T, s storage.Store) {
	for _, k := range []string{"d/1", "d/2", "d/3"} {
		mustPut(t, s, k, []byte("v"), storage.NoVersion)
	}
	if err := s.Delete(t.Context(), "d/2", storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, s, "d/", []string{"d/1", "d/3"})
}

// ---- Keys ----

// testTypedScopes: typed scope keys of every kind, built from IDs that
// collide across kinds ("7" as a thread, a resource, an anonymous
// thread), that nest ("c1", "c1/child-care", a child of "c1"), that look
// typed ("resource:7") or are empty, and the untyped keys of the same
// IDs, are all different keys, each listing only its own records
// (issue 23, TestTrust301).
func testTypedScopes(t *testing.T, s storage.Store) {
	seen := map[string]string{}
	for _, sc := range typedScopes() {
		k := storage.LayerKey("wm", sc, "state")
		if err := storage.ValidateKey(k); err != nil {
			t.Fatalf("key %q of scope %q is invalid: %v", k, sc, err)
		}
		if prev, dup := seen[k]; dup {
			if prev == sc {
				continue
			}
			t.Fatalf("scope keys %q and %q share the key %q", prev, sc, k)
		}
		seen[k] = sc
		mustPut(t, s, k, []byte(sc), storage.NoVersion)
	}
	for k, sc := range seen {
		wantKeys(t, s, storage.LayerPrefix("wm", sc), []string{k})
		wantValue(t, s, k, []byte(sc), 0)
	}
}

// typedScopes returns the scope keys testTypedScopes stores under: of
// every kind, for IDs that collide, nest, look typed or are empty, and
// the untyped IDs themselves.
func typedScopes() []string {
	ids := []string{"7", "c1", "c1/child-care", "resource:7", "thread:7", "", "global:", "%", "a:b"}
	var scopes []string
	for _, id := range ids {
		scopes = append(scopes, storage.ThreadScope(id), storage.ResourceScope(id), storage.AnonymousScope(id),
			storage.ExecutionScope(id), id)
		if id != "" {
			scopes = append(scopes,
				storage.ScopeKeyOf(storage.ScopeKeyParts{Kind: storage.KindThread, ID: "c1", Child: id}),
				storage.ScopeKeyOf(storage.ScopeKeyParts{Kind: storage.KindAnonymous, ID: id, Child: "c1"}))
		}
	}
	return append(scopes, storage.GlobalScope, "__global__")
}

// hostileIDs are thread, resource and layer IDs an attacker (or a careless
// caller) might choose to reach someone else's keys.
var hostileIDs = []string{
	"victim/../attacker", "../victim", "..", ".", "...", "victim/", "/victim",
	"victim%2Fx", "%", "%25", "", "\x00", "victim\x00", "a\nb", "a\r\nb",
	"日本語", "emoji-🙂", "*", "victim*", "[a-z]*", "?", `\`, "victim/state",
	"layers/wm/victim", " victim", "victim ", "\xff\xfe",
}

func testHostileIDs(t *testing.T, s storage.Store) {
	victim := storage.LayerKey("wm", "victim", "state")
	mustPut(t, s, victim, []byte("secret"), storage.NoVersion)
	seen := map[string]string{victim: "victim"}
	for _, id := range hostileIDs {
		putHostile(t, s, id, seen)
	}
	wantValue(t, s, victim, []byte("secret"), 0)
	for _, id := range hostileIDs {
		// Each hostile scope lists exactly its own key.
		wantKeys(t, s, storage.LayerPrefix("wm", id), []string{storage.LayerKey("wm", id, "state")})
		wantKeys(t, s, storage.ThreadPrefix(id), []string{storage.ThreadKey(id, "checkpoint")})
		wantValue(t, s, storage.LayerKey("wm", id, "state"), []byte("from "+id), 0)
	}
	wantVictimScope(t, s, victim)
}

// putHostile creates the keys built from the hostile ID id, each of which
// must be valid and not among the keys seen so far.
func putHostile(t *testing.T, s storage.Store, id string, seen map[string]string) {
	t.Helper()
	keys := []string{
		storage.LayerKey("wm", id, "state"),
		storage.LayerKey(id, "victim", "state"),
		storage.LayerKey("wm", "victim", id),
		storage.ThreadKey(id, "checkpoint"),
	}
	for _, k := range keys {
		if err := storage.ValidateKey(k); err != nil {
			t.Fatalf("key %q built from ID %q is invalid: %v", k, id, err)
		}
		if prev, dup := seen[k]; dup {
			t.Fatalf("ID %q and %q map to the same key %q", id, prev, k)
		}
		seen[k] = id
		// A create succeeds only if no one else owns the key.
		mustPut(t, s, k, []byte("from "+id), storage.NoVersion)
	}
}

// wantVictimScope checks that the victim's scope lists the victim's key
// and the keys whose name part, not scope part, was hostile.
func wantVictimScope(t *testing.T, s storage.Store, victim string) {
	t.Helper()
	got := mustList(t, s, storage.LayerPrefix("wm", "victim"))
	for _, k := range got {
		if k == victim {
			continue
		}
		name := strings.TrimPrefix(k, storage.LayerPrefix("wm", "victim"))
		if strings.Contains(name, "/") {
			t.Errorf("List of the victim's scope returned %q, whose name part holds '/'", k)
		}
	}
	if len(got) != len(hostileIDs)+1 {
		t.Errorf("List of the victim's scope has %d keys, want %d", len(got), len(hostileIDs)+1)
	}
}

func testRawUnusualKeys(t *testing.T, s storage.Store) {
	// Keys that pass ValidateKey, stored as given.
	keys := []string{
		"with space", "tab\there", "new\nline", "ключ/значение", "日本/語", "🙂/🙃",
		"quote'\"", "semi;colon", "-- comment", "' OR 1=1 --", "{braces}", "a:b:c",
		strings.Repeat("x", 300),
	}
	for _, k := range keys {
		mustPut(t, s, k, []byte("v:"+k), storage.NoVersion)
	}
	for _, k := range keys {
		wantValue(t, s, k, []byte("v:"+k), 0)
	}
	wantKeys(t, s, "ключ/", []string{"ключ/значение"})
	wantKeys(t, s, "🙂", []string{"🙂/🙃"})
	got := mustList(t, s, "")
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("List(\"\") = %q, want %q", got, want)
	}
}

func testInvalidKeys(t *testing.T, s storage.Store) {
	mustPut(t, s, "keep", []byte("kept"), storage.NoVersion)
	bad := []struct{ name, key string }{
		{"empty", ""},
		{"NUL", "a\x00b"},
		{"trailing NUL", "keep\x00"},
		{"invalid UTF-8", "a\xffb"},
		{"too long", strings.Repeat("k", storage.MaxKeyLen+1)},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if err := storage.ValidateKey(tc.key); !errors.Is(err, storage.ErrInvalidKey) {
				t.Errorf("ValidateKey: error = %v, want storage.ErrInvalidKey", err)
			}
			_, err := s.Put(t.Context(), tc.key, []byte("x"), storage.AnyVersion)
			if !errors.Is(err, storage.ErrInvalidKey) {
				t.Errorf("Put: error = %v, want storage.ErrInvalidKey", err)
			}
			if _, err := s.Get(t.Context(), tc.key); err == nil {
				t.Errorf("Get of an invalid key succeeded")
			}
		})
	}
	// Nothing was stored and the existing key is untouched.
	wantKeys(t, s, "", []string{"keep"})
	wantValue(t, s, "keep", []byte("kept"), 0)
}

func testMaxLenKey(t *testing.T, s storage.Store) {
	key := "long/" + strings.Repeat("k", storage.MaxKeyLen-5)
	if len(key) != storage.MaxKeyLen {
		t.Fatalf("test bug: key length %d", len(key))
	}
	v := mustPut(t, s, key, []byte("x"), storage.NoVersion)
	wantValue(t, s, key, []byte("x"), v)
	wantKeys(t, s, "long/", []string{key})
}

// ---- Values ----

func testEmptyValue(t *testing.T, s storage.Store) {
	mustPut(t, s, "nil", nil, storage.NoVersion)
	mustPut(t, s, "empty", []byte{}, storage.NoVersion)
	for _, k := range []string{"nil", "empty"} {
		it := mustGet(t, s, k)
		if len(it.Value) != 0 {
			t.Errorf("Get(%q).Value = %q, want empty", k, it.Value)
		}
	}
}

func testAllBytes(t *testing.T, s storage.Store) {
	v := make([]byte, 0, 512)
	for i := range 256 {
		v = append(v, byte(i))
	}
	for i := 255; i >= 0; i-- {
		v = append(v, byte(i))
	}
	mustPut(t, s, "bin", v, storage.NoVersion)
	wantValue(t, s, "bin", v, 0)
}

func testLargeValue(t *testing.T, s storage.Store) {
	const size = 3 << 19 // 1.5 MiB
	v := make([]byte, size)
	x := uint32(2463534242)
	for i := range v {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		v[i] = byte(x)
	}
	ver := mustPut(t, s, "large", v, storage.NoVersion)
	wantValue(t, s, "large", v, ver)
	// And overwrite it with a larger one, under CAS.
	v2 := append(slices.Clone(v), v[:size/2]...)
	ver2 := mustPut(t, s, "large", v2, ver)
	wantValue(t, s, "large", v2, ver2)
}

func testPutCopies(t *testing.T, s storage.Store) {
	v := []byte("original")
	mustPut(t, s, "k", v, storage.NoVersion)
	copy(v, "MUTATED!")
	wantValue(t, s, "k", []byte("original"), 0)
}

func testGetCopies(t *testing.T, s storage.Store) {
	mustPut(t, s, "k", []byte("original"), storage.NoVersion)
	it := mustGet(t, s, "k")
	copy(it.Value, "MUTATED!")
	it.Value = append(it.Value, "more"...)
	wantValue(t, s, "k", []byte("original"), 0)
	// Two reads do not share memory either.
	a, b := mustGet(t, s, "k"), mustGet(t, s, "k")
	if len(a.Value) > 0 && &a.Value[0] == &b.Value[0] {
		t.Error("two Gets returned the same backing array")
	}
}

// ---- Context ----

func checkCtxOps(t *testing.T, s storage.Store, ctx context.Context, want error) {
	t.Helper()
	mustPut(t, s, "k", []byte("before"), storage.NoVersion)
	_, getErr := s.Get(ctx, "k")
	_, putErr := s.Put(ctx, "k", []byte("after"), storage.AnyVersion)
	_, newErr := s.Put(ctx, "new", []byte("x"), storage.NoVersion)
	deleteErr := s.Delete(ctx, "k", storage.AnyVersion)
	_, listErr := s.List(ctx, "")
	for _, op := range []struct {
		name string
		err  error
	}{{"Get", getErr}, {"Put", putErr}, {"Put(new)", newErr}, {"Delete", deleteErr}, {"List", listErr}} {
		if !errors.Is(op.err, want) {
			t.Errorf("%s: error = %v, want %v", op.name, op.err, want)
		}
	}
	// Nothing changed.
	wantValue(t, s, "k", []byte("before"), 0)
	wantMissing(t, s, "new")
}

func testContextCanceled(t *testing.T, s storage.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	checkCtxOps(t, s, ctx, context.Canceled)
}

func testContextDeadline(t *testing.T, s storage.Store) {
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	checkCtxOps(t, s, ctx, context.DeadlineExceeded)
}

// ---- Concurrency ----

// The lost-update test: goroutines each add incrementsPerGoroutine to one
// counter through Get, Put(ifVersion) and retry on conflict.
const (
	goroutines             = 50
	incrementsPerGoroutine = 4
)

func testConcurrentIncrements(t *testing.T, s storage.Store) {
	const key = "counter"
	mustPut(t, s, key, []byte("0"), storage.NoVersion)
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	for range goroutines {
		wg.Go(func() {
			for range incrementsPerGoroutine {
				if err := increment(t.Context(), s, key); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	want := strconv.Itoa(goroutines * incrementsPerGoroutine)
	wantValue(t, s, key, []byte(want), 0)
}

// increment adds one to the decimal counter at key, retrying on conflict.
func increment(ctx context.Context, s storage.Store, key string) error {
	for attempt := 0; ; attempt++ {
		if attempt > 10000 {
			return fmt.Errorf("increment %q: gave up after %d conflicts", key, attempt)
		}
		it, err := s.Get(ctx, key)
		if err != nil {
			return fmt.Errorf("increment: get: %w", err)
		}
		n, err := strconv.Atoi(string(it.Value))
		if err != nil {
			return fmt.Errorf("increment: stored value %q: %w", it.Value, err)
		}
		// Yield between read and write, as real work would, so that
		// goroutines interleave and a store without CAS would lose updates.
		runtime.Gosched()
		_, err = s.Put(ctx, key, []byte(strconv.Itoa(n+1)), it.Version)
		if err == nil {
			return nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("increment: put: %w", err)
		}
	}
}

// ---- Versions (issue 9, item 1: no ABA) ----

// writeN creates key with value "gen-0" and rewrites it n-1 times under
// compare-and-swap, returning every version the writes were given.
func writeN(t *testing.T, s storage.Store, key, gen string, n int) []int64 {
	t.Helper()
	vs := []int64{mustPut(t, s, key, []byte(gen+"-0"), storage.NoVersion)}
	for i := 1; i < n; i++ {
		vs = append(vs, mustPut(t, s, key, []byte(gen+"-"+strconv.Itoa(i)), vs[i-1]))
	}
	return vs
}

// wantStaleRefused checks that a Put and a Delete naming each of the stale
// versions conflict and leave key holding want.
func wantStaleRefused(t *testing.T, s storage.Store, key string, stale []int64, want []byte) {
	t.Helper()
	for _, v := range stale {
		if _, err := s.Put(t.Context(), key, []byte("stale write"), v); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("Put with version %d from before the key was recreated: error = %v, want storage.ErrConflict", v, err)
		}
		if err := s.Delete(t.Context(), key, v); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("Delete with version %d from before the key was recreated: error = %v, want storage.ErrConflict", v, err)
		}
	}
	wantValue(t, s, key, want, 0)
}

// testNoABAAfterDelete: a writer read the key at some version, the key was
// deleted and created again by others and rewritten as many times; the
// writer's compare-and-swap must still fail.
func testNoABAAfterDelete(t *testing.T, s storage.Store) {
	const n = 3
	old := writeN(t, s, "k", "old", n)
	if err := s.Delete(t.Context(), "k", old[n-1]); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	cur := writeN(t, s, "k", "new", n)
	for _, v := range old {
		if slices.Contains(cur, v) {
			t.Errorf("version %d was given to the key before the delete and again after: %v then %v", v, old, cur)
		}
	}
	wantStaleRefused(t, s, "k", old, []byte("new-"+strconv.Itoa(n-1)))
}

// testNoABAAfterDeleteAny is testNoABAAfterDelete with unconditional
// deletes and writes, the way a Clear or a quarantine removes a key.
func testNoABAAfterDeleteAny(t *testing.T, s storage.Store) {
	v1 := mustPut(t, s, "k", []byte("one"), storage.AnyVersion)
	if err := s.Delete(t.Context(), "k", storage.AnyVersion); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	v2 := mustPut(t, s, "k", []byte("two"), storage.AnyVersion)
	if v1 == v2 {
		t.Errorf("AnyVersion writes before and after a delete both got version %d", v1)
	}
	wantStaleRefused(t, s, "k", []int64{v1}, []byte("two"))
}

// testVersionsUnique deletes and recreates keys many times: no version may
// be given twice to one key, and none may be NoVersion or AnyVersion.
func testVersionsUnique(t *testing.T, s storage.Store) {
	seen := map[int64]int{}
	for round := range 40 {
		for i, v := range writeN(t, s, "k", "r"+strconv.Itoa(round), 3) {
			if prev, dup := seen[v]; dup {
				t.Fatalf("version %d given twice to one key (rounds %d and %d, write %d)", v, prev, round, i)
			}
			seen[v] = round
		}
		if err := s.Delete(t.Context(), "k", storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
}

// testNoABAAfterWipe: a writer read the key, the backend was emptied
// behind its back (Redis restarted without persistence, the SQLite file
// recreated) and the key written again; the writer's compare-and-swap
// must fail.
func testNoABAAfterWipe(t *testing.T, s storage.Store, wipe func(*testing.T, storage.Store) storage.Store) {
	if wipe == nil {
		t.Skip("the backend supplies no Options.Wipe hook: the restarted-empty checks are skipped")
	}
	const n = 3
	old := writeN(t, s, "k", "old", n)
	mustPut(t, s, "other", []byte("x"), storage.NoVersion)
	s = wipe(t, s)
	if s == nil {
		t.Fatal("Wipe returned nil")
	}
	wantMissing(t, s, "k")
	wantMissing(t, s, "other")
	cur := writeN(t, s, "k", "new", n)
	for _, v := range old {
		if slices.Contains(cur, v) {
			t.Errorf("version %d was given to the key before the wipe and again after: %v then %v", v, old, cur)
		}
	}
	wantStaleRefused(t, s, "k", old, []byte("new-"+strconv.Itoa(n-1)))
}

// ---- Errors (issue 9, item 22) ----

// testLongKeyShortened: an error about a long key quotes it shortened
// (through [storage.Quote]), not whole.
func testLongKeyShortened(t *testing.T, s storage.Store) {
	key := "long/" + strings.Repeat("k", storage.MaxKeyLen-5)
	missing := "long/" + strings.Repeat("m", storage.MaxKeyLen-5)
	v := mustPut(t, s, key, []byte("x"), storage.NoVersion)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	errs := map[string]error{}
	_, errs["Put(NoVersion) of an existing key"] = s.Put(t.Context(), key, []byte("y"), storage.NoVersion)
	_, errs["Put with a stale version"] = s.Put(t.Context(), key, []byte("y"), v+1)
	errs["Delete with a stale version"] = s.Delete(t.Context(), key, v+1)
	errs["Delete(version) of a missing key"] = s.Delete(t.Context(), missing, v)
	_, errs["Get of a missing key"] = s.Get(t.Context(), missing)
	_, errs["Get with a cancelled context"] = s.Get(ctx, key)
	_, errs["Put with a cancelled context"] = s.Put(ctx, key, nil, storage.AnyVersion)
	for what, err := range errs {
		wantKeyShortened(t, what, err, key, missing)
	}
}

// wantKeyShortened checks that err, the error of what, names key or
// missing as [storage.Quote] does, and not whole.
func wantKeyShortened(t *testing.T, what string, err error, key, missing string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	msg := err.Error()
	if len(msg) > 512 {
		t.Errorf("%s: error message of %d bytes quotes the whole %d-byte key: %.120s...", what, len(msg), len(key), msg)
	}
	if !strings.Contains(msg, storage.Quote(key)) && !strings.Contains(msg, storage.Quote(missing)) {
		t.Errorf("%s: error %.200q does not name the key as storage.Quote does", what, msg)
	}
}
