package sqlite_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
