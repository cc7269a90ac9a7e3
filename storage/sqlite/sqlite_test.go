package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, sqlite.Config{Path: filepath.Join(t.TempDir(), "mem.db")})
	})
}

func TestConformanceInMemory(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return open(t, sqlite.Config{})
	})
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
