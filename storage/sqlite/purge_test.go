package sqlite_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// TestOperate37_PurgeLeavesNoDeletedBytes: while the store stays open, a
// deleted value and the old value of an overwritten key are, after
// Purge, in no byte of the database file nor of its write-ahead log;
// without Purge the log still holds them.
func TestOperate37_PurgeLeavesNoDeletedBytes(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secret := []byte("SECRETMARK-" + strings.Repeat("x", 3000)) // spills to an overflow page
	if _, err := st.Put(ctx, "a/deleted", secret, storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, "a/overwritten", []byte("OLDMARK-value"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, "a/kept", []byte("KEPTMARK"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "a/deleted", storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(ctx, "a/overwritten", []byte("new value"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	files := func() []byte {
		var all []byte
		for _, f := range []string{path, path + "-wal"} {
			b, err := os.ReadFile(f)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	if !bytes.Contains(files(), []byte("SECRETMARK")) {
		t.Fatal("before Purge the deleted value is nowhere in the files: the test shows nothing")
	}
	if err := st.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	data := files()
	for _, m := range []string{"SECRETMARK", "OLDMARK"} {
		if i := bytes.Index(data, []byte(m)); i >= 0 {
			t.Errorf("%s still at byte %d after Purge", m, i)
		}
	}
	if !bytes.Contains(data, []byte("KEPTMARK")) {
		t.Error("the kept value is not in the file")
	}
	if it, err := st.Get(ctx, "a/kept"); err != nil || string(it.Value) != "KEPTMARK" {
		t.Errorf("after Purge: %q, %v", it.Value, err)
	}
	mem, err := sqlite.Open(ctx, sqlite.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Purge(ctx); err != nil {
		t.Errorf("Purge in memory: %v", err)
	}
	mem.Close()
	if err := mem.Purge(ctx); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Purge after Close: %v", err)
	}
}

// TestMemory81_PurgeLeavesNoBytesAfterRebalancing: after a workload of
// values of many sizes put, overwritten and deleted under a few prefixes
// (one that makes the B-tree rebalance its pages), Purge leaves no byte
// of a deleted value in the file. secure_delete alone left one in a
// page's unused space for this workload (and for agentloop's
// TestOperate30 with the audit's records); Purge's VACUUM leaves none.
func TestMemory81_PurgeLeavesNoBytesAfterRebalancing(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "p.db")
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := rand.New(rand.NewPCG(35, 1)) // the workload that left bytes behind
	var marked []string
	for range 300 {
		secret := r.IntN(4) == 0
		key := fmt.Sprintf("%s/k%03d", []string{"threads/a", "layers/x", "threads/b"}[r.IntN(3)], r.IntN(120))
		v := strings.Repeat("y", 50+r.IntN(2500))
		if secret {
			v = "ERASEDMARK" + v
			marked = append(marked, key)
		}
		if _, err := st.Put(ctx, key, []byte(v), storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range marked {
		if err := st.Delete(ctx, k, storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
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
		if i := bytes.Index(data, []byte("ERASEDMARK")); i >= 0 {
			t.Errorf("%s holds a deleted value at byte %d of %d", filepath.Base(f), i, len(data))
		}
	}
}

// TestPurgeWaitsForReader: a reader of another connection that holds a
// snapshot while Purge runs delays the checkpoint, as readers of other
// users' agents do while one user is erased (CI saw TestEraseOverlappingUsers
// fail at once); Purge waits for it to end and then succeeds. A reader
// that outlasts the store's BusyTimeout fails Purge with ErrLocked, and
// every live record is still there.
func TestPurgeWaitsForReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		hold time.Duration
		want error
	}{
		{"reader ends", 150 * time.Millisecond, nil},
		{"reader outlasts the timeout", 3 * time.Second, sqlite.ErrLocked},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "p.db")
			st, err := sqlite.Open(ctx, sqlite.Config{Path: path, BusyTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.Put(ctx, "a/kept", []byte("kept"), storage.AnyVersion); err != nil {
				t.Fatal(err)
			}
			if err := st.Delete(ctx, "a/kept", storage.AnyVersion); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Put(ctx, "a/kept", []byte("kept again"), storage.AnyVersion); err != nil {
				t.Fatal(err)
			}
			reader := rawDB(t, path)
			tx, err := reader.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
				t.Fatal(err)
			}
			released := time.AfterFunc(tc.hold, func() { tx.Rollback() })
			defer released.Stop()
			defer tx.Rollback()
			start := time.Now()
			err = st.Purge(ctx)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Purge with a reader held %v: %v, want %v", tc.hold, err, tc.want)
			}
			if tc.want == nil && time.Since(start) < tc.hold {
				t.Errorf("Purge returned after %v, before the reader ended (%v): it did not wait for the checkpoint", time.Since(start), tc.hold)
			}
			if it, err := st.Get(ctx, "a/kept"); err != nil || string(it.Value) != "kept again" {
				t.Errorf("after Purge: %q, %v", it.Value, err)
			}
		})
	}
}
