package storagetest

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

// RunBatch checks a [storage.Batcher]: a batch applies all its writes or
// none, checks each version as Put and Delete do, returns the versions
// Get then reports, and of concurrent batches that compare-and-swap the
// same key exactly one wins. Bad batches (an invalid key, a key twice)
// fail and leave the store as it was. newStore returns a fresh store per
// subtest; the suite skips when it is not a Batcher.
func RunBatch(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Store, b storage.Batcher)
	}{
		{"AppliesAll", testBatchAppliesAll},
		{"ConflictAppliesNone", testBatchConflict},
		{"DeleteChecks", testBatchDelete},
		{"BadBatchAppliesNone", testBatchBad},
		{"CanceledAppliesNone", testBatchCanceled},
		{"ConcurrentOneWinner", testBatchConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			b, ok := s.(storage.Batcher)
			if !ok {
				t.Skipf("%T is not a storage.Batcher", s)
			}
			tc.fn(t, s, b)
		})
	}
}

// mustValue fails t unless key holds want (nil: key is missing).
func mustValue(t *testing.T, s storage.Store, key string, want []byte) storage.Item {
	t.Helper()
	it, err := s.Get(context.Background(), key)
	if want == nil {
		if !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("Get %q = %q, %v; want not found", key, it.Value, err)
		}
		return it
	}
	if err != nil || !bytes.Equal(it.Value, want) {
		t.Fatalf("Get %q = %q, %v; want %q", key, it.Value, err, want)
	}
	return it
}

func testBatchAppliesAll(t *testing.T, s storage.Store, b storage.Batcher) {
	ctx := context.Background()
	v0 := mustPut(t, s, "a", []byte("old"), storage.NoVersion)
	mustPut(t, s, "a/b", []byte("nested"), storage.NoVersion)
	vs, err := b.WriteBatch(ctx, []storage.Write{
		{Key: "a", Value: []byte("new"), IfVersion: v0},
		{Key: "c", Value: []byte("created"), IfVersion: storage.NoVersion},
		{Key: "d", Value: []byte("any"), IfVersion: storage.AnyVersion},
		{Key: "a/b", IfVersion: storage.AnyVersion, Delete: true},
		{Key: "missing", IfVersion: storage.AnyVersion, Delete: true},
	})
	if err != nil {
		t.Fatalf("WriteBatch: %v", err)
	}
	wantBatchVersions(t, s, vs, v0)
	mustValue(t, s, "a/b", nil)
	if vs, err := b.WriteBatch(ctx, nil); err != nil || len(vs) != 0 {
		t.Errorf("empty batch = %v, %v", vs, err)
	}
}

// wantBatchVersions checks the versions testBatchAppliesAll's batch
// returned: one per write, 0 for its two deletes, and for its three
// writes those Get now reports, the first a new version of v0.
func wantBatchVersions(t *testing.T, s storage.Store, vs []int64, v0 int64) {
	t.Helper()
	if len(vs) != 5 || vs[3] != 0 || vs[4] != 0 {
		t.Fatalf("versions %v: want 5, deletes 0", vs)
	}
	for i, kv := range [][2]string{{"a", "new"}, {"c", "created"}, {"d", "any"}} {
		if it := mustValue(t, s, kv[0], []byte(kv[1])); it.Version != vs[i] || vs[i] <= 0 {
			t.Errorf("%q: batch gave version %d, Get %d", kv[0], vs[i], it.Version)
		}
	}
	if vs[0] == v0 {
		t.Errorf("version of %q did not change: %d", "a", v0)
	}
}

func testBatchConflict(t *testing.T, s storage.Store, b storage.Batcher) {
	ctx := context.Background()
	v := mustPut(t, s, "head", []byte("h1"), storage.NoVersion)
	mustPut(t, s, "head", []byte("h2"), v)
	mustPut(t, s, "keep", []byte("k"), storage.NoVersion)
	for name, batch := range map[string][]storage.Write{
		"stale version": {
			{Key: "rec", Value: []byte("r"), IfVersion: storage.NoVersion},
			{Key: "keep", IfVersion: storage.AnyVersion, Delete: true},
			{Key: "head", Value: []byte("h3"), IfVersion: v},
		},
		"create existing": {
			{Key: "rec", Value: []byte("r"), IfVersion: storage.NoVersion},
			{Key: "keep", Value: []byte("k2"), IfVersion: storage.NoVersion},
		},
		"version of missing key": {
			{Key: "rec", Value: []byte("r"), IfVersion: storage.NoVersion},
			{Key: "nothere", Value: []byte("x"), IfVersion: 42},
		},
	} {
		if _, err := b.WriteBatch(ctx, batch); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("%s: err = %v, want ErrConflict", name, err)
		}
		mustValue(t, s, "head", []byte("h2"))
		mustValue(t, s, "keep", []byte("k"))
		mustValue(t, s, "rec", nil)
		mustValue(t, s, "nothere", nil)
	}
}

func testBatchDelete(t *testing.T, s storage.Store, b storage.Batcher) {
	ctx := context.Background()
	v := mustPut(t, s, "x", []byte("1"), storage.NoVersion)
	if _, err := b.WriteBatch(ctx, []storage.Write{{Key: "y", Value: []byte("y"), IfVersion: storage.NoVersion}, {Key: "x", IfVersion: v + 1, Delete: true}}); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("stale delete: err = %v, want ErrConflict", err)
	}
	if _, err := b.WriteBatch(ctx, []storage.Write{{Key: "y", Value: []byte("y"), IfVersion: storage.NoVersion}, {Key: "gone", IfVersion: 7, Delete: true}}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("delete of a missing key: err = %v, want ErrNotFound", err)
	}
	mustValue(t, s, "y", nil)
	mustValue(t, s, "x", []byte("1"))
	if _, err := b.WriteBatch(ctx, []storage.Write{{Key: "x", IfVersion: v, Delete: true}}); err != nil {
		t.Fatalf("delete at the current version: %v", err)
	}
	mustValue(t, s, "x", nil)
}

func testBatchBad(t *testing.T, s storage.Store, b storage.Batcher) {
	ctx := context.Background()
	mustPut(t, s, "k", []byte("v"), storage.NoVersion)
	for name, tc := range map[string]struct {
		batch []storage.Write
		want  error
	}{
		"empty key":        {[]storage.Write{{Key: "new", Value: []byte("n")}, {Key: "", Value: []byte("x")}}, storage.ErrInvalidKey},
		"NUL in key":       {[]storage.Write{{Key: "new", Value: []byte("n")}, {Key: "a\x00b", Value: []byte("x")}}, storage.ErrInvalidKey},
		"key twice":        {[]storage.Write{{Key: "new", Value: []byte("n")}, {Key: "new", Value: []byte("x"), IfVersion: storage.AnyVersion}}, storage.ErrInvalidKey},
		"invalid version":  {[]storage.Write{{Key: "new", Value: []byte("n")}, {Key: "k", Value: []byte("x"), IfVersion: -5}}, storage.ErrConflict},
		"delete NoVersion": {[]storage.Write{{Key: "new", Value: []byte("n")}, {Key: "k", Delete: true}}, storage.ErrConflict},
	} {
		if _, err := b.WriteBatch(ctx, tc.batch); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
		mustValue(t, s, "new", nil)
		mustValue(t, s, "k", []byte("v"))
	}
}

func testBatchCanceled(t *testing.T, s storage.Store, b storage.Batcher) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.WriteBatch(ctx, []storage.Write{{Key: "c", Value: []byte("c")}}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	mustValue(t, s, "c", nil)
}

func testBatchConcurrent(t *testing.T, s storage.Store, b storage.Batcher) {
	ctx := context.Background()
	v := mustPut(t, s, "head", []byte("0"), storage.NoVersion)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = b.WriteBatch(ctx, []storage.Write{
				{Key: "rec/" + string(rune('a'+i)), Value: []byte{byte(i)}, IfVersion: storage.NoVersion},
				{Key: "head", Value: []byte{byte('a' + i)}, IfVersion: v},
			})
		})
	}
	wg.Wait()
	winner := soleWinner(t, "batch", errs)
	mustValue(t, s, "head", []byte{byte('a' + winner)})
	for i := range n {
		want := []byte(nil)
		if i == winner {
			want = []byte{byte(i)}
		}
		mustValue(t, s, "rec/"+string(rune('a'+i)), want)
	}
}

// soleWinner returns the index of the one nil error of errs, the
// outcomes of concurrent operations (what, such as "create") of which
// one must win and the others fail with ErrConflict.
func soleWinner(t *testing.T, what string, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("%s %d and %d both succeeded", what, winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, storage.ErrConflict):
			t.Errorf("%s %d: error = %v, want nil or storage.ErrConflict", what, i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no concurrent %s succeeded", what)
	}
	return winner
}
