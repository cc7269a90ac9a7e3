package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/storage/storagetest"
)

func open(t testing.TB, cfg sqlite.Config) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open(%+v): %v", cfg, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformanceFile(t *testing.T) {
	t.Parallel() // its own database; mostly waits on the disk
	storagetest.RunWith(t, func(t *testing.T) storage.Store {
		return open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "mem.db")})
	}, storagetest.Options{Wipe: recreateFile})
}

func TestConformanceInMemory(t *testing.T) {
	t.Parallel() // a private in-memory database for each store
	storagetest.RunWith(t, func(t *testing.T) storage.Store {
		return open(t, sqlite.Config{})
	}, storagetest.Options{
		// A private in-memory database is wiped by opening another.
		Wipe: func(t *testing.T, _ storage.Store) storage.Store { return open(t, sqlite.Config{}) },
	})
}

// recreateFile closes the store, deletes its file (and WAL files) and
// opens a new, empty store at the same path: a restore of an old backup, a
// user's rm, a fresh container volume.
func recreateFile(t *testing.T, st storage.Store) storage.Store {
	t.Helper()
	s := st.(*sqlite.Store)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	removeDB(t, s.Path())
	return open(t, sqlite.Config{Path: s.Path()})
}

// removeDB deletes an SQLite file and its WAL and shared-memory files.
func removeDB(t *testing.T, path string) {
	t.Helper()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}

// TestTrust01_CASNoABAAfterRecreatedFile (issue 9, item 1): a process
// holding a version it read from a file that was then deleted and created
// anew (and written as often) must get ErrConflict, not overwrite the new
// file's data. Before the fix every file numbered each key from 1.
func TestTrust01_CASNoABAAfterRecreatedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	ctx := t.Context()
	s := open(t, sqlite.Config{Path: path})
	stale, err := s.Put(ctx, "k", []byte("old"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	s2 := recreateFile(t, s)
	cur, err := s2.Put(ctx, "k", []byte("new"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if cur == stale {
		t.Errorf("the recreated file gave key k the old file's version %d again", cur)
	}
	if _, err := s2.Put(ctx, "k", []byte("stale"), stale); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("stale Put on the recreated file: error = %v, want storage.ErrConflict", err)
	}
	// Within one file: delete and recreate.
	if err := s2.Delete(ctx, "k", storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	again, err := s2.Put(ctx, "k", []byte("again"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{stale, cur} {
		if _, err := s2.Put(ctx, "k", []byte("stale"), v); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("stale Put (version %d) after delete and recreate: error = %v, want storage.ErrConflict", v, err)
		}
		if err := s2.Delete(ctx, "k", v); !errors.Is(err, storage.ErrConflict) {
			t.Errorf("stale Delete (version %d) after delete and recreate: error = %v, want storage.ErrConflict", v, err)
		}
	}
	if it, err := s2.Get(ctx, "k"); err != nil || string(it.Value) != "again" || it.Version != again {
		t.Errorf("Get = %q v%d, %v; want \"again\" v%d", it.Value, it.Version, err, again)
	}
}

// TestTrust05_FileDeletedWhileOpen (issue 9, item 5): after the file is
// deleted under an open store, a write must fail with ErrFileReplaced
// instead of "succeeding" into a file no one will open again. Before the
// fix the Put returned a version and the next Open found an empty store.
func TestTrust05_FileDeletedWhileOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	ctx := t.Context()
	s := open(t, sqlite.Config{Path: path})
	v, err := s.Put(ctx, "k", []byte("before"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	removeDB(t, path)
	_, err = s.Put(ctx, "k", []byte("after"), v)
	if !errors.Is(err, sqlite.ErrFileReplaced) {
		t.Fatalf("Put after the file was deleted: error = %v, want sqlite.ErrFileReplaced", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name the file", err)
	}
	if _, err := s.Put(ctx, "new", []byte("x"), storage.AnyVersion); !errors.Is(err, sqlite.ErrFileReplaced) {
		t.Errorf("unconditional Put after the file was deleted: error = %v, want sqlite.ErrFileReplaced", err)
	}
	if err := s.Delete(ctx, "k", storage.AnyVersion); !errors.Is(err, sqlite.ErrFileReplaced) {
		t.Errorf("Delete after the file was deleted: error = %v, want sqlite.ErrFileReplaced", err)
	}
}

// TestTrust05_FileReplacedWhileOpen is TestTrust05_FileDeletedWhileOpen
// with another store file moved to the path (a restored backup).
func TestTrust05_FileReplacedWhileOpen(t *testing.T) {
	dir := t.TempDir()
	path, other := filepath.Join(dir, "mem.db"), filepath.Join(dir, "other.db")
	ctx := t.Context()
	s := open(t, sqlite.Config{Path: path})
	if _, err := s.Put(ctx, "k", []byte("before"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	o, err := sqlite.Open(ctx, sqlite.Config{Path: other})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Put(ctx, "backup", []byte("restored"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	removeDB(t, path)
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "k", []byte("after"), storage.AnyVersion); !errors.Is(err, sqlite.ErrFileReplaced) {
		t.Fatalf("Put after the file was replaced: error = %v, want sqlite.ErrFileReplaced", err)
	}
	// The replacement is intact, and a store opened on it works.
	s2 := open(t, sqlite.Config{Path: path})
	if it, err := s2.Get(ctx, "backup"); err != nil || string(it.Value) != "restored" {
		t.Errorf("the replacement file: Get = %q, %v; want \"restored\"", it.Value, err)
	}
	if _, err := s2.Get(ctx, "k"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the replacement file holds the old store's key: %v", err)
	}
	if _, err := s2.Put(ctx, "k", []byte("x"), storage.NoVersion); err != nil {
		t.Errorf("Put on a store opened on the replacement: %v", err)
	}
}

func TestPersistsAcrossOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	ctx := t.Context()
	s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Put(ctx, "k", []byte("kept"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, sqlite.Config{Path: path})
	it, err := s2.Get(ctx, "k")
	if err != nil || string(it.Value) != "kept" || it.Version != v {
		t.Fatalf("after reopen: %q v%d, %v; want \"kept\" v%d", it.Value, it.Version, err, v)
	}
}

func TestJournalModeIsWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	open(t, sqlite.Config{Path: path})
	db := rawDB(t, path)
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
}

func TestPathWithURIMetacharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dir?x=1#frag%20")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "m&m.db")
	s := open(t, sqlite.Config{Path: path})
	if _, err := s.Put(t.Context(), "k", []byte("v"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not created at the given path: %v", err)
	}
}

func TestClosed(t *testing.T) {
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "mem.db")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := t.Context()
	if _, err := s.Get(ctx, "k"); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Get after Close: %v", err)
	}
	if _, err := s.Put(ctx, "k", nil, storage.AnyVersion); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Put after Close: %v", err)
	}
	if err := s.Delete(ctx, "k", storage.AnyVersion); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Delete after Close: %v", err)
	}
	if _, err := s.List(ctx, ""); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("List after Close: %v", err)
	}
}

func TestBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  sqlite.Config
	}{
		{"negative busy timeout", sqlite.Config{Path: "x.db", BusyTimeout: -time.Second}},
		{"unknown sync mode", sqlite.Config{Path: "x.db", Sync: 7}},
		{"read-only in memory", sqlite.Config{ReadOnly: true}},
		{"missing directory", sqlite.Config{Path: filepath.Join(t.TempDir(), "no", "such", "dir", "x.db")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := sqlite.Open(t.Context(), tc.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			t.Log(err)
		})
	}
}

// rawDB opens the file with the driver directly, as another program would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestCorruptFile(t *testing.T) {
	t.Run("garbage", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "garbage.db")
		garbage := []byte("this is not an SQLite database, just some text that is long enough to hold a header.......")
		for len(garbage) < 8192 {
			garbage = append(garbage, garbage...)
		}
		if err := os.WriteFile(path, garbage, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
		if !errors.Is(err, sqlite.ErrCorrupt) {
			t.Fatalf("Open of a garbage file: %v, want sqlite.ErrCorrupt", err)
		}
		t.Log(err)
		// The file is left as it was.
		got, _ := os.ReadFile(path)
		if string(got) != string(garbage) {
			t.Error("Open modified the garbage file")
		}
	})
	t.Run("damaged pages", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "damaged.db")
		ctx := t.Context()
		s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if _, err := s.Put(ctx, "key/"+strconv.Itoa(i), make([]byte, 3000), storage.NoVersion); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Closing the last connection checkpoints the WAL into the file.
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(data) < 64<<10 {
			t.Fatalf("database only %d bytes; WAL not checkpointed?", len(data))
		}
		// Overwrite every page after the first with noise.
		for i := 4096; i < len(data); i++ {
			data[i] = byte(i*7 + 13)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s2, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			if !errors.Is(err, sqlite.ErrCorrupt) {
				t.Fatalf("Open of a damaged file: %v, want sqlite.ErrCorrupt", err)
			}
			return
		}
		defer s2.Close()
		_, err = s2.List(ctx, "")
		if !errors.Is(err, sqlite.ErrCorrupt) {
			t.Fatalf("List on a damaged file: %v, want sqlite.ErrCorrupt", err)
		}
		t.Log(err)
	})
}

func TestLocked(t *testing.T) {
	t.Run("writer holds the lock", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mem.db")
		s := open(t, sqlite.Config{Path: path, BusyTimeout: 50 * time.Millisecond})
		ctx := t.Context()
		v, err := s.Put(ctx, "k", []byte("before"), storage.NoVersion)
		if err != nil {
			t.Fatal(err)
		}
		other := rawDB(t, path)
		tx, err := other.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Take the write lock and keep it, as a stuck process would.
		if _, err := tx.Exec(`UPDATE memlayer_kv SET value = value WHERE key = 'none'`); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = s.Put(ctx, "k", []byte("after"), v)
		if !errors.Is(err, sqlite.ErrLocked) {
			t.Fatalf("Put under a foreign lock: %v, want sqlite.ErrLocked", err)
		}
		t.Log(err, time.Since(start))
		if err := s.Delete(ctx, "k", storage.AnyVersion); !errors.Is(err, sqlite.ErrLocked) {
			t.Fatalf("Delete under a foreign lock: %v, want sqlite.ErrLocked", err)
		}
		// Readers are not blocked in WAL mode, and nothing changed.
		it, err := s.Get(ctx, "k")
		if err != nil || string(it.Value) != "before" || it.Version != v {
			t.Fatalf("Get under a foreign lock = %q v%d, %v", it.Value, it.Version, err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		// Once released, the same write succeeds.
		if _, err := s.Put(ctx, "k", []byte("after"), v); err != nil {
			t.Fatalf("Put after the lock was released: %v", err)
		}
	})
	t.Run("context ends the wait", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mem.db")
		s := open(t, sqlite.Config{Path: path, BusyTimeout: 10 * time.Second})
		ctx := t.Context()
		if _, err := s.Put(ctx, "k", []byte("before"), storage.NoVersion); err != nil {
			t.Fatal(err)
		}
		tx, err := rawDB(t, path).BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`UPDATE memlayer_kv SET value = value WHERE key = 'none'`); err != nil {
			t.Fatal(err)
		}
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err = s.Put(tctx, "k", []byte("after"), storage.AnyVersion)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Put under a foreign lock with a 100ms deadline: %v, want context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Put returned after %v, want about 100ms: the deadline was not honoured", d)
		}
		t.Log(err)
	})
	t.Run("exclusive lock at open", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "mem.db")
		other := rawDB(t, path)
		if _, err := other.Exec(`PRAGMA journal_mode=DELETE`); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Exec(`CREATE TABLE t (x)`); err != nil {
			t.Fatal(err)
		}
		conn, err := other.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(t.Context(), `BEGIN EXCLUSIVE`); err != nil {
			t.Fatal(err)
		}
		defer conn.ExecContext(context.Background(), `ROLLBACK`)
		_, err = sqlite.Open(t.Context(), sqlite.Config{Path: path, BusyTimeout: 50 * time.Millisecond})
		if !errors.Is(err, sqlite.ErrLocked) {
			t.Fatalf("Open of an exclusively locked file: %v, want sqlite.ErrLocked", err)
		}
		t.Log(err)
	})
}

func TestReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mem.db")
	ctx := t.Context()
	rw := open(t, sqlite.Config{Path: path})
	v, err := rw.Put(ctx, "k", []byte("stored"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("config", func(t *testing.T) {
		ro := open(t, sqlite.Config{Path: path, ReadOnly: true})
		checkReadOnly(t, ro, v)
	})
	t.Run("file mode", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root: file permissions do not stop writes; the ReadOnly config is tested instead")
		}
		if err := rw.Close(); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(path)
		if err := os.Chmod(path, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755); os.Chmod(path, 0o644) })
		s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			if !errors.Is(err, sqlite.ErrReadOnly) {
				t.Fatalf("Open of a read-only file: %v, want sqlite.ErrReadOnly or success", err)
			}
			t.Log(err)
			return
		}
		defer s.Close()
		checkReadOnly(t, s, v)
	})
	t.Run("after the writer closed", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "closed.db")
		w, err := sqlite.Open(ctx, sqlite.Config{Path: p})
		if err != nil {
			t.Fatal(err)
		}
		v, err := w.Put(ctx, "k", []byte("stored"), storage.NoVersion)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		checkReadOnly(t, open(t, sqlite.Config{Path: p, ReadOnly: true}), v)
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "absent.db"), ReadOnly: true})
		if err == nil {
			t.Fatal("read-only Open of a missing file succeeded")
		}
		t.Log(err)
	})
	t.Run("not a store", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "other.db")
		db := rawDB(t, p)
		if _, err := db.Exec(`CREATE TABLE other (x)`); err != nil {
			t.Fatal(err)
		}
		_, err := sqlite.Open(ctx, sqlite.Config{Path: p, ReadOnly: true})
		if err == nil {
			t.Fatal("read-only Open of a database without the table succeeded")
		}
		t.Log(err)
	})
}

func checkReadOnly(t *testing.T, s *sqlite.Store, v int64) {
	t.Helper()
	ctx := t.Context()
	it, err := s.Get(ctx, "k")
	if err != nil || string(it.Value) != "stored" {
		t.Fatalf("Get from read-only store: %q, %v", it.Value, err)
	}
	if _, err := s.Put(ctx, "k", []byte("changed"), v); !errors.Is(err, sqlite.ErrReadOnly) {
		t.Errorf("Put on a read-only store: %v, want sqlite.ErrReadOnly", err)
	} else {
		t.Log(err)
	}
	if _, err := s.Put(ctx, "new", []byte("x"), storage.NoVersion); !errors.Is(err, sqlite.ErrReadOnly) {
		t.Errorf("Put(new) on a read-only store: %v, want sqlite.ErrReadOnly", err)
	}
	if err := s.Delete(ctx, "k", storage.AnyVersion); !errors.Is(err, sqlite.ErrReadOnly) {
		t.Errorf("Delete on a read-only store: %v, want sqlite.ErrReadOnly", err)
	}
	it, err = s.Get(ctx, "k")
	if err != nil || string(it.Value) != "stored" || it.Version != v {
		t.Fatalf("value changed through a read-only store: %q v%d, %v", it.Value, it.Version, err)
	}
}

// TestTwoHandlesNoLostUpdate shares one file between two Stores, each with
// its own connection pool and writer slot, as two processes would.
func TestTwoHandlesNoLostUpdate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := open(t, sqlite.Config{Path: path})
	b := open(t, sqlite.Config{Path: path})
	ctx := t.Context()
	if _, err := a.Put(ctx, "counter", []byte("0"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	const perWorker, workers = 25, 8
	var wg sync.WaitGroup
	for i := range workers {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			for range perWorker {
				if err := increment(ctx, s, "counter"); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, s := range []*sqlite.Store{a, b} {
		it, err := s.Get(ctx, "counter")
		if err != nil {
			t.Fatal(err)
		}
		if want := strconv.Itoa(perWorker * workers); string(it.Value) != want {
			t.Fatalf("counter = %s, want %s", it.Value, want)
		}
	}
}

func increment(ctx context.Context, s storage.Store, key string) error {
	for {
		it, err := s.Get(ctx, key)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(string(it.Value))
		if err != nil {
			return err
		}
		_, err = s.Put(ctx, key, []byte(strconv.Itoa(n+1)), it.Version)
		if err == nil {
			return nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
}

// TestMultiProcessNoLostUpdate runs increments from several OS processes
// (this test binary, re-executed) on one file.
func TestMultiProcessNoLostUpdate(t *testing.T) {
	if path := os.Getenv("MEMLAYER_SQLITE_CHILD_PATH"); path != "" {
		n, _ := strconv.Atoi(os.Getenv("MEMLAYER_SQLITE_CHILD_N"))
		s, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for range n {
			if err := increment(context.Background(), s, "counter"); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	if testing.Short() {
		t.Skip("short mode")
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	s := open(t, sqlite.Config{Path: path})
	if _, err := s.Put(t.Context(), "counter", []byte("0"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	const procs, each = 3, 40
	var wg sync.WaitGroup
	for range procs {
		wg.Go(func() {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMultiProcessNoLostUpdate$", "-test.count=1")
			cmd.Env = append(os.Environ(), "MEMLAYER_SQLITE_CHILD_PATH="+path, "MEMLAYER_SQLITE_CHILD_N="+strconv.Itoa(each))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("child process: %v\n%s", err, out)
			}
		})
	}
	wg.Wait()
	it, err := s.Get(t.Context(), "counter")
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(procs * each); string(it.Value) != want {
		t.Fatalf("counter = %s after %d processes × %d increments, want %s", it.Value, procs, each, want)
	}
}
