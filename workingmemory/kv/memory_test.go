package kv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type point struct {
	X, Y int
	Name string
}

type withRefs struct {
	Tags []string
}

// fakeClock is a settable clock for expiry tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestKVTyped(t *testing.T) {
	kv := New(Config{})
	if err := Set(kv, "p", point{1, 2, "a"}); err != nil {
		t.Fatal(err)
	}
	got, ok, err := Get[point](kv, "p")
	if err != nil || !ok || got != (point{1, 2, "a"}) {
		t.Errorf("Get = %+v, %v, %v", got, ok, err)
	}
	// Another type reads the JSON.
	m, ok, err := Get[map[string]any](kv, "p")
	if err != nil || !ok || m["Name"] != "a" {
		t.Errorf("Get as map = %v, %v, %v", m, ok, err)
	}
	// A type the JSON does not fit is an error.
	if _, ok, err := Get[int](kv, "p"); ok || !errors.Is(err, ErrInvalidValue) {
		t.Errorf("Get[int] = %v, %v; want ErrInvalidValue", ok, err)
	}
	if _, ok, err := Get[point](kv, "missing"); ok || err != nil {
		t.Errorf("missing key: %v, %v", ok, err)
	}

	// Values with references are copied through JSON: no aliasing.
	in := withRefs{Tags: []string{"a"}}
	if err := Set(kv, "r", in); err != nil {
		t.Fatal(err)
	}
	in.Tags[0] = "mutated"
	out, _, _ := Get[withRefs](kv, "r")
	if out.Tags[0] != "a" {
		t.Errorf("stored value aliases the caller's slice: %v", out.Tags)
	}
	out.Tags[0] = "changed"
	again, _, _ := Get[withRefs](kv, "r")
	if again.Tags[0] != "a" {
		t.Errorf("returned value aliases the stored one: %v", again.Tags)
	}

	if err := kv.SetJSON("raw", json.RawMessage(`{"a":[1,2]}`), Meta{}); err != nil {
		t.Fatal(err)
	}
	if err := kv.SetJSON("raw", json.RawMessage(`{"a":`), Meta{}); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("SetJSON invalid: %v", err)
	}
}

func TestKVOperations(t *testing.T) {
	kv := New(Config{})
	for i, k := range []string{"b", "a", "c"} {
		if err := Set(kv, k, i); err != nil {
			t.Fatal(err)
		}
	}
	if !kv.Contains("a") || kv.Contains("z") {
		t.Error("Contains wrong")
	}
	keys, _ := kv.Keys()
	if !slices.Equal(keys, []string{"a", "b", "c"}) {
		t.Errorf("Keys = %v", keys)
	}
	if n, _ := kv.Count(); n != 3 {
		t.Errorf("Count = %d", n)
	}
	es, _ := kv.Entries()
	if len(es) != 3 || es[0].Key != "a" || string(es[0].Value) != "1" || es[0].Scope != "root" {
		t.Errorf("Entries = %+v", es)
	}
	if ok, err := kv.Remove("a"); !ok || err != nil {
		t.Errorf("Remove = %v, %v", ok, err)
	}
	if ok, _ := kv.Remove("a"); ok {
		t.Error("second Remove reported an entry")
	}
	if _, err := kv.Clear(); err != nil {
		t.Fatal(err)
	}
	if n, _ := kv.Count(); n != 0 {
		t.Errorf("Count after Clear = %d", n)
	}
	// Set replaces value and metadata.
	_ = SetWith(kv, "k", 1, Meta{Importance: 0.9, Tags: []string{"x"}})
	_ = Set(kv, "k", 2)
	e, _, _ := kv.Lookup("k")
	if string(e.Value) != "2" || e.Importance != DefaultImportance || e.Tags != nil {
		t.Errorf("replaced entry = %+v", e)
	}
}

func TestKVMetadata(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	kv := New(Config{Now: clock.Now})
	tags := []string{"user", "pref"}
	if err := SetWith(kv, "tone", "concise", Meta{Importance: 0.8, Tags: tags, Type: "preference", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	tags[0] = "mutated"
	clock.Add(time.Minute)
	for range 3 {
		if _, ok, _ := Get[string](kv, "tone"); !ok {
			t.Fatal("entry missing")
		}
	}
	e, ok, err := kv.Lookup("tone")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := Entry{
		Key: "tone", Value: json.RawMessage(`"concise"`), Scope: "root", Importance: 0.8,
		Tags: []string{"user", "pref"}, Type: "preference",
		ExpiresAt: clock.now.Add(-time.Minute).Add(time.Hour),
		CreatedAt: clock.now.Add(-time.Minute), UpdatedAt: clock.now.Add(-time.Minute),
		LastAccess: clock.now, AccessCount: 4, // 3 Gets + this Lookup
	}
	if fmt.Sprint(e) != fmt.Sprint(want) {
		t.Errorf("entry\n got %+v\nwant %+v", e, want)
	}
	// Expiry hides the entry; Purge frees it.
	clock.Add(time.Hour)
	if _, ok, _ := Get[string](kv, "tone"); ok || kv.Contains("tone") {
		t.Error("expired entry still visible")
	}
	if n := kv.Purge(); n != 1 {
		t.Errorf("Purge = %d, want 1", n)
	}
	// ExpiresAt works too.
	_ = SetWith(kv, "at", 1, Meta{ExpiresAt: clock.now.Add(time.Second)})
	if !kv.Contains("at") {
		t.Error("entry with future ExpiresAt missing")
	}
	clock.Add(time.Second)
	if kv.Contains("at") {
		t.Error("entry visible at its ExpiresAt")
	}
	for _, imp := range []float64{-0.1, 1.1, math.NaN()} {
		if err := SetWith(kv, "x", 1, Meta{Importance: imp}); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("importance %v: err = %v", imp, err)
		}
	}
}

func TestKVScopes(t *testing.T) {
	root := New(Config{})
	_ = Set(root, "shared", "root")
	_ = Set(root, "over", "root")
	child, err := root.Child("agent")
	if err != nil {
		t.Fatal(err)
	}
	grand, err := child.Child("sub")
	if err != nil {
		t.Fatal(err)
	}
	_ = Set(child, "over", "child")
	_ = Set(grand, "own", "grand")

	get := func(kv *Scope, key string) string {
		v, _, err := Get[string](kv, key)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if get(grand, "shared") != "root" || get(grand, "over") != "child" || get(grand, "own") != "grand" {
		t.Error("fallback chain wrong")
	}
	if get(root, "own") != "" || get(root, "over") != "root" {
		t.Error("child writes reached the root")
	}
	if _, ok, _ := GetLocal[string](child, "shared"); ok || child.ContainsLocal("shared") || !child.Contains("shared") {
		t.Error("local reads fell back")
	}
	le, _ := child.LocalEntries()
	if len(le) != 1 || le[0].Key != "over" {
		t.Errorf("LocalEntries = %+v", le)
	}
	all, _ := grand.Entries()
	if len(all) != 3 || all[1].Key != "own" || all[1].Scope != "root/agent/sub" || all[2].Key != "shared" || all[2].Scope != "root" {
		t.Errorf("Entries from grand = %+v", all)
	}
	// Remove affects only the local scope: the parent's shows through.
	if ok, _ := child.Remove("over"); !ok {
		t.Error("Remove on child")
	}
	if get(child, "over") != "root" {
		t.Error("parent entry not visible after local remove")
	}
	if ok, _ := child.Remove("shared"); ok {
		t.Error("Remove on child removed a parent entry")
	}
	if !root.ContainsLocal("shared") {
		t.Error("parent entry gone")
	}
	if got := root.Scopes(); !slices.Equal(got, []string{"root", "root/agent", "root/agent/sub"}) {
		t.Errorf("Scopes = %v", got)
	}
	if child.Parent() != root || child.Path() != "root/agent" || child.Name() != "agent" || root.Parent() != nil {
		t.Error("scope identity wrong")
	}
	for _, bad := range []string{"", "a/b", "tab\there"} {
		if _, err := root.Child(bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Child(%q): %v", bad, err)
		}
	}
}

func TestKVMergeToParent(t *testing.T) {
	for _, overwrite := range []bool{false, true} {
		t.Run(fmt.Sprint("overwrite=", overwrite), func(t *testing.T) {
			root := New(Config{})
			_ = Set(root, "both", "root")
			child, _ := root.Child("c")
			_ = Set(child, "both", "child")
			_ = SetWith(child, "new", "child", Meta{Tags: []string{"t"}})
			n, err := child.MergeToParent(overwrite)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 1, true: 2}[overwrite]; n != want {
				t.Errorf("MergeToParent copied %d entries, want %d", n, want)
			}
			want := "root"
			if overwrite {
				want = "child"
			}
			if v, _, _ := GetLocal[string](root, "both"); v != want {
				t.Errorf("both = %q, want %q", v, want)
			}
			e, ok, _ := root.Lookup("new")
			if !ok || e.Scope != "root" || !slices.Equal(e.Tags, []string{"t"}) {
				t.Errorf("merged entry = %+v", e)
			}
		})
	}
	if _, err := New(Config{}).MergeToParent(true); err == nil {
		t.Error("MergeToParent on the root succeeded")
	}
}

func TestKVDispose(t *testing.T) {
	var events []Change
	var mu sync.Mutex
	root := New(Config{OnChange: func(e Change) { mu.Lock(); events = append(events, e); mu.Unlock() }})
	child, _ := root.Child("c")
	grand, _ := child.Child("g")
	_ = Set(child, "k", 1)
	_ = Set(grand, "k", 2)
	if err := child.Dispose(); err != nil {
		t.Fatal(err)
	}
	if err := child.Dispose(); err != nil {
		t.Errorf("second Dispose: %v", err)
	}
	for name, err := range map[string]error{
		"set":    Set(child, "k", 1),
		"grand":  Set(grand, "k", 1),
		"remove": func() error { _, err := child.Remove("k"); return err }(),
		"clear":  func() error { _, err := child.Clear(); return err }(),
		"child":  func() error { _, err := child.Child("x"); return err }(),
		"get":    func() error { _, _, err := Get[int](child, "k"); return err }(),
		"merge":  func() error { _, err := child.MergeToParent(true); return err }(),
	} {
		if !errors.Is(err, ErrDisposed) || !strings.Contains(err.Error(), "root/c") {
			t.Errorf("%s after Dispose: %v", name, err)
		}
	}
	if got := root.Scopes(); !slices.Equal(got, []string{"root"}) {
		t.Errorf("Scopes after dispose = %v", got)
	}
	st, _ := root.Stats()
	if st.Entries != 0 || st.Scopes != 1 {
		t.Errorf("stats after dispose = %+v", st)
	}
	// The freed name can be used again, and the scope budget was returned.
	if _, err := root.Child("c"); err != nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var disposed []string
	for _, e := range events {
		if e.Kind == ChangeScopeDisposed {
			disposed = append(disposed, e.Scope)
		}
	}
	slices.Sort(disposed)
	if !slices.Equal(disposed, []string{"root/c", "root/c/g"}) {
		t.Errorf("disposed events = %v", disposed)
	}
}

func TestKVEventsAndLogs(t *testing.T) {
	var events []Change
	var logs bytes.Buffer
	clock := &fakeClock{now: time.Unix(100, 0)}
	kv := New(Config{
		OnChange: func(e Change) { events = append(events, e) },
		Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Now:      clock.Now,
	})
	_ = Set(kv, "a", 1)
	_, _ = kv.Remove("a")
	_, _ = kv.Remove("a") // nothing removed: no event
	c, _ := kv.Child("c")
	_, _ = c.Clear()
	_ = c.Dispose()
	root, cid := kv.ID(), c.ID()
	want := []Change{
		{Kind: ChangeSet, Scope: "root", ScopeID: root, Key: "a", Type: "int", Time: clock.now},
		{Kind: ChangeRemoved, Scope: "root", ScopeID: root, Key: "a", Time: clock.now},
		{Kind: ChangeScopeCreated, Scope: "root/c", ScopeID: cid, ParentID: root, Time: clock.now},
		{Kind: ChangeCleared, Scope: "root/c", ScopeID: cid, ParentID: root, Time: clock.now},
		{Kind: ChangeScopeDisposed, Scope: "root/c", ScopeID: cid, ParentID: root, Time: clock.now},
	}
	if !slices.Equal(events, want) {
		t.Errorf("events\n got %v\nwant %v", events, want)
	}
	for _, w := range []string{"level=DEBUG", "kv: set", "key=a", "kv: scope-created", "scope=root/c"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("logs lack %q:\n%s", w, logs.String())
		}
	}
}

func TestKVValidationAndLimits(t *testing.T) {
	kv := New(Config{MaxEntries: 3, MaxEntryBytes: 20, MaxScopes: 2, MaxKeyBytes: 8})
	tests := []struct {
		name    string
		err     error
		want    error
		message string
	}{
		{"empty key", Set(kv, "", 1), ErrInvalidKey, "empty key"},
		{"control char", Set(kv, "a\nb", 1), ErrInvalidKey, "control character"},
		{"bad UTF-8", Set(kv, "a\xffb", 1), ErrInvalidKey, "UTF-8"},
		{"long key", Set(kv, "123456789", 1), ErrInvalidKey, "limit is 8"},
		{"channel", Set(kv, "ch", make(chan int)), ErrInvalidValue, "ch"},
		{"NaN", Set(kv, "nan", math.NaN()), ErrInvalidValue, "nan"},
		{"func", Set(kv, "fn", func() {}), ErrInvalidValue, "fn"},
		{"entry size", Set(kv, "big", strings.Repeat("x", 30)), ErrLimit, "entry size"},
	}
	for _, tt := range tests {
		if !errors.Is(tt.err, tt.want) || !strings.Contains(tt.err.Error(), tt.message) {
			t.Errorf("%s: err = %v, want %v mentioning %q", tt.name, tt.err, tt.want, tt.message)
		}
	}
	for i := range 3 {
		if err := Set(kv, fmt.Sprint(i), i); err != nil {
			t.Fatal(err)
		}
	}
	if err := Set(kv, "one-more", 1); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "entries") {
		t.Errorf("entry limit: %v", err)
	}
	if err := Set(kv, "0", 42); err != nil {
		t.Errorf("replacing at the limit: %v", err)
	}
	if _, err := kv.Child("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Child("b"); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "scopes") {
		t.Errorf("scope limit: %v", err)
	}
	if n, _ := kv.Count(); n != 3 {
		t.Errorf("rejected sets changed the count: %d", n)
	}
	// Expired entries are purged to make room.
	clock := &fakeClock{now: time.Unix(0, 0)}
	small := New(Config{MaxEntries: 1, Now: clock.Now})
	_ = SetWith(small, "old", 1, Meta{TTL: time.Second})
	clock.Add(time.Second)
	if err := Set(small, "new", 2); err != nil {
		t.Errorf("set after expiry at the limit: %v", err)
	}
	// Negative limits mean none.
	none := New(Config{MaxEntries: -1, MaxScopes: -1, MaxEntryBytes: -1})
	for i := range 150 {
		if _, err := none.Child(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestKVDefaultLimits(t *testing.T) {
	kv := New(Config{})
	if err := Set(kv, "big", strings.Repeat("x", 1<<20)); !errors.Is(err, ErrLimit) {
		t.Errorf("1 MiB entry: %v", err)
	}
	for i := range 99 {
		if _, err := kv.Child(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kv.Child("100th"); !errors.Is(err, ErrLimit) {
		t.Errorf("101st scope: %v", err)
	}
}

func TestKVGetOrSetOnce(t *testing.T) {
	kv := New(Config{})
	var calls atomic.Int32
	var wg sync.WaitGroup
	results := make([]int, 50)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := GetOrSet(kv, "k", func() (int, error) {
				calls.Add(1)
				time.Sleep(10 * time.Millisecond)
				return 7, nil
			})
			if err != nil {
				t.Error(err)
			}
			results[i] = v
		}()
	}
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("factory ran %d times", calls.Load())
	}
	for _, r := range results {
		if r != 7 {
			t.Fatalf("results = %v", results)
		}
	}
	// An error stores nothing; the next call tries again.
	boom := errors.New("boom")
	if _, err := GetOrSet(kv, "e", func() (int, error) { return 0, boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v", err)
	}
	if kv.Contains("e") {
		t.Error("failed factory stored a value")
	}
	// A panicking factory releases the waiters with an error.
	started := make(chan struct{})
	waiterErr := make(chan error, 1)
	go func() {
		<-started
		_, err := GetOrSet(kv, "p", func() (int, error) { return 1, nil })
		waiterErr <- err
	}()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the factory's panic was swallowed")
			}
		}()
		_, _ = GetOrSet(kv, "p", func() (int, error) {
			close(started)
			time.Sleep(20 * time.Millisecond)
			panic("boom")
		})
	}()
	select {
	case err := <-waiterErr:
		// The waiter either saw the panic's error or ran its own factory.
		if err != nil && !strings.Contains(err.Error(), "panicked") {
			t.Errorf("waiter err = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter is stuck after the factory panicked")
	}
	// A parent's value is found without calling the factory.
	child, _ := kv.Child("c")
	v, err := GetOrSet(child, "k", func() (int, error) { t.Error("factory called"); return 0, nil })
	if err != nil || v != 7 {
		t.Errorf("GetOrSet through the parent = %v, %v", v, err)
	}
}

func TestKVStats(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	kv := New(Config{Now: clock.Now})
	_ = Set(kv, "a", "xy") // 1 + 4 bytes
	clock.Add(time.Second)
	c, _ := kv.Child("c")
	_ = Set(c, "bb", 12) // 2 + 2 bytes
	st, err := kv.Stats()
	want := Stats{Entries: 2, Scopes: 2, Bytes: 9, Oldest: time.Unix(1000, 0), Newest: time.Unix(1001, 0)}
	if err != nil || st != want {
		t.Errorf("Stats = %+v, %v; want %+v", st, err, want)
	}
}

func TestKVSnapshotRestore(t *testing.T) {
	kv := New(Config{})
	_ = SetWith(kv, "a", point{1, 2, "p"}, Meta{Importance: 0.5, Tags: []string{"t"}, Type: "fact"})
	c, _ := kv.Child("c")
	_ = Set(c, "b", []int{1, 2})
	g, _ := c.Child("g")
	_ = Set(g, "z", true)
	snap, err := kv.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	other := New(Config{})
	_ = Set(other, "gone", 1)
	stale, _ := other.Child("stale")
	if err := other.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if other.Contains("gone") || !errors.Is(Set(stale, "x", 1), ErrDisposed) {
		t.Error("restore kept old contents")
	}
	if got := other.Scopes(); !slices.Equal(got, []string{"root", "root/c", "root/c/g"}) {
		t.Errorf("scopes after restore = %v", got)
	}
	rc, _ := other.Child("c")
	rg, _ := rc.Child("g")
	if v, ok, _ := Get[point](rg, "a"); !ok || v != (point{1, 2, "p"}) {
		t.Errorf("restored fallback = %v %v", v, ok)
	}
	e, _, _ := other.Lookup("a")
	if e.Importance != 0.5 || e.Type != "fact" || !slices.Equal(e.Tags, []string{"t"}) {
		t.Errorf("restored metadata = %+v", e)
	}
	again, _ := other.Snapshot()
	var a, b any
	_ = json.Unmarshal(snap, &a)
	_ = json.Unmarshal(again, &b)
	// Access counts differ (the reads above); compare without them.
	if !strings.Contains(string(again), `"name":"g"`) || len(again) < len(snap)-40 {
		t.Errorf("snapshot of the restored tree differs:\n%s\n%s", snap, again)
	}
	// Bad snapshots change nothing.
	before, _ := other.Snapshot()
	for _, bad := range []string{
		`nope`,
		`{"version":2,"name":"root"}`,
		`{"version":1,"name":"root","entries":{"":{"value":1}}}`,
		`{"version":1,"name":"root","children":[{"name":"a/b"}]}`,
	} {
		if err := other.Restore(json.RawMessage(bad)); err == nil {
			t.Errorf("Restore(%s) accepted", bad)
		}
	}
	after, _ := other.Snapshot()
	if !bytes.Equal(before, after) {
		t.Errorf("failed restores changed the memory")
	}
	limited := New(Config{MaxEntries: 1})
	if err := limited.Restore(snap); !errors.Is(err, ErrLimit) {
		t.Errorf("restore over the entry limit: %v", err)
	}
}

// Ten goroutines mixing sets, gets, removals and child scopes.
func TestKVRace(t *testing.T) {
	root := New(Config{MaxScopes: -1})
	var wg sync.WaitGroup
	for g := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scope, err := root.Child(fmt.Sprint("g", g%3))
			if err != nil {
				t.Error(err)
				return
			}
			for i := range 150 {
				key := fmt.Sprint("k", i%17)
				switch i % 7 {
				case 0:
					_ = Set(root, key, point{i, g, "root"})
				case 1:
					_ = SetWith(scope, key, point{i, g, "scope"}, Meta{Tags: []string{"t"}, TTL: time.Minute})
				case 2:
					if _, _, err := Get[point](scope, key); err != nil {
						t.Error(err)
					}
				case 3:
					_, _ = scope.Remove(key)
				case 4:
					c, err := scope.Child(fmt.Sprint("c", i%5))
					if err == nil {
						_ = Set(c, key, i)
						_, _, _ = Get[int](c, key)
						if i%3 == 0 {
							_ = c.Dispose()
						}
					}
				case 5:
					_, _ = scope.Entries()
					_, _ = root.Stats()
					_ = root.Scopes()
				case 6:
					_, _ = GetOrSet(scope, key+"-gos", func() (int, error) { return i, nil })
					_, _ = root.Snapshot()
				}
			}
		}()
	}
	wg.Wait()
	st, err := root.Stats()
	if err != nil || st.Scopes < 4 {
		t.Errorf("stats = %+v, %v", st, err)
	}
}

// TestTrust22_KVErrorsQuoteKeysShort: an error about a 100 KB key (or
// snapshot key) quoted all of it; keys are quoted through storage.Quote.
func TestTrust22_KVErrorsQuoteKeysShort(t *testing.T) {
	kv := New(Config{MaxKeyBytes: 1 << 20})
	long := strings.Repeat("k", 100<<10)
	for name, err := range map[string]error{
		"control character": Set(kv, long+"\n", 1),
		"invalid UTF-8":     Set(kv, long+"\xff", 1),
		"importance":        SetWith(kv, long, 1, Meta{Importance: 2}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if len(err.Error()) > 512 {
			t.Errorf("%s: error of %d bytes quotes the whole key", name, len(err.Error()))
		}
	}
}

// TestFit03_ChildIsolated: Child always makes a new scope with its own
// ID, so two parallel tasks given the same name never share entries.
func TestFit03_ChildIsolated(t *testing.T) {
	root := New(Config{})
	a, err := root.Child("task-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := root.Child("task-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := Set(a, "result", "from a"); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := Get[string](b, "result"); ok {
		t.Errorf("scope b reads a's entry %q: two scopes named task-1 share entries", v)
	}
	if a == b || a.ID() == b.ID() {
		t.Fatalf("two Child(\"task-1\") calls gave one scope (IDs %q, %q)", a.ID(), b.ID())
	}
	if got, ok := root.Scope(b.ID()); !ok || got != b {
		t.Errorf("Scope(%q) = %v, %v; want b", b.ID(), got, ok)
	}
	if _, ok := root.Scope("no-such-scope"); ok {
		t.Error("Scope found an unknown ID")
	}
}

// TestFit04_EventsAndCounts: events say whether a set was an update, the
// value's type, how many entries a clear removed, the scope's and its
// parent's IDs and the agent; Clear and MergeToParent return counts;
// IsDisposed, LocalCount and the default importance.
func TestFit04_EventsAndCounts(t *testing.T) {
	type plan struct{ Step int }
	var mu sync.Mutex
	var events []Change
	root := New(Config{AgentID: "agent-0", OnChange: func(e Change) { mu.Lock(); events = append(events, e); mu.Unlock() }})
	child, err := root.ChildFor("task", "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	_ = Set(child, "p", plan{1})
	_ = Set(child, "p", plan{2})
	_ = child.SetJSON("raw", json.RawMessage(`{"x":1}`), Meta{})
	_ = Set(root, "raw", "root's")
	if n, err := child.LocalCount(); n != 2 || err != nil {
		t.Errorf("LocalCount = %d, %v; want 2", n, err)
	}
	if n, _ := child.Count(); n != 2 {
		t.Errorf("Count = %d, want 2 (raw hides the root's)", n)
	}
	if n, err := child.MergeToParent(true); n != 2 || err != nil {
		t.Errorf("MergeToParent = %d, %v; want 2", n, err)
	}
	if n, err := root.Clear(); n != 2 || err != nil {
		t.Errorf("Clear = %d, %v; want 2", n, err)
	}
	if e, _, _ := child.Lookup("p"); e.Importance != DefaultImportance {
		t.Errorf("importance = %v, want %v", e.Importance, DefaultImportance)
	}
	_ = SetWith(child, "z", 0, Meta{Importance: NoImportance})
	if e, _, _ := child.Lookup("z"); e.Importance != 0 {
		t.Errorf("NoImportance stored %v", e.Importance)
	}
	if child.IsDisposed() {
		t.Error("IsDisposed before Dispose")
	}
	_ = child.Dispose()
	if !child.IsDisposed() || root.IsDisposed() {
		t.Error("IsDisposed wrong after Dispose")
	}
	if _, ok := root.Scope(child.ID()); ok {
		t.Error("Scope finds a disposed scope")
	}
	if s, ok := root.Scope(root.ID()); !ok || s != root {
		t.Error("Scope does not find the root")
	}

	mu.Lock()
	defer mu.Unlock()
	type brief struct {
		Kind                   ChangeKind
		Key, Type              string
		Update                 bool
		Count                  int
		Scope, Parent, AgentID string
	}
	var got []brief
	for _, e := range events {
		got = append(got, brief{e.Kind, e.Key, e.Type, e.Update, e.Count, e.ScopeID, e.ParentID, e.AgentID})
	}
	r, c := root.ID(), child.ID()
	want := []brief{
		{ChangeScopeCreated, "", "", false, 0, c, r, "agent-1"},
		{ChangeSet, "p", "kv.plan", false, 0, c, r, "agent-1"},
		{ChangeSet, "p", "kv.plan", true, 0, c, r, "agent-1"},
		{ChangeSet, "raw", "json.RawMessage", false, 0, c, r, "agent-1"},
		{ChangeSet, "raw", "string", false, 0, r, "", "agent-0"},
		{ChangeSet, "p", "kv.plan", false, 0, r, "", "agent-0"},
		{ChangeSet, "raw", "json.RawMessage", true, 0, r, "", "agent-0"},
		{ChangeCleared, "", "", false, 2, r, "", "agent-0"},
		{ChangeSet, "z", "int", false, 0, c, r, "agent-1"},
		{ChangeScopeDisposed, "", "", false, 3, c, r, "agent-1"}, // p, raw and z
	}
	if !slices.Equal(got, want) {
		t.Errorf("events\n got %+v\nwant %+v", got, want)
	}
}

// TestKVSnapshotEmptyScopes pins the bytes of scopes with no live
// entries: their "entries" is left out, whether they never held one or
// what they held expired.
func TestKVSnapshotEmptyScopes(t *testing.T) {
	clock := &fakeClock{now: time.Unix(100, 0)}
	kv := New(Config{Now: clock.Now})
	if _, err := kv.Child("c"); err != nil {
		t.Fatal(err)
	}
	if err := SetWith(kv, "k", 1, Meta{TTL: time.Second}); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Second)
	got, err := kv.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"version":1,"name":"root","children":[{"name":"c"}]}`; string(got) != want {
		t.Errorf("Snapshot = %s, want %s", got, want)
	}
}
