package storage_test

import (
	"errors"
	"strconv"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
)

func newMemory(t *testing.T) storage.Store {
	m := storage.NewMemoryStore()
	t.Cleanup(func() { m.Close() })
	return m
}

func TestMemoryConformance(t *testing.T) {
	// An in-memory store is wiped by losing it: the process restarts and
	// makes a new one, and a writer that read the old one must not pass
	// its compare-and-swap on the new.
	storagetest.RunWith(t, newMemory, storagetest.Options{
		Wipe: func(t *testing.T, _ storage.Store) storage.Store { return newMemory(t) },
	})
}

func TestMemoryClosed(t *testing.T) {
	m := storage.NewMemoryStore()
	ctx := t.Context()
	if _, err := m.Put(ctx, "k", []byte("v"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := m.Get(ctx, "k"); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Get after Close: %v, want storage.ErrClosed", err)
	}
	if _, err := m.Put(ctx, "k", nil, storage.AnyVersion); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Put after Close: %v, want storage.ErrClosed", err)
	}
	if err := m.Delete(ctx, "k", storage.AnyVersion); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Delete after Close: %v, want storage.ErrClosed", err)
	}
	if _, err := m.List(ctx, ""); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("List after Close: %v, want storage.ErrClosed", err)
	}
}

// TestTrust01_CASNoABAAfterDelete (issue 9, item 1): a writer holding
// the version it read before the key was deleted, recreated and rewritten
// (a Clear, a quarantine) must get ErrConflict, not overwrite the new data.
// Before the fix versions restarted at 1 and the stale write passed.
func TestTrust01_CASNoABAAfterDelete(t *testing.T) {
	m := storage.NewMemoryStore()
	ctx := t.Context()
	stale, err := m.Put(ctx, "k", []byte("old"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, "k", storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	cur, err := m.Put(ctx, "k", []byte("new"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if cur == stale {
		t.Errorf("the recreated key got the deleted key's version %d again", cur)
	}
	if _, err := m.Put(ctx, "k", []byte("stale"), stale); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("stale Put after delete and recreate: error = %v, want storage.ErrConflict", err)
	}
	if err := m.Delete(ctx, "k", stale); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("stale Delete after delete and recreate: error = %v, want storage.ErrConflict", err)
	}
	// A new store (the process restarted) gives other versions too.
	m2 := storage.NewMemoryStore()
	v2, err := m2.Put(ctx, "k", []byte("other store"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if v2 == stale || v2 == cur {
		t.Errorf("a new store gave key k version %d, already given by the first store (%d, %d)", v2, stale, cur)
	}
	if it, err := m.Get(ctx, "k"); err != nil || string(it.Value) != "new" {
		t.Errorf("Get = %q, %v; want \"new\"", it.Value, err)
	}
}

// TestMemoryVersionsCount: within one life of a key, each write gives a
// new version.
func TestMemoryVersionsCount(t *testing.T) {
	m := storage.NewMemoryStore()
	ctx := t.Context()
	seen := map[int64]bool{}
	for i := range 3 {
		v, err := m.Put(ctx, "k", []byte("v"), storage.AnyVersion)
		if err != nil {
			t.Fatal(err)
		}
		if seen[v] || v <= 0 {
			t.Fatalf("Put #%d = %d: not a new positive version (seen %v)", i, v, seen)
		}
		seen[v] = true
	}
}

// TestMemoryListWhileWriting lists under concurrent writes: every listing
// must be sorted and hold the keys that existed before it started.
func TestMemoryListWhileWriting(t *testing.T) {
	m := storage.NewMemoryStore()
	ctx := t.Context()
	for i := range 10 {
		if _, err := m.Put(ctx, "base/"+strconv.Itoa(i), nil, storage.NoVersion); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 500 {
			k := "base/w" + strconv.Itoa(i%20)
			if _, err := m.Put(ctx, k, []byte("x"), storage.AnyVersion); err != nil {
				t.Error(err)
				return
			}
			if err := m.Delete(ctx, k, storage.AnyVersion); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 200 {
		keys, err := m.List(ctx, "base/")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) < 10 {
			t.Fatalf("List returned %d keys, want at least the 10 stable ones", len(keys))
		}
		for i := 1; i < len(keys); i++ {
			if keys[i-1] >= keys[i] {
				t.Fatalf("List not strictly sorted: %q", keys)
			}
		}
	}
	wg.Wait()
}

// BenchmarkMemoryGet reads a typical small layer state (a 100-byte JSON
// object) from a store holding 1,000 keys.
func BenchmarkMemoryGet(b *testing.B) {
	benchGet(b, 100)
}

// BenchmarkMemoryGet2KB is BenchmarkMemoryGet with a 2 KB value: the copy
// handed to the caller dominates.
func BenchmarkMemoryGet2KB(b *testing.B) {
	benchGet(b, 2048)
}

func benchGet(b *testing.B, size int) {
	m := storage.NewMemoryStore()
	ctx := b.Context()
	value := make([]byte, size)
	for i := range 1000 {
		if _, err := m.Put(ctx, storage.LayerKey("working-memory", "thread-"+strconv.Itoa(i), "state"), value, storage.AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
	key := storage.LayerKey("working-memory", "thread-42", "state")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Get(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryPut(b *testing.B) {
	m := storage.NewMemoryStore()
	ctx := b.Context()
	key := storage.LayerKey("working-memory", "thread-42", "state")
	value := make([]byte, 2048)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Put(ctx, key, value, storage.AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMemoryGetParallel(b *testing.B) {
	m := storage.NewMemoryStore()
	ctx := b.Context()
	key := storage.LayerKey("working-memory", "thread-42", "state")
	if _, err := m.Put(ctx, key, make([]byte, 2048), storage.AnyVersion); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := m.Get(ctx, key); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkMemorySearch100k is a three-term text query for the top 10
// over 100,000 documents of one user (MemoryIndex, BM25 over internal/lexical).
func BenchmarkMemorySearch100k(b *testing.B) {
	storagetest.BenchmarkSearch(b, storage.NewMemoryStore())
}

// BenchmarkMemoryIndex is the cost of indexing a document, in batches of 100.
func BenchmarkMemoryIndex(b *testing.B) {
	storagetest.BenchmarkIndex(b, storage.NewMemoryStore())
}

func TestMemoryBatch(t *testing.T) {
	storagetest.RunBatch(t, func(t *testing.T) storage.Store { return storage.NewMemoryStore() })
}
