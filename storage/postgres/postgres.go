package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/memlayer/memlayer/storage"
)

// ErrOutcomeUnknown means the connection broke after a write was sent and before the server answered: it may or may not have
// been applied. It always comes with [storage.ErrNotDurable], whose rule
// holds: never report such a write as applied on the strength of reading
// it back. A write that fails with any other error was not applied.
var ErrOutcomeUnknown = errors.New("storage/postgres: outcome of the write unknown")

// ErrUnavailable means the server could not be reached or refused the
// connection. Nothing was written.
var ErrUnavailable = errors.New("storage/postgres: server unavailable")

// DefaultPrefix is the table prefix used when [Config.Prefix] is empty.
const DefaultPrefix = "memlayer_"

// SchemaVersion is the layout of the tables this package writes. A store
// opened on tables of an earlier layout migrates them; tables of a later
// layout are refused.
const SchemaVersion = 3

// Config says which database to use and how. Exactly one of URL and Pool
// must be set.
type Config struct {
	// URL is a postgres:// URL or key=value connection string, as
	// pgxpool.ParseConfig reads it. The store owns the pool it opens.
	URL string
	// Pool is an existing pool of the application's, with its own
	// tracing and TLS settings. The store does not close it.
	Pool *pgxpool.Pool
	// Schema holds the tables: "" is the connection's current schema
	// (public by default). It is created if missing.
	Schema string
	// Prefix starts every table name: DefaultPrefix when empty. It is 1
	// to 32 bytes of a-z, 0-9 and '_', starting with a letter or '_'.
	Prefix string
	// AsyncCommit trades durability for speed, as SQLite's default
	// (SyncNormal) does: the store's sessions run with
	// synchronous_commit=off, so a commit is acknowledged before the
	// server flushes it to its write-ahead log. If the server crashes
	// (not the application), writes acknowledged in roughly the last
	// 3 x wal_writer_delay (600 ms by default) are lost; the database
	// stays consistent, and a batch is still all or nothing. The default,
	// false, acknowledges a write only once it is on disk. It applies to
	// the pool the store opens from URL; with Pool, set synchronous_commit
	// in the pool's ConnConfig.RuntimeParams instead.
	AsyncCommit bool
}

// Store is a [storage.Store] and [storage.Searcher] kept in PostgreSQL
// tables. It is safe for concurrent use by goroutines and by processes
// sharing the database. Create it with [Open]; release it with
// [Store.Close].
type Store struct {
	pool    *pgxpool.Pool
	ownPool bool
	closed  atomic.Bool

	// quoted, schema-qualified table names
	kv, docs, postings, stats, meta string
	schema, prefix                  string
}

// identChars are the bytes of a schema's name or a prefix.
const identChars = "abcdefghijklmnopqrstuvwxyz0123456789_"

// validIdent reports whether s is 1 to maxLen bytes of identChars, not
// starting with a digit.
func validIdent(s string, maxLen int) bool {
	return s != "" && len(s) <= maxLen && strings.Trim(s, identChars) == "" && !strings.ContainsAny(s[:1], "0123456789")
}

// Open connects to the database, creates the schema and tables when they
// are missing (or migrates tables of an earlier [SchemaVersion]), and
// returns the store. Concurrent Opens of the same tables, from any
// process, are safe: one creates, the others wait for it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	s, err := newStore(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.connect(ctx, cfg); err != nil {
		return nil, err
	}
	s.kv, s.docs, s.postings, s.stats, s.meta = s.table("kv"), s.table("docs"), s.table("postings"), s.table("doc_stats"), s.table("meta")
	if err := s.init(ctx); err != nil {
		if s.ownPool {
			s.pool.Close()
		}
		return nil, s.wrap(ctx, "open", "", err, false)
	}
	return s, nil
}

// newStore checks cfg's names and returns a store of them, not yet
// connected.
func newStore(cfg Config) (*Store, error) {
	prefix := cmp.Or(cfg.Prefix, DefaultPrefix)
	if !validIdent(prefix, 32) {
		return nil, fmt.Errorf("storage/postgres: Prefix %q is not 1-32 bytes of a-z, 0-9, '_' starting with a letter or '_'", cfg.Prefix)
	}
	if cfg.Schema != "" && !validIdent(cfg.Schema, 63) {
		return nil, fmt.Errorf("storage/postgres: Schema %q is not 1-63 bytes of a-z, 0-9, '_' starting with a letter or '_'", cfg.Schema)
	}
	return &Store{schema: cfg.Schema, prefix: prefix}, nil
}

// connect takes cfg's pool, or opens one from its URL.
func (s *Store) connect(ctx context.Context, cfg Config) error {
	if cfg.Pool != nil {
		return s.usePool(cfg)
	}
	if cfg.URL == "" {
		return errors.New("storage/postgres: Config needs a URL or a Pool")
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return fmt.Errorf("storage/postgres: parse URL: %w", err)
	}
	if cfg.AsyncCommit {
		pc.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return fmt.Errorf("storage/postgres: open: %w", err)
	}
	s.ownPool = true
	return nil
}

// usePool takes cfg's Pool, which the store does not own.
func (s *Store) usePool(cfg Config) error {
	switch {
	case cfg.URL != "":
		return errors.New("storage/postgres: Config has both URL and Pool")
	case cfg.AsyncCommit:
		return errors.New("storage/postgres: AsyncCommit applies to a pool the store opens: set synchronous_commit in the Pool's ConnConfig.RuntimeParams")
	}
	s.pool = cfg.Pool
	return nil
}

// table returns the quoted name of one of the store's tables.
func (s *Store) table(name string) string {
	if s.schema == "" {
		return pgx.Identifier{s.prefix + name}.Sanitize()
	}
	return pgx.Identifier{s.schema, s.prefix + name}.Sanitize()
}

// Schema returns the schema the tables are in ("" for the current one).
func (s *Store) Schema() string { return s.schema }

// Prefix returns the prefix of the store's table names.
func (s *Store) Prefix() string { return s.prefix }

// Pool returns the pool the store uses.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// migration takes the tables from one version to the next: its
// statements, then fill, if any, in the transaction that records the new
// version.
type migration struct {
	stmts []string
	fill  func(context.Context, pgx.Tx) error
}

// migrations[i] takes the tables from version i to i+1.
func (s *Store) migrations() []migration {
	return []migration{
		{stmts: []string{ // 1: the key-value table. Keys sort by byte
			// (COLLATE "C"), so a prefix is one range of the primary key.
			`CREATE TABLE IF NOT EXISTS ` + s.kv + ` (
				key     text COLLATE "C" PRIMARY KEY,
				value   bytea  NOT NULL,
				version bigint NOT NULL
			)`,
		}},
		{stmts: []string{ // 2: the search index, of tsvectors.
			`CREATE TABLE IF NOT EXISTS ` + s.docs + ` (
				seq        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
				collection text COLLATE "C" NOT NULL,
				id         text NOT NULL,
				text       text NOT NULL,
				fields     jsonb NOT NULL,
				vec        real[],
				tsv        tsvector NOT NULL,
				UNIQUE (collection, id)
			)`,
			`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{s.prefix + "docs_recent"}.Sanitize() + ` ON ` + s.docs + ` (collection, seq)`,
			`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{s.prefix + "docs_tsv"}.Sanitize() + ` ON ` + s.docs + ` USING gin (tsv)`,
		}},
		{stmts: []string{ // 3: postings and counts replace the tsvectors.
			`DROP INDEX IF EXISTS ` + s.table("docs_tsv"),
			`ALTER TABLE ` + s.docs + ` DROP COLUMN IF EXISTS tsv,
				ADD COLUMN terms  text[]  NOT NULL DEFAULT '{}',
				ADD COLUMN length integer NOT NULL DEFAULT 0,
				ADD COLUMN ord    bigint  NOT NULL DEFAULT 0`,
			`CREATE TABLE ` + s.postings + ` (
				collection text COLLATE "C" NOT NULL,
				term       text COLLATE "C" NOT NULL,
				seq        bigint NOT NULL,
				PRIMARY KEY (collection, term, seq)
			)`,
			`CREATE TABLE ` + s.stats + ` (
				collection text COLLATE "C" PRIMARY KEY,
				docs       bigint NOT NULL,
				length     bigint NOT NULL,
				next       bigint NOT NULL
			)`,
		}, fill: s.postEarlier},
	}
}

// init creates or migrates the tables, in one transaction under an
// advisory lock of their schema and prefix, so that one Open at a time
// does it and the others then find the tables current.
func (s *Store) init(ctx context.Context) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		have, err := s.lockVersion(ctx, tx)
		if err != nil {
			return err
		}
		if have > SchemaVersion {
			return fmt.Errorf("tables %s are of schema version %d, newer than this package's %d: upgrade memlayer", s.kv, have, SchemaVersion)
		}
		for _, m := range s.migrations()[have:] {
			if err := m.run(ctx, tx); err != nil {
				return err
			}
		}
		if have == SchemaVersion {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO `+s.meta+` (name, value) VALUES ('schema_version', $1)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value`, SchemaVersion)
		return err
	})
}

// lockVersion takes the advisory lock of the tables for tx, creates the
// schema and the meta table if missing, and returns the tables' version
// (0 when none is recorded).
func (s *Store) lockVersion(ctx context.Context, tx pgx.Tx) (int64, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "memlayer:"+s.schema+"."+s.prefix); err != nil {
		return 0, err
	}
	var ddl []string
	if s.schema != "" {
		ddl = append(ddl, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.schema}.Sanitize())
	}
	ddl = append(ddl, `CREATE TABLE IF NOT EXISTS `+s.meta+` (name text PRIMARY KEY, value bigint NOT NULL)`)
	if err := (migration{stmts: ddl}).run(ctx, tx); err != nil {
		return 0, err
	}
	var have int64
	err := tx.QueryRow(ctx, `SELECT value FROM `+s.meta+` WHERE name = 'schema_version'`).Scan(&have)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return have, err
}

// run applies m in tx.
func (m migration) run(ctx context.Context, tx pgx.Tx) error {
	for _, st := range m.stmts {
		if _, err := tx.Exec(ctx, st); err != nil {
			return err
		}
	}
	if m.fill == nil {
		return nil
	}
	return m.fill(ctx, tx)
}

// begin checks what every operation checks first.
func (s *Store) begin(ctx context.Context, op, key string, validate bool) error {
	if err := storage.CheckOp(ctx, s.closed.Load(), key, validate); err != nil {
		return fmt.Errorf("storage/postgres: %s %s: %w", op, storage.Quote(key), err)
	}
	return nil
}

// Get implements [storage.Store].
func (s *Store) Get(ctx context.Context, key string) (storage.Item, error) {
	if err := s.begin(ctx, "get", key, true); err != nil {
		return storage.Item{}, err
	}
	it := storage.Item{Key: key}
	err := s.pool.QueryRow(ctx, `SELECT value, version FROM `+s.kv+` WHERE key = $1`, key).Scan(&it.Value, &it.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Item{}, fmt.Errorf("storage/postgres: get %s: %w", storage.Quote(key), storage.ErrNotFound)
	}
	if err != nil {
		return storage.Item{}, s.wrap(ctx, "get", key, err, false)
	}
	if it.Value == nil {
		it.Value = []byte{}
	}
	return it, nil
}

// Put implements [storage.Store]. Each case is one SQL statement, so the
// version check and the write are atomic across connections and
// processes. A write whose answer is lost (the connection broke, ctx
// ended) fails with [ErrOutcomeUnknown].
func (s *Store) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	if err := s.begin(ctx, "put", key, true); err != nil {
		return 0, err
	}
	c, wctx, done, err := s.acquire(ctx, "put", key)
	if err != nil {
		return 0, err
	}
	defer done()
	if value == nil {
		value = []byte{}
	}
	switch {
	case ifVersion == storage.AnyVersion:
		var v int64
		err = c.QueryRow(wctx, `INSERT INTO `+s.kv+` AS t (key, value, version) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = t.version + 1 RETURNING version`,
			key, value, storage.FirstVersion()).Scan(&v)
		return s.putResult(ctx, key, v, err, false, "")
	case ifVersion == storage.NoVersion:
		first := storage.FirstVersion()
		tag, err := c.Exec(wctx, `INSERT INTO `+s.kv+` (key, value, version) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING`,
			key, value, first)
		return s.putResult(ctx, key, first, err, tag.RowsAffected() == 0, "key exists")
	case ifVersion > 0:
		tag, err := c.Exec(wctx, `UPDATE `+s.kv+` SET value = $1, version = version + 1 WHERE key = $2 AND version = $3`,
			value, key, ifVersion)
		return s.putResult(ctx, key, ifVersion+1, err, tag.RowsAffected() == 0, fmt.Sprintf("version %d is not current", ifVersion))
	}
	return 0, fmt.Errorf("storage/postgres: put %s: invalid version %d: %w", storage.Quote(key), ifVersion, storage.ErrConflict)
}

// putResult returns the version v a put of key wrote, or its error: err
// when its statement failed, or else, when its check failed (conflict),
// a conflict saying why.
func (s *Store) putResult(ctx context.Context, key string, v int64, err error, conflict bool, why string) (int64, error) {
	if err != nil {
		return 0, s.wrap(ctx, "put", key, err, true)
	}
	if conflict {
		return 0, fmt.Errorf("storage/postgres: put %s: %s: %w", storage.Quote(key), why, storage.ErrConflict)
	}
	return v, nil
}

// Delete implements [storage.Store]. A conditional delete is one
// statement that also reports the version it found.
func (s *Store) Delete(ctx context.Context, key string, ifVersion int64) error {
	if err := s.begin(ctx, "delete", key, true); err != nil {
		return err
	}
	c, wctx, done, err := s.acquire(ctx, "delete", key)
	if err != nil {
		return err
	}
	defer done()
	if ifVersion == storage.AnyVersion {
		if _, err := c.Exec(wctx, `DELETE FROM `+s.kv+` WHERE key = $1`, key); err != nil {
			return s.wrap(ctx, "delete", key, err, true)
		}
		return nil
	}
	// The deleted row if the version matched, else the current version.
	var deleted bool
	var cur int64
	err = c.QueryRow(wctx, `WITH d AS (DELETE FROM `+s.kv+` WHERE key = $1 AND version = $2 RETURNING version)
		SELECT true, version FROM d
		UNION ALL SELECT false, version FROM `+s.kv+` WHERE key = $1 AND NOT EXISTS (SELECT 1 FROM d)`,
		key, ifVersion).Scan(&deleted, &cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("storage/postgres: delete %s: %w", storage.Quote(key), storage.ErrNotFound)
	case err != nil:
		return s.wrap(ctx, "delete", key, err, true)
	case deleted:
		return nil
	}
	return fmt.Errorf("storage/postgres: delete %s: have version %d, want %d: %w", storage.Quote(key), cur, ifVersion, storage.ErrConflict)
}

// List implements [storage.Store]. It is one SELECT over the range of the
// primary key that holds the keys with prefix (keys sort by byte), so no
// character of prefix means anything special and no other key is read.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	return s.withPrefix(ctx, "list", s.kv, "key", prefix)
}

// withPrefix returns the values of column col of table that start with
// prefix, in byte order: one range of the column's index. A prefix cut
// inside a UTF-8 sequence is searched from its valid part and the
// values read are filtered.
func (s *Store) withPrefix(ctx context.Context, op, table, col, prefix string) ([]string, error) {
	if err := s.begin(ctx, op, prefix, false); err != nil {
		return nil, err
	}
	out := make([]string, 0)
	from, ok := validPart(prefix)
	if !ok || strings.IndexByte(prefix, 0) >= 0 {
		return out, nil // no valid UTF-8 value starts with prefix; none holds a NUL
	}
	query, args := `SELECT `+col+` FROM `+table+` WHERE `+col+` >= $1`, []any{from}
	if to, ok := successor(from); ok {
		query, args = query+` AND `+col+` < $2`, append(args, to)
	}
	rows, err := s.pool.Query(ctx, query+` ORDER BY `+col, args...)
	if err != nil {
		return nil, s.wrap(ctx, op, prefix, err, false)
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.wrap(ctx, op, prefix, err, false)
	}
	for _, v := range all {
		if strings.HasPrefix(v, prefix) {
			out = append(out, v)
		}
	}
	return out, nil
}

// validPart returns p without a final UTF-8 sequence it cuts short, and
// whether any valid UTF-8 string can start with p.
func validPart(p string) (string, bool) {
	if utf8.ValidString(p) {
		return p, true
	}
	for cut := len(p) - 1; cut >= 0 && len(p)-cut < utf8.UTFMax; cut-- {
		if !utf8.RuneStart(p[cut]) {
			continue
		}
		// p[cut:] must be the start of one sequence: p[cut:]+"\u0080"'s
		// continuation bytes complete it for some rune when it is.
		for _, tail := range []string{"\x80", "\x80\x80", "\x80\x80\x80", "\xbf", "\xbf\xbf", "\xbf\xbf\xbf"} {
			if utf8.ValidString(p[cut:]+tail) && utf8.ValidString(p[:cut]) {
				return p[:cut], true
			}
		}
		return "", false
	}
	return "", false
}

// successor returns the least valid UTF-8 string greater than every
// string starting with p, and false when there is none (p empty or all
// U+10FFFF).
func successor(p string) (string, bool) {
	r := []rune(p)
	for len(r) > 0 {
		last := r[len(r)-1] + 1
		if last == 0xD800 {
			last = 0xE000
		}
		if last <= utf8.MaxRune {
			r[len(r)-1] = last
			return string(r), true
		}
		r = r[:len(r)-1]
	}
	return "", false
}

// Purge removes deleted bytes from the tables: VACUUM FULL rewrites them,
// and their indexes, from their live rows, so that no deleted value or
// document stays in a dead row version or a free page. It locks the
// tables while it runs, in time proportional to their size. Write-ahead
// log segments and backups still hold old values until the server
// recycles them.
func (s *Store) Purge(ctx context.Context) error {
	if err := s.begin(ctx, "purge", "", false); err != nil {
		return err
	}
	for _, t := range []string{s.kv, s.docs, s.postings, s.stats} {
		if _, err := s.pool.Exec(ctx, `VACUUM (FULL) `+t); err != nil {
			return s.wrap(ctx, "purge", "", err, false)
		}
	}
	return nil
}

// Close closes the pool the store opened (not one passed as
// [Config.Pool]). Operations after Close fail with [storage.ErrClosed]; a
// second Close does nothing.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if s.ownPool {
		s.pool.Close()
	}
	return nil
}

// writeTimeout bounds a write that runs on after its caller's ctx ended.
const writeTimeout = 30 * time.Second

// acquire takes a connection for a write, waiting for one no longer than
// ctx allows. The write runs on the returned context, which ctx's
// cancellation does not reach (writeTimeout bounds it): a statement once
// sent runs to its end and is reported as it ended, so that a write
// reported failed has not landed, as on storage/sqlite. done releases
// the connection.
func (s *Store) acquire(ctx context.Context, op, key string) (c *pgxpool.Conn, wctx context.Context, done func(), err error) {
	c, err = s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, nil, s.wrap(ctx, op, key, err, false)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	return c, wctx, func() { cancel(); c.Release() }, nil
}

// wrap names the operation and adds the sentinels that say what happened:
// ctx's error when ctx ended, [ErrUnavailable] when no connection could
// be had, and for a write whose answer was lost, [ErrOutcomeUnknown] and
// [storage.ErrNotDurable].
func (s *Store) wrap(ctx context.Context, op, key string, err error, write bool) error {
	where := op
	if key != "" {
		where += " " + storage.Quote(key)
	}
	var sentinels []any
	if s.closed.Load() {
		sentinels = append(sentinels, storage.ErrClosed)
	}
	sentinels = append(sentinels, causes(err, write)...)
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		sentinels = append(sentinels, ctx.Err())
	}
	// ErrUnavailable and ErrOutcomeUnknown name the package already.
	prefix := "storage/postgres: "
	if len(sentinels) > 0 && (sentinels[0] == ErrUnavailable || sentinels[0] == ErrOutcomeUnknown) {
		prefix = ""
	}
	return fmt.Errorf(prefix+strings.Repeat("%w: ", len(sentinels))+"%s: %w", append(sentinels, where, err)...)
}

// causes returns the sentinels that say what a failure err of a write
// (or of a read) means for the caller.
func causes(err error, write bool) []any {
	var lost []any // a write whose outcome is unknown
	if write {
		lost = []any{ErrOutcomeUnknown, storage.ErrNotDurable}
	}
	var pgErr *pgconn.PgError
	switch {
	case isConnectError(err) || pgconn.SafeToRetry(err):
		// No connection: nothing was sent.
		return []any{ErrUnavailable}
	case !errors.As(err, &pgErr):
		// The answer was lost.
		return lost
	case pgErr.Code == "57014":
		// query_canceled: ctx ended and the driver asked the server to
		// cancel. The server may act on the request after the statement
		// committed and still report it canceled, so the outcome of a
		// write is not known.
		return lost
	case !serverGone(pgErr):
		// The server answered with an error: the statement was rolled
		// back.
		return nil
	}
	// The backend is going away (shut down, crashed, connection
	// failure): an autocommit write may have committed before it went.
	return append([]any{ErrUnavailable}, lost...)
}

// serverGone reports whether e says the backend is going away rather than
// that the statement failed: a FATAL or PANIC, a connection exception
// (class 08), an operator intervention other than a canceled statement
// (class 57), or an internal error (class XX).
func serverGone(e *pgconn.PgError) bool {
	return e.Severity == "FATAL" || e.Severity == "PANIC" || strings.HasPrefix(e.Code, "08") ||
		strings.HasPrefix(e.Code, "57") && e.Code != "57014" || strings.HasPrefix(e.Code, "XX")
}

// isConnectError reports whether err came from acquiring or opening a
// connection, before anything was sent.
func isConnectError(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var ne *net.OpError
	return errors.As(err, &ne) && ne.Op == "dial"
}

// Interface guards.
var (
	_ storage.Store   = (*Store)(nil)
	_ storage.Batcher = (*Store)(nil)
	_ storage.Purger  = (*Store)(nil)
)
