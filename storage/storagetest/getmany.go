package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

// getManyTests check a [storage.MultiGetter]. RunWith runs them when the
// store is one.
var getManyTests = []struct {
	name string
	fn   func(t *testing.T, s storage.Store, g storage.MultiGetter)
}{
	{"GetMany/SameAsGet", testGetManySameAsGet},
	{"GetMany/Empty", testGetManyEmpty},
	{"GetMany/BadKeysReadNothing", testGetManyBadKeys},
	{"GetMany/ScopesNeverMixed", testGetManyScopes},
	{"GetMany/Many", testGetManyMany},
	{"GetMany/GetCopies", testGetManyCopies},
	{"GetMany/ContextCanceled", testGetManyCanceled},
	{"GetMany/ClosedFails", testGetManyClosed},
	{"GetMany/ConcurrentWriters", testGetManyConcurrent},
}

// RunGetMany runs the checks of a [storage.MultiGetter] alone against the
// stores newStore returns, one fresh store per subtest; they skip when
// the store is not a MultiGetter.
func RunGetMany(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Helper()
	for _, tc := range getManyTests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			g, ok := s.(storage.MultiGetter)
			if !ok {
				t.Skipf("%T is not a storage.MultiGetter", s)
			}
			tc.fn(t, s, g)
		})
	}
}

// mustGetMany returns GetMany(keys) and fails t on an error.
func mustGetMany(t *testing.T, g storage.MultiGetter, keys []string) []storage.Item {
	t.Helper()
	items, err := g.GetMany(t.Context(), keys)
	if err != nil {
		t.Fatalf("GetMany(%d keys): %v", len(keys), err)
	}
	return items
}

// wantAsGet fails t unless items are what Get returns for the keys that
// are stored among keys, in the order of keys.
func wantAsGet(t *testing.T, s storage.Store, keys []string, items []storage.Item) {
	t.Helper()
	var want []storage.Item
	for _, k := range keys {
		it, err := s.Get(t.Context(), k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("Get(%q): %v", k, err)
		}
		want = append(want, it)
	}
	if len(items) != len(want) {
		t.Fatalf("GetMany returned %d items, want %d (those Get finds)", len(items), len(want))
	}
	for i, it := range items {
		w := want[i]
		if it.Key != w.Key || it.Version != w.Version || !bytes.Equal(it.Value, w.Value) {
			t.Errorf("GetMany item %d = {%q %s v%d}, want Get's {%q %s v%d}",
				i, it.Key, short(it.Value), it.Version, w.Key, short(w.Value), w.Version)
		}
	}
}

func testGetManySameAsGet(t *testing.T, s storage.Store, g storage.MultiGetter) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	mustPut(t, s, "a", []byte("first"), storage.NoVersion)
	v := mustPut(t, s, "a", []byte("second"), storage.AnyVersion)
	mustPut(t, s, "a/b", []byte("nested"), storage.NoVersion)
	mustPut(t, s, "empty", []byte{}, storage.NoVersion)
	mustPut(t, s, "bytes", all, storage.NoVersion)
	mustPut(t, s, "gone", []byte("x"), storage.NoVersion)
	if err := s.Delete(t.Context(), "gone", storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	keys := []string{"bytes", "missing", "a/b", "gone", "a", "empty", "a/"}
	items := mustGetMany(t, g, keys)
	wantAsGet(t, s, keys, items)
	got := make([]string, len(items))
	for i, it := range items {
		got[i] = it.Key
	}
	if want := "bytes a/b a empty"; strings.Join(got, " ") != want {
		t.Errorf("GetMany keys = %q, want %q (the order asked, missing keys left out)", got, want)
	}
	if items[2].Version != v {
		t.Errorf("GetMany(a).Version = %d, want %d, the version Put returned", items[2].Version, v)
	}
	if n := len(mustGetMany(t, g, []string{"missing", "gone"})); n != 0 {
		t.Errorf("GetMany of missing keys returned %d items, want none", n)
	}
}

func testGetManyEmpty(t *testing.T, s storage.Store, g storage.MultiGetter) {
	mustPut(t, s, "a", []byte("x"), storage.NoVersion)
	for _, keys := range [][]string{nil, {}} {
		if items := mustGetMany(t, g, keys); len(items) != 0 {
			t.Errorf("GetMany(%#v) = %d items, want none", keys, len(items))
		}
	}
}

func testGetManyBadKeys(t *testing.T, s storage.Store, g storage.MultiGetter) {
	mustPut(t, s, "a", []byte("x"), storage.NoVersion)
	long := strings.Repeat("k", storage.MaxKeyLen+1)
	for name, keys := range map[string][]string{
		"duplicate":    {"a", "b", "a"},
		"empty key":    {"a", ""},
		"too long":     {long, "a"},
		"NUL":          {"a", "b\x00c"},
		"invalid UTF8": {"a", "\xff"},
	} {
		items, err := g.GetMany(t.Context(), keys)
		if !errors.Is(err, storage.ErrInvalidKey) || items != nil {
			t.Errorf("GetMany(%s) = %d items, %v; want none and an error that is storage.ErrInvalidKey", name, len(items), err)
		}
		if len(err.Error()) > 400 {
			t.Errorf("GetMany(%s) error is %d bytes long: %.100s…", name, len(err.Error()), err)
		}
	}
	wantValue(t, s, "a", []byte("x"), 0)
}

// testGetManyScopes stores one record per scope (IDs that collide, nest,
// are empty) and reads them all at once and each user's alone.
func testGetManyScopes(t *testing.T, s storage.Store, g storage.MultiGetter) {
	var keys []string
	seen := map[string]bool{}
	for _, sc := range typedScopes() {
		for _, name := range []string{"head", "seg-1"} {
			k := storage.LayerKey("episodic", sc, name)
			if seen[k] {
				continue
			}
			seen[k] = true
			keys = append(keys, k)
			mustPut(t, s, k, []byte(sc+"|"+name), storage.NoVersion)
		}
	}
	for _, id := range []string{"a", "a/b", ""} {
		k := storage.ThreadKey(id, "messages")
		keys = append(keys, k)
		mustPut(t, s, k, []byte("thread "+id), storage.NoVersion)
	}
	wantAsGet(t, s, keys, mustGetMany(t, g, keys))
	for _, id := range []string{"c1", "c1/child-care", ""} {
		sc := storage.ResourceScope(id)
		mine := []string{storage.LayerKey("episodic", sc, "head"), storage.LayerKey("episodic", sc, "seg-1"), storage.LayerKey("episodic", sc, "seg-2")}
		items := mustGetMany(t, g, mine)
		if len(items) != 2 {
			t.Fatalf("GetMany of user %q's keys = %d items, want 2", id, len(items))
		}
		for i, it := range items {
			if want := sc + "|" + []string{"head", "seg-1"}[i]; string(it.Value) != want || it.Key != mine[i] {
				t.Errorf("GetMany of user %q: item %d = %q %q, want %q %q", id, i, it.Key, it.Value, mine[i], want)
			}
		}
	}
}

// testGetManyMany reads more keys than a pipeline or statement of a
// handful, stored and missing interleaved, in a shuffled order.
func testGetManyMany(t *testing.T, s storage.Store, g storage.MultiGetter) {
	n := 600
	if raceEnabled {
		n = 200
	}
	var keys []string
	for i := range n {
		k := fmt.Sprintf("layers/episodic/thread:t/seg-%d", (i*7919)%n)
		keys = append(keys, k)
		if i%3 != 0 {
			mustPut(t, s, k, []byte(k), storage.NoVersion)
		}
	}
	max := strings.Repeat("m", storage.MaxKeyLen)
	mustPut(t, s, max, []byte("max"), storage.NoVersion)
	keys = append(keys, max)
	items := mustGetMany(t, g, keys)
	if want := n - (n+2)/3 + 1; len(items) != want {
		t.Fatalf("GetMany(%d keys) = %d items, want %d", len(keys), len(items), want)
	}
	wantAsGet(t, s, keys, items)
}

func testGetManyCopies(t *testing.T, s storage.Store, g storage.MultiGetter) {
	mustPut(t, s, "k", []byte("value"), storage.NoVersion)
	items := mustGetMany(t, g, []string{"k"})
	items[0].Value[0] = 'X'
	again := mustGetMany(t, g, []string{"k"})
	if string(again[0].Value) != "value" {
		t.Errorf("changing a value GetMany returned changed the store: now %q", again[0].Value)
	}
}

func testGetManyCanceled(t *testing.T, s storage.Store, g storage.MultiGetter) {
	mustPut(t, s, "k", []byte("v"), storage.NoVersion)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, keys := range [][]string{{"k"}, nil} {
		if items, err := g.GetMany(ctx, keys); !errors.Is(err, context.Canceled) || items != nil {
			t.Errorf("GetMany(%q) with a canceled context = %d items, %v; want an error that is context.Canceled", keys, len(items), err)
		}
	}
}

func testGetManyClosed(t *testing.T, s storage.Store, g storage.MultiGetter) {
	cl, ok := s.(io.Closer)
	if !ok {
		t.Skip("the store has no Close")
	}
	mustPut(t, s, "k", []byte("v"), storage.NoVersion)
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	if items, err := g.GetMany(t.Context(), []string{"k", "missing"}); !errors.Is(err, storage.ErrClosed) || items != nil {
		t.Errorf("GetMany after Close = %d items, %v; want an error that is storage.ErrClosed", len(items), err)
	}
}

// testGetManyConcurrent reads while writers rewrite the keys: every item
// read is a (version, value) pair a writer wrote, and a reader never sees
// a key's version go back.
func testGetManyConcurrent(t *testing.T, s storage.Store, g storage.MultiGetter) {
	const writers, writes, readers = 4, 20, 4
	keys := make([]string, writers)
	w := writtenPairs{pairs: map[string]map[int64]string{}}
	for i := range keys {
		keys[i] = storage.LayerKey("episodic", storage.ResourceScope(fmt.Sprint(i)), "head")
		w.pairs[keys[i]] = map[int64]string{mustPut(t, s, keys[i], []byte("0"), storage.NoVersion): "0"}
	}
	var wg sync.WaitGroup
	errc := make(chan error, writers+readers)
	for _, k := range keys {
		wg.Go(func() { errc <- w.rewrite(s, k, writes) })
	}
	seen := make([][]storage.Item, readers)
	for r := range readers {
		wg.Go(func() {
			var err error
			seen[r], err = readRepeatedly(g, keys, writes)
			errc <- err
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, items := range seen {
		for _, it := range items {
			if want, ok := w.pairs[it.Key][it.Version]; !ok || string(it.Value) != want {
				t.Fatalf("GetMany read %q v%d = %q, which no writer wrote (want %q)", it.Key, it.Version, it.Value, want)
			}
		}
	}
}

// writtenPairs records the value of each version written, by key.
type writtenPairs struct {
	mu    sync.Mutex
	pairs map[string]map[int64]string
}

// rewrite writes key n times, unconditionally, recording each version.
func (w *writtenPairs) rewrite(s storage.Store, key string, n int) error {
	for i := 1; i <= n; i++ {
		val := fmt.Sprint(i)
		v, err := s.Put(context.Background(), key, []byte(val), storage.AnyVersion)
		if err != nil {
			return err
		}
		w.mu.Lock()
		w.pairs[key][v] = val
		w.mu.Unlock()
	}
	return nil
}

// readRepeatedly reads keys n times and returns every item read; it fails
// when a key is missing, out of order or older than read before.
func readRepeatedly(g storage.MultiGetter, keys []string, n int) ([]storage.Item, error) {
	var seen []storage.Item
	last := map[string]int64{}
	for range n {
		items, err := g.GetMany(context.Background(), keys)
		if err != nil {
			return nil, err
		}
		if len(items) != len(keys) {
			return nil, fmt.Errorf("GetMany = %d items, want %d", len(items), len(keys))
		}
		for i, it := range items {
			if it.Key != keys[i] || it.Version < last[it.Key] {
				return nil, fmt.Errorf("item %d = %q v%d after v%d", i, it.Key, it.Version, last[it.Key])
			}
			last[it.Key] = it.Version
		}
		seen = append(seen, items...)
	}
	return seen, nil
}
