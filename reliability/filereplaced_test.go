package reliability

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// fileArgs are the arguments of a file-replaced worker.
type fileArgs struct {
	Path   string `json:"path"`
	Writes int    `json:"writes"`
	// Unchecked writes through database/sql to the store's table (the
	// layout storage/sqlite documents), without the store's check that
	// the path still names the open file: the negative control.
	Unchecked bool `json:"unchecked,omitempty"`
}

// fileResult is what a file-replaced worker reports.
type fileResult struct {
	Acked    []string `json:"acked"`    // keys whose write succeeded
	Replaced int      `json:"replaced"` // writes refused with sqlite.ErrFileReplaced
	Other    []string `json:"other"`    // other errors, at most a few
}

func init() { workers["file-writer"] = fileWriter }

// fileWriter opens the store, writes one key, says "ready", waits for
// "go" (meanwhile the test deletes or replaces the file) and then writes
// args.Writes keys, reporting which were acknowledged.
func fileWriter(ctx context.Context, raw string, in *bufio.Scanner, out *lineWriter) error {
	var args fileArgs
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Path: args.Path})
	if err != nil {
		return err
	}
	defer st.Close()
	put := func(key string) error {
		_, err := st.Put(ctx, key, []byte("v"), storage.AnyVersion)
		return err
	}
	if args.Unchecked {
		db, err := sql.Open("sqlite", "file:"+args.Path)
		if err != nil {
			return err
		}
		defer db.Close()
		put = func(key string) error {
			_, err := db.ExecContext(ctx, `INSERT INTO memlayer_kv (key, value, version) VALUES (?, 'v', ?)
				ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = version + 1`, key, storage.FirstVersion())
			return err
		}
	}
	if err := put("before"); err != nil {
		return err
	}
	out.Printf("ready")
	if err := waitFor(in, "go"); err != nil {
		return err
	}
	var res fileResult
	for i := range args.Writes {
		key := fmt.Sprintf("after/%04d", i)
		err := put(key)
		switch {
		case err == nil:
			res.Acked = append(res.Acked, key)
		case errors.Is(err, sqlite.ErrFileReplaced):
			res.Replaced++
		case len(res.Other) < 3:
			res.Other = append(res.Other, err.Error())
		}
	}
	b, _ := json.Marshal(res)
	out.Printf("result %s", b)
	return nil
}

// TestFileReplaced (issue 9, item 5): a process has an SQLite store open;
// the file is deleted, or replaced by another store file (a restored
// backup), and the process goes on writing. Every write it is told
// succeeded must be found by the next process that opens the path: the
// store fails them with sqlite.ErrFileReplaced instead. The control
// writes to the same table without the store's check, and SQLite
// acknowledges writes that the next process cannot find.
func TestFileReplaced(t *testing.T) {
	parallelInMakeTest(t)
	writes := pick(500, 50)
	for _, how := range []string{"deleted", "replaced"} {
		t.Run(how, func(t *testing.T) {
			for _, unchecked := range []bool{false, true} {
				dir := t.TempDir()
				path := filepath.Join(dir, "mem.db")
				w := startWorker(t, "file-writer", fileArgs{Path: path, Writes: writes, Unchecked: unchecked})
				w.expect(t, "ready", time.Minute)
				for _, p := range []string{path, path + "-wal", path + "-shm"} {
					if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
						t.Fatal(err)
					}
				}
				if how == "replaced" {
					backup := filepath.Join(dir, "backup.db")
					b := mustOpen(t, storeSpec{Backend: "sqlite", Path: backup})
					if _, err := b.Put(t.Context(), "restored", []byte("x"), storage.NoVersion); err != nil {
						t.Fatal(err)
					}
					if err := b.(*sqlite.Store).Close(); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(backup, path); err != nil {
						t.Fatal(err)
					}
				}
				w.send(t, "go")
				var res fileResult
				if err := json.Unmarshal([]byte(w.expect(t, "result", 5*time.Minute)), &res); err != nil {
					t.Fatal(err)
				}
				w.wait(t, time.Minute)

				// The next process: this test, opening the path.
				next := mustOpen(t, storeSpec{Backend: "sqlite", Path: path})
				lost := 0
				for _, k := range res.Acked {
					if _, err := next.Get(t.Context(), k); errors.Is(err, storage.ErrNotFound) {
						lost++
					} else if err != nil {
						t.Fatal(err)
					}
				}
				if unchecked {
					if lost == 0 {
						t.Errorf("control: no acknowledged write was lost: the scenario cannot see the loss")
					}
					t.Logf("FIGURE file-%s control: without the check, %d of %d writes after the file was %s acknowledged, %d of them lost to the next process", how, len(res.Acked), writes, how, lost)
					continue
				}
				if lost != 0 || len(res.Other) > 0 {
					t.Errorf("%d acknowledged writes lost; other errors: %q", lost, res.Other)
				}
				if res.Replaced != writes {
					t.Errorf("%d of %d writes failed with sqlite.ErrFileReplaced", res.Replaced, writes)
				}
				if how == "replaced" {
					if _, err := next.Get(t.Context(), "restored"); err != nil {
						t.Errorf("the replacement file lost its own key: %v", err)
					}
				}
				t.Logf("FIGURE file-%s: %d writes after the file was %s: %d acknowledged, %d lost, %d failed with sqlite.ErrFileReplaced",
					how, writes, how, len(res.Acked), lost, res.Replaced)
			}
		})
	}
}
