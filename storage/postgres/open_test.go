package postgres_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
)

func TestOpenRefusesBadConfig(t *testing.T) {
	for _, cfg := range []postgres.Config{
		{},
		{URL: "postgres://x", Pool: &pgxpool.Pool{}},
		{URL: "postgres://x", Prefix: `a"; DROP TABLE x; --`},
		{URL: "postgres://x", Prefix: "Upper"},
		{URL: "postgres://x", Prefix: "9lead"},
		{URL: "postgres://x", Prefix: strings.Repeat("a", 33)},
		{URL: "postgres://x", Schema: "a.b"},
		{URL: "::not a url"},
	} {
		if s, err := postgres.Open(context.Background(), cfg); err == nil {
			s.Close()
			t.Errorf("Open(%+v) succeeded, want an error", cfg)
		}
	}
}

func TestUnreachableServerIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := postgres.Open(ctx, postgres.Config{URL: "postgres://u@127.0.0.1:1/db?connect_timeout=2"})
	if !errors.Is(err, postgres.ErrUnavailable) {
		t.Fatalf("Open of a closed port = %v, want ErrUnavailable", err)
	}
}

// Two prefixes (and two schemas) in one database never see each other's
// keys; an application's pool is shared and left open by Close.
func TestPrefixesAndSchemasIsolate(t *testing.T) {
	url := pgtestURL(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	schema := newSchema(t, url)
	a := open(t, postgres.Config{Pool: pool, Schema: schema, Prefix: "a_"})
	b := open(t, postgres.Config{Pool: pool, Schema: schema, Prefix: "b_"})
	c := open(t, postgres.Config{Pool: pool, Schema: newSchema(t, url), Prefix: "a_"})
	key := storage.LayerKey("l", storage.ResourceScope("u"), "n")
	for i, s := range []*postgres.Store{a, b, c} {
		if _, err := s.Put(ctx, key, []byte{byte(i)}, storage.NoVersion); err != nil {
			t.Fatalf("store %d: %v", i, err)
		}
	}
	for i, s := range []*postgres.Store{a, b, c} {
		it, err := s.Get(ctx, key)
		if err != nil || it.Value[0] != byte(i) {
			t.Errorf("store %d reads %v, %v; want its own value", i, it.Value, err)
		}
	}
	a.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Errorf("the application's pool after Close: %v", err)
	}
	if _, err := a.Get(ctx, key); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Get after Close = %v, want ErrClosed", err)
	}
}

// List is a range scan of the primary key: the plan reads an index and
// no LIKE; and prefixes cut inside a UTF-8 sequence or holding NUL work.
func TestListIsARangeScan(t *testing.T) {
	url := pgtestURL(t)
	ctx := context.Background()
	s := open(t, postgres.Config{URL: url, Schema: newSchema(t, url)})
	for _, k := range []string{"a/é1", "a/é2", "a/z", "a/\U0010FFFF", "a/\U0010FFFFx", "b"} {
		if _, err := s.Put(ctx, k, nil, storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	for prefix, want := range map[string][]string{
		"a/é":          {"a/é1", "a/é2"},
		"a/\xc3":       {"a/é1", "a/é2"},
		"a/\U0010FFFF": {"a/\U0010FFFF", "a/\U0010FFFFx"},
		"a/\x00":       {},
		"a/\xff":       {},
		"a":            {"a/z", "a/é1", "a/é2", "a/\U0010FFFF", "a/\U0010FFFFx"},
	} {
		got, err := s.List(ctx, prefix)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, %v; want %q", prefix, got, err, want)
		}
	}
	// Enough rows that the planner prefers the index.
	b := &pgx.Batch{}
	for i := range 2000 {
		b.Queue(`INSERT INTO `+pgx.Identifier{s.Schema(), "memlayer_kv"}.Sanitize()+` VALUES ($1, '', 1)`, "filler/"+strings.Repeat("x", i%50)+string(rune('a'+i%26))+time.Duration(i).String())
	}
	if err := s.Pool().SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE `+pgx.Identifier{s.Schema(), "memlayer_kv"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	rows, err := s.Pool().Query(ctx, `EXPLAIN SELECT key FROM `+pgx.Identifier{s.Schema(), "memlayer_kv"}.Sanitize()+` WHERE key >= $1 AND key < $2 ORDER BY key`, "a/", "a0")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		rows.Scan(&line)
		plan.WriteString(line + "\n")
	}
	if !strings.Contains(plan.String(), "Index") || strings.Contains(plan.String(), "~~") {
		t.Errorf("plan of a prefix listing is not an index range scan:\n%s", plan.String())
	}
}

// Tables of schema version 1 (records only) are migrated: their records
// survive and search works; tables of a newer version are refused.
func TestMigration(t *testing.T) {
	url := pgtestURL(t)
	ctx := context.Background()
	schema := newSchema(t, url)
	s := open(t, postgres.Config{URL: url, Schema: schema})
	key := "layers/x/y/z"
	v, err := s.Put(ctx, key, []byte("kept"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	q := func(sql string) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	meta := pgx.Identifier{schema, "memlayer_meta"}.Sanitize()
	for _, t := range []string{"memlayer_docs", "memlayer_postings", "memlayer_doc_stats"} {
		q(`DROP TABLE ` + pgx.Identifier{schema, t}.Sanitize())
	}
	q(`UPDATE ` + meta + ` SET value = 1`)
	m := open(t, postgres.Config{URL: url, Schema: schema})
	if it, err := m.Get(ctx, key); err != nil || string(it.Value) != "kept" || it.Version != v {
		t.Errorf("after migration Get = %+v, %v", it, err)
	}
	if err := m.Index(ctx, "c", storage.Document{ID: "d", Text: "migrated words"}); err != nil {
		t.Fatal(err)
	}
	if hits, err := m.Search(ctx, "c", storage.Query{Text: "word"}); err != nil || len(hits) != 1 {
		t.Errorf("search after migration = %v, %v", hits, err)
	}
	q(`UPDATE ` + meta + ` SET value = 99`)
	if _, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: schema}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of version-99 tables = %v, want a refusal naming a newer version", err)
	}
}

// Many processes' first Opens at once: one creates, none fails.
func TestConcurrentFirstOpen(t *testing.T) {
	url := pgtestURL(t)
	schema := newSchema(t, url)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			s, err := postgres.Open(context.Background(), postgres.Config{URL: url, Schema: schema})
			if err == nil {
				s.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// Purge leaves no dead row version of a deleted value in the table file.
func TestPurge(t *testing.T) {
	url := pgtestURL(t)
	ctx := context.Background()
	s := open(t, postgres.Config{URL: url, Schema: newSchema(t, url)})
	secret := []byte("SECRET-" + strings.Repeat("z", 100))
	if _, err := s.Put(ctx, "k", secret, storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "k", storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := s.Index(ctx, "c", storage.Document{ID: "d", Text: "SECRETWORD"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Drop(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	dead := func() int64 {
		var n int64
		err := s.Pool().QueryRow(ctx, `SELECT coalesce(sum(n_dead_tup), 0)::bigint FROM pg_stat_user_tables WHERE schemaname = $1`, s.Schema()).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := s.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	var size int64
	if err := s.Pool().QueryRow(ctx, `SELECT pg_relation_size($1::regclass)`, s.Schema()+".memlayer_kv").Scan(&size); err != nil {
		t.Fatal(err)
	}
	if size != 0 {
		t.Errorf("kv table holds %d bytes after deleting its only row and Purge, want 0 (dead rows %d)", size, dead())
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Purge(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Purge with a canceled context = %v", err)
	}
}
