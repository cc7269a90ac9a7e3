package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/memlayer/memlayer/storage"
)

// Errors an operation may wrap besides those of package storage. Check them
// with [errors.Is].
var (
	// ErrLocked means another connection or process held the database
	// lock for longer than [Config.BusyTimeout]. Nothing was written;
	// the operation may be retried.
	ErrLocked = errors.New("storage/sqlite: database is locked")
	// ErrCorrupt means the file is not an SQLite database or its content
	// is damaged.
	ErrCorrupt = errors.New("storage/sqlite: file is corrupt or not a database")
	// ErrReadOnly means a write was refused because the store was opened
	// with [Config.ReadOnly] or the file cannot be written.
	ErrReadOnly = errors.New("storage/sqlite: database is read-only")
	// ErrFileReplaced means the store's path no longer names the file it
	// opened: the file was deleted, renamed or replaced (by a restored
	// backup, say) while the store was open. A write that fails with it
	// may have reached the old file, which no later Open will see, so it
	// must be treated as lost; every later write fails the same way.
	// Close the store and open the path again (or restore the file).
	ErrFileReplaced = errors.New("storage/sqlite: database file deleted or replaced while open")
)

// SyncMode chooses what a successful write survives; see the package
// documentation.
type SyncMode int

const (
	// SyncNormal (PRAGMA synchronous=NORMAL) makes a write survive the
	// crash of the process as soon as Put returns; an operating-system
	// crash or power loss may roll back the last writes, never tear one.
	SyncNormal SyncMode = iota
	// SyncFull (PRAGMA synchronous=FULL) also survives power loss: every
	// write waits for fsync, which costs a disk flush per Put.
	SyncFull
)

func (m SyncMode) pragma() (string, error) {
	switch m {
	case SyncNormal:
		return "NORMAL", nil
	case SyncFull:
		return "FULL", nil
	}
	return "", fmt.Errorf("storage/sqlite: unknown SyncMode %d", int(m))
}

// DefaultBusyTimeout is the lock wait used when [Config.BusyTimeout] is
// zero.
const DefaultBusyTimeout = 5 * time.Second

// Config says which database to open and how. The zero Config is valid: a
// private in-memory database.
type Config struct {
	// Path is the database file, created with its table if missing. Its
	// directory must exist. "" opens a private in-memory database that
	// lives until Close: not durable and not shared, useful in tests.
	Path string

	// BusyTimeout is how long an operation waits for a lock held by
	// another connection or process before it fails with [ErrLocked].
	// Zero means [DefaultBusyTimeout].
	BusyTimeout time.Duration

	// Sync is the durability of a write. The zero value is [SyncNormal].
	Sync SyncMode

	// ReadOnly opens an existing store without write access: Put and
	// Delete fail with [ErrReadOnly]. The file must exist and hold a
	// store.
	ReadOnly bool
}

// Store is a [storage.Store] kept in one SQLite file. It is safe for
// concurrent use by multiple goroutines, and by multiple processes opening
// the same file. Create it with [Open]; release it with [Store.Close].
type Store struct {
	db     *sql.DB
	path   string
	busy   time.Duration
	wsem   chan struct{} // one writer per Store at a time; across Stores SQLite's lock decides
	closed atomic.Bool
	file   os.FileInfo // the file opened at path, checked after each write; nil in memory
	// noIndex is set on a read-only file written before the postings
	// existed: it is searched once it has been opened to write.
	noIndex bool
	stmts   stmtCache // the search's statements

	get, insert, upsert, update, del, delVersion, version, list *sql.Stmt
}

const table = "memlayer_kv"

// sqliteBusy bounds the wait inside SQLite's busy handler; see Open.
const sqliteBusy = 20 * time.Millisecond

const schema = `CREATE TABLE IF NOT EXISTS ` + table + ` (
	key     TEXT    NOT NULL PRIMARY KEY,
	value   BLOB    NOT NULL,
	version INTEGER NOT NULL
)`

// Open opens (creating if needed) the store at cfg.Path. It switches the
// file to WAL mode, creates the table, and checks that the file is a
// usable database, so a corrupt, locked or unreadable file fails here with
// [ErrCorrupt], [ErrLocked] or a wrapped open error rather than on first
// use.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	syncMode, busy, err := cfg.settings()
	if err != nil {
		return nil, err
	}

	dsn := dataSource(cfg, busy, syncMode)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("storage/sqlite: open %q: %w", cfg.Path, err)
	}
	sizePool(db, cfg.Path)

	s := &Store{db: db, path: cfg.Path, busy: busy, wsem: make(chan struct{}, 1)}
	if err := s.retry(ctx, func() error { return s.init(ctx, cfg.ReadOnly) }); err != nil {
		db.Close()
		return nil, s.wrap(ctx, "open", "", err)
	}
	if err := s.noteFile(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// settings checks cfg and returns its synchronous pragma and its busy
// timeout, the default for zero.
func (cfg Config) settings() (syncMode string, busy time.Duration, err error) {
	syncMode, err = cfg.Sync.pragma()
	if err != nil {
		return "", 0, err
	}
	busy = cfg.BusyTimeout
	if busy == 0 {
		busy = DefaultBusyTimeout
	}
	if busy < 0 {
		return "", 0, fmt.Errorf("storage/sqlite: negative BusyTimeout %v", cfg.BusyTimeout)
	}
	if cfg.Path == "" && cfg.ReadOnly {
		return "", 0, errors.New("storage/sqlite: ReadOnly needs a Path")
	}
	return syncMode, busy, nil
}

// sizePool sizes db's connection pool for the file at path: one
// connection for an in-memory database, one per CPU (at least four) for
// a file. Connections are kept open.
func sizePool(db *sql.DB, path string) {
	if path == "" {
		// Each connection to :memory: is its own database: keep exactly one.
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
	} else {
		n := max(4, runtime.GOMAXPROCS(0))
		db.SetMaxOpenConns(n)
		db.SetMaxIdleConns(n)
	}
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
}

// noteFile remembers which file the store's path names, once init has
// opened it (creating it if needed), for [Store.checkFile].
func (s *Store) noteFile() error {
	if s.path == "" {
		return nil
	}
	fi, err := os.Stat(s.path)
	if err != nil {
		return fmt.Errorf("storage/sqlite: open %q: %w", s.path, err)
	}
	s.file = fi
	return nil
}

// dataSource returns the driver's data source name for cfg: the file
// (read-only, or in WAL mode) or an in-memory database, with the
// pragmas every connection runs.
func dataSource(cfg Config, busy time.Duration, syncMode string) string {
	q := url.Values{}
	// SQLite's own busy handler sleeps without watching the context, so
	// it only absorbs short waits; longer ones are retried by [Store.retry],
	// which gives up when ctx ends.
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(min(busy, sqliteBusy).Milliseconds(), 10)+")")
	q.Add("_pragma", "synchronous("+syncMode+")")
	// Deleted and overwritten content is zeroed in the file, not left in
	// free pages (see Store.Purge for the write-ahead log).
	q.Add("_pragma", "secure_delete(ON)")
	switch {
	case cfg.Path == "":
		return "file::memory:?" + q.Encode()
	case cfg.ReadOnly:
		q.Set("mode", "ro")
		q.Add("_pragma", "query_only(1)")
	default:
		q.Add("_pragma", "journal_mode(WAL)")
	}
	return "file:" + (&url.URL{Path: cfg.Path}).EscapedPath() + "?" + q.Encode()
}

// init checks (read-only) or creates the tables, then prepares the
// statements. It is retried while SQLite is busy.
func (s *Store) init(ctx context.Context, readOnly bool) error {
	setup := s.create
	if readOnly {
		setup = s.checkTables
	}
	if err := setup(ctx); err != nil {
		return err
	}
	return s.prepare(ctx)
}

// create creates the tables and indexes the store uses, where missing.
func (s *Store) create(ctx context.Context) error {
	for _, st := range append([]string{schema}, searchSchema...) {
		if _, err := s.db.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	if err := s.createFields(ctx); err != nil {
		return err
	}
	return s.createPostings(ctx)
}

// checkTables checks that a file opened read-only holds a store, and
// notes whether it holds a search index.
func (s *Store) checkTables(ctx context.Context) error {
	has, err := s.hasTable(ctx, table)
	if err != nil {
		return err
	}
	if !has {
		return errors.New("the file holds no memlayer store")
	}
	// A file of an earlier version, with no postings, is searched once
	// it has been opened to write.
	has, err = s.hasTable(ctx, postingsTable)
	s.noIndex = !has
	return err
}

// hasTable reports whether the database has a table of that name.
func (s *Store) hasTable(ctx context.Context, name string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '`+name+`'`).Scan(&n)
	return n > 0, err
}

// prepare prepares the statements an earlier attempt did not.
func (s *Store) prepare(ctx context.Context) error {
	prep := []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&s.get, `SELECT value, version FROM ` + table + ` WHERE key = ?`},
		{&s.insert, `INSERT INTO ` + table + ` (key, value, version) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING`},
		{&s.upsert, `INSERT INTO ` + table + ` (key, value, version) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = version + 1 RETURNING version`},
		{&s.update, `UPDATE ` + table + ` SET value = ?, version = version + 1 WHERE key = ? AND version = ?`},
		{&s.del, `DELETE FROM ` + table + ` WHERE key = ?`},
		{&s.delVersion, `DELETE FROM ` + table + ` WHERE key = ? AND version = ?`},
		{&s.version, `SELECT version FROM ` + table + ` WHERE key = ?`},
		{&s.list, `SELECT key FROM ` + table + ` WHERE key >= ? ORDER BY key`},
	}
	for _, p := range prep {
		if *p.stmt != nil {
			continue // prepared by an earlier attempt
		}
		st, err := s.db.PrepareContext(ctx, p.sql)
		if err != nil {
			return err
		}
		*p.stmt = st
	}
	return nil
}

// Path returns the file the store was opened on ("" for in-memory).
func (s *Store) Path() string { return s.path }

// begin checks what every operation checks first.
func (s *Store) begin(ctx context.Context, op, key string, validate bool) error {
	if s.closed.Load() {
		return fmt.Errorf("storage/sqlite: %s %s: %w", op, storage.Quote(key), storage.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage/sqlite: %s %s: %w", op, storage.Quote(key), err)
	}
	if validate {
		if err := storage.ValidateKey(key); err != nil {
			return fmt.Errorf("storage/sqlite: %s: %w", op, err)
		}
	}
	return nil
}

// lockWrite takes this Store's writer slot, giving up when ctx ends.
func (s *Store) lockWrite(ctx context.Context, op, key string) error {
	select {
	case s.wsem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("storage/sqlite: %s %s: %w", op, storage.Quote(key), ctx.Err())
	}
}

func (s *Store) unlockWrite() { <-s.wsem }

// checkFile fails with [ErrFileReplaced] when the path no longer names the
// file the store opened. It runs after every write, whatever its outcome,
// so that no write into a deleted or replaced file is acknowledged: one
// stat(2), about a microsecond against the tens of microseconds of the
// write.
func (s *Store) checkFile(op, key string) error {
	if s.file == nil {
		return nil
	}
	fi, err := os.Stat(s.path)
	if err == nil && os.SameFile(fi, s.file) {
		return nil
	}
	why := "now names another file"
	if err != nil {
		why = "cannot be read: " + err.Error()
	}
	return fmt.Errorf("%w: %s %s: %q %s; the write may have gone to the old file, which no later Open sees: close the store and open it again",
		ErrFileReplaced, op, storage.Quote(key), s.path, why)
}

// Get implements [storage.Store].
func (s *Store) Get(ctx context.Context, key string) (storage.Item, error) {
	if err := s.begin(ctx, "get", key, true); err != nil {
		return storage.Item{}, err
	}
	it := storage.Item{Key: key}
	err := s.retry(ctx, func() error { return s.get.QueryRowContext(ctx, key).Scan(&it.Value, &it.Version) })
	if errors.Is(err, sql.ErrNoRows) {
		return storage.Item{}, fmt.Errorf("storage/sqlite: get %s: %w", storage.Quote(key), storage.ErrNotFound)
	}
	if err != nil {
		return storage.Item{}, s.wrap(ctx, "get", key, err)
	}
	return it, nil
}

// Put implements [storage.Store]. Each case is one SQL statement, so the
// version check and the write are atomic across connections and
// processes.
func (s *Store) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	if value == nil {
		value = []byte{}
	}
	var v int64
	err := s.write(ctx, "put", key, func() (err error) {
		v, err = s.put(ctx, key, value, ifVersion)
		return err
	})
	if err != nil {
		return 0, err
	}
	return v, nil
}

// write checks what every write checks first, then runs fn holding this
// Store's writer slot, then checks the file, whatever fn did.
func (s *Store) write(ctx context.Context, op, key string, fn func() error) error {
	if err := s.begin(ctx, op, key, true); err != nil {
		return err
	}
	if err := s.lockWrite(ctx, op, key); err != nil {
		return err
	}
	defer s.unlockWrite()
	err := fn()
	if ferr := s.checkFile(op, key); ferr != nil {
		return ferr
	}
	return err
}

func (s *Store) put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	switch {
	case ifVersion == storage.AnyVersion:
		return s.putAny(ctx, key, value)
	case ifVersion == storage.NoVersion:
		return s.putNew(ctx, key, value)
	case ifVersion > 0:
		return s.putIf(ctx, key, value, ifVersion)
	}
	return 0, fmt.Errorf("storage/sqlite: put %s: invalid version %d: %w", storage.Quote(key), ifVersion, storage.ErrConflict)
}

// putAny writes key whatever its version, creating it if missing.
func (s *Store) putAny(ctx context.Context, key string, value []byte) (int64, error) {
	var v int64
	err := s.retry(ctx, func() error {
		return s.upsert.QueryRowContext(context.WithoutCancel(ctx), key, value, storage.FirstVersion()).Scan(&v)
	})
	if err != nil {
		return 0, s.wrap(ctx, "put", key, err)
	}
	return v, nil
}

// putNew writes key only if it is missing.
func (s *Store) putNew(ctx context.Context, key string, value []byte) (int64, error) {
	first := storage.FirstVersion()
	n, err := s.exec(ctx, s.insert, key, value, first)
	if err != nil {
		return 0, s.wrap(ctx, "put", key, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("storage/sqlite: put %s: key exists: %w", storage.Quote(key), storage.ErrConflict)
	}
	return first, nil
}

// putIf writes key only if its version is ifVersion.
func (s *Store) putIf(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	n, err := s.exec(ctx, s.update, value, key, ifVersion)
	if err != nil {
		return 0, s.wrap(ctx, "put", key, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("storage/sqlite: put %s: version %d is not current: %w", storage.Quote(key), ifVersion, storage.ErrConflict)
	}
	return ifVersion + 1, nil
}

// Delete implements [storage.Store].
func (s *Store) Delete(ctx context.Context, key string, ifVersion int64) error {
	return s.write(ctx, "delete", key, func() error { return s.delete(ctx, key, ifVersion) })
}

func (s *Store) delete(ctx context.Context, key string, ifVersion int64) error {
	if ifVersion == storage.AnyVersion {
		if _, err := s.exec(ctx, s.del, key); err != nil {
			return s.wrap(ctx, "delete", key, err)
		}
		return nil
	}
	n, err := s.exec(ctx, s.delVersion, key, ifVersion)
	if err != nil {
		return s.wrap(ctx, "delete", key, err)
	}
	if n == 1 {
		return nil
	}
	return s.notDeleted(ctx, key, ifVersion)
}

// notDeleted returns the error of a delete at ifVersion that deleted
// nothing: it says whether the key was missing or had moved on.
func (s *Store) notDeleted(ctx context.Context, key string, ifVersion int64) error {
	var cur int64
	err := s.retry(ctx, func() error { return s.version.QueryRowContext(ctx, key).Scan(&cur) })
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("storage/sqlite: delete %s: %w", storage.Quote(key), storage.ErrNotFound)
	case err != nil:
		return s.wrap(ctx, "delete", key, err)
	}
	return fmt.Errorf("storage/sqlite: delete %s: have version %d, want %d: %w", storage.Quote(key), cur, ifVersion, storage.ErrConflict)
}

// List implements [storage.Store]. It reads one snapshot of the database
// (a single SELECT), walking the primary-key index from prefix and
// stopping at the first key without it, so metacharacters in prefix mean
// nothing special.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if err := s.begin(ctx, "list", prefix, false); err != nil {
		return nil, err
	}
	var keys []string
	err := s.retry(ctx, func() error {
		var err error
		keys, err = s.listOnce(ctx, prefix)
		return err
	})
	if err != nil {
		return nil, s.wrap(ctx, "list", prefix, err)
	}
	return keys, nil
}

func (s *Store) listOnce(ctx context.Context, prefix string) ([]string, error) {
	rows, err := s.list.QueryContext(ctx, prefix)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	keys := make([]string, 0)
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, err
		}
		if !strings.HasPrefix(k, prefix) {
			break
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return keys, rows.Close()
}

// Purge removes deleted bytes from the files: it rebuilds the database
// from its live rows (VACUUM) and then checkpoints the write-ahead log
// into the file and truncates the log, which still holds earlier page
// images. The store is opened with secure_delete, which zeroes what a
// delete frees, yet bytes of a deleted value were found left in a page's
// unused space after some workloads (TestMemory81; agentloop's
// TestOperate30 with an earlier layout of the audit's records); the
// rebuild leaves none. It takes time in proportion to the database's
// size.
// A reader that holds an older snapshot (another connection of this
// store, or another process) keeps the log from being truncated; Purge
// waits for it, as a write waits for the lock, and fails with
// [ErrLocked] only if one still holds it when the store's BusyTimeout
// has passed or ctx ends. On an in-memory store it does nothing.
func (s *Store) Purge(ctx context.Context) error {
	if err := s.begin(ctx, "purge", "", false); err != nil {
		return err
	}
	if s.path == "" {
		return nil
	}
	if err := s.lockWrite(ctx, "purge", ""); err != nil {
		return err
	}
	defer s.unlockWrite()
	err := s.retry(ctx, func() error { return s.compact(ctx) })
	if err == nil {
		err = s.retry(ctx, func() error { return s.checkpoint(ctx) })
	}
	if err != nil {
		return s.wrap(ctx, "purge", "", err)
	}
	return nil
}

// compact rewrites the file without free pages.
func (s *Store) compact(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, "VACUUM")
	return err
}

// checkpoint copies the write-ahead log into the file and truncates it.
// A reader that keeps it from truncating is errCheckpointBlocked.
func (s *Store) checkpoint(ctx context.Context) error {
	var busy, logged, done int
	if err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logged, &done); err != nil {
		return err
	}
	if busy != 0 {
		return errCheckpointBlocked
	}
	return nil
}

// errCheckpointBlocked is the checkpoint's report that a reader kept it
// from truncating the log; [Store.retry] waits and tries again, as for
// SQLITE_BUSY.
var errCheckpointBlocked = fmt.Errorf("checkpoint of the write-ahead log blocked by a reader: %w", ErrLocked)

// Close closes the database. Operations after Close fail with
// [storage.ErrClosed]; a second Close does nothing.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stmts.close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("storage/sqlite: close %q: %w", s.path, err)
	}
	return nil
}

// exec runs a write statement, retrying while the database is locked,
// and returns the number of rows it changed.
//
// A statement, once started, runs to its end whatever ctx does: ctx
// bounds only the waits for the lock between attempts. The driver
// interrupts a statement when its context ends, and reports the
// context's error even when the statement had completed (its write
// committed); a write reported failed must have changed nothing, so
// writes run on a context without ctx's cancellation. A single-row
// statement takes microseconds, and SQLite's busy handler bounds its
// wait for the lock (see Open).
func (s *Store) exec(ctx context.Context, st *sql.Stmt, args ...any) (int64, error) {
	var n int64
	err := s.retry(ctx, func() error {
		res, err := st.ExecContext(context.WithoutCancel(ctx), args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// retry runs fn until it does not fail with SQLITE_BUSY, the store's
// BusyTimeout has passed, or ctx ends. Every fn is a single statement,
// which a busy error leaves undone, so running it again is safe.
func (s *Store) retry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(s.busy)
	wait := time.Millisecond
	for {
		if err := ctx.Err(); err != nil {
			return err // not started: a write has changed nothing
		}
		err := fn()
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(min(wait, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(wait*2, 25*time.Millisecond)
	}
}

// isBusy reports whether err is SQLite's busy or locked result, or a
// checkpoint a reader blocked, which the statement may retry.
func isBusy(err error) bool {
	return errors.Is(err, errCheckpointBlocked) || codeSentinels[resultCode(err)] == ErrLocked
}

// codeSentinels are the sentinels of SQLite's primary result codes.
var codeSentinels = map[int]error{
	sqlite3.SQLITE_BUSY:     ErrLocked,
	sqlite3.SQLITE_LOCKED:   ErrLocked,
	sqlite3.SQLITE_CORRUPT:  ErrCorrupt,
	sqlite3.SQLITE_NOTADB:   ErrCorrupt,
	sqlite3.SQLITE_READONLY: ErrReadOnly,
}

// resultCode returns the primary result code of the SQLite error in
// err's chain, or SQLITE_OK when it has none.
func resultCode(err error) int {
	var se *msqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return sqlite3.SQLITE_OK
}

// wrap names the operation and adds the sentinel matching an SQLite
// result code, and ctx's error when ctx ended (SQLite reports an
// interrupted statement as SQLITE_INTERRUPT).
func (s *Store) wrap(ctx context.Context, op, key string, err error) error {
	where := s.where(op, key)
	var sentinels []any
	if s.closed.Load() {
		sentinels = append(sentinels, storage.ErrClosed)
	}
	if sentinel := codeSentinels[resultCode(err)]; sentinel != nil {
		sentinels = append(sentinels, sentinel)
	}
	prefix := ""
	if len(sentinels) == 0 {
		prefix = "storage/sqlite: "
	}
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		sentinels = append(sentinels, ctx.Err())
	}
	// "storage/sqlite: database is locked: put "k": database is locked (5)"
	// "storage/sqlite: put "k": context canceled: interrupted (9)"
	return fmt.Errorf(prefix+strings.Repeat("%w: ", len(sentinels))+"%s: %w", append(sentinels, where, err)...)
}

// where names the operation op and what it acted on: the key, or else
// the file.
func (s *Store) where(op, key string) string {
	switch {
	case key != "":
		return op + " " + storage.Quote(key)
	case s.path != "":
		return op + " " + strconv.Quote(s.path)
	}
	return op
}

// Interface guards.
var _ storage.Store = (*Store)(nil)
