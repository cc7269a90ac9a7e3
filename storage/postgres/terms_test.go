package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
)

// freshStore opens a store on tables of its own.
func freshStore(t *testing.T) *postgres.Store {
	t.Helper()
	url := pgtestURL(t)
	return open(t, postgres.Config{URL: url, Schema: newSchema(t, url)})
}

func hitIDs(t *testing.T, s *postgres.Store, c string, q storage.Query) []string {
	t.Helper()
	hits, err := s.Search(t.Context(), c, q)
	if err != nil {
		t.Fatalf("Search(%s, %q): %v", c, q.Text, err)
	}
	ids := make([]string, len(hits))
	for i := range hits {
		ids[i] = hits[i].ID
	}
	return ids
}

// commonTermStore holds, in u1's collection, an old document of a rare
// and a common term and 1,200 newer ones, half of which hold the common
// term; u2's documents of both terms are interleaved.
func commonTermStore(t *testing.T) (*postgres.Store, string) {
	t.Helper()
	s := freshStore(t)
	c := storage.IndexName("notes", storage.ResourceScope("u1"), "docs")
	other := storage.IndexName("notes", storage.ResourceScope("u2"), "docs")
	kind := map[string]string{"kind": "fact"}
	docs := []storage.Document{{ID: "old", Text: "zephyr alpha", Fields: kind}}
	for i := range 1200 {
		text := fmt.Sprintf("filler%d", i)
		if i%2 == 0 {
			text += " alpha"
		}
		docs = append(docs, storage.Document{ID: fmt.Sprintf("d%04d", i), Text: text, Fields: kind})
	}
	for b := range slices.Chunk(docs, 500) {
		if err := s.Index(t.Context(), c, b...); err != nil {
			t.Fatal(err)
		}
		if err := s.Index(t.Context(), other, storage.Document{ID: "x" + b[0].ID, Text: "alpha zephyr", Fields: kind}); err != nil {
			t.Fatal(err)
		}
	}
	return s, c
}

// TestCommonTermsReadInPart: a term in more documents than a query reads
// of it weighs less than a rare one, the rare term's old document is
// still found first (with and without a filter), and the estimate of
// the common term's documents is near the truth.
func TestCommonTermsReadInPart(t *testing.T) {
	s, c := commonTermStore(t)
	for _, f := range []map[string]string{nil, {"kind": "fact"}} {
		got := hitIDs(t, s, c, storage.Query{Text: "alpha zephyr", K: 3, Filter: f})
		if len(got) == 0 || got[0] != "old" {
			t.Errorf("alpha zephyr, filter %v: got %q, want old first", f, got)
		}
	}
	if got := hitIDs(t, s, c, storage.Query{Text: "alpha zephyr", Filter: map[string]string{"kind": "other"}}); len(got) != 0 {
		t.Errorf("filter no document passes: got %q", got)
	}
	read, df, err := s.EstimateDF(t.Context(), c, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if read != postgres.PostingsPerTerm {
		t.Fatalf("read %d postings of alpha, want %d", read, postgres.PostingsPerTerm)
	}
	if df < 540 || df > 660 {
		t.Errorf("alpha is in 601 documents; estimated %d", df)
	}
	if read, df, err := s.EstimateDF(t.Context(), c, "zephyr"); err != nil || read != 1 || df != 1 {
		t.Errorf("zephyr: read %d, df %d, %v; want 1, 1 (read whole, exact)", read, df, err)
	}
}

// TestQueryReadsBoundedPostings: the postings statement of a query of a
// common term reads at most PostingsPerTerm rows of the postings (with a
// filter, as many again to check it), not the term's 601, as the
// server's own count of the rows its plan read says; with a filter no
// document passes, it checks no more postings than its cap.
func TestQueryReadsBoundedPostings(t *testing.T) {
	s, c := commonTermStore(t)
	ctx := t.Context()
	if _, err := s.Pool().Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	per := postgres.PostingsPerTerm
	for _, tc := range []struct {
		filter map[string]string
		max    int
	}{
		{nil, per},
		{map[string]string{"kind": "fact"}, 2 * per},
		// No document passes: at most the 300 newest postings checked.
		{map[string]string{"kind": "other"}, 300},
	} {
		args := []any{c, []string{"alpha"}, per}
		if tc.filter != nil {
			args = append(args, postgres.FieldTokens(tc.filter), 300)
		}
		var plan []byte
		if err := s.Pool().QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+s.PostingsSQL(tc.filter != nil), args...).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		var root []struct{ Plan planNode }
		if err := json.Unmarshal(plan, &root); err != nil {
			t.Fatal(err)
		}
		n := root[0].Plan.rowsOf(s.Prefix() + "postings")
		t.Logf("filter %v: %d rows of the postings read", tc.filter, n)
		if n == 0 || n > tc.max {
			t.Errorf("filter %v: the plan read %d rows of the postings, want 1 to %d:\n%s", tc.filter, n, tc.max, plan)
		}
	}
}

// planNode is a node of EXPLAIN's JSON output.
type planNode struct {
	Relation string     `json:"Relation Name"`
	Rows     float64    `json:"Actual Rows"`
	Loops    float64    `json:"Actual Loops"`
	Plans    []planNode `json:"Plans"`
}

// rowsOf returns the rows the scans of table under n returned.
func (n planNode) rowsOf(table string) int {
	total := 0
	if n.Relation == table {
		total += int(n.Rows * n.Loops)
	}
	for _, c := range n.Plans {
		total += c.rowsOf(table)
	}
	return total
}

// scopes are collections of users whose names nest ("a", "a/b") or are
// empty, as a thread of no resource has.
var scopes = []string{
	storage.IndexName("notes", storage.ResourceScope("a"), "docs"),
	storage.IndexName("notes", storage.ResourceScope("a/b"), "docs"),
	storage.IndexName("notes", storage.ResourceScope(""), "docs"),
	storage.IndexName("notes", storage.AnonymousScope(""), "docs"),
	storage.IndexName("notes", storage.ThreadScope(""), "docs"),
}

// count returns the rows of collection in table (named without the
// prefix) of the store's schema.
func count(t *testing.T, s *postgres.Store, table, collection string) int {
	t.Helper()
	var n int
	err := s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM `+pgx.Identifier{s.Schema(), s.Prefix() + table}.Sanitize()+` WHERE collection = $1`, collection).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEraseLeavesNoPostings: erasing a user drops its collections'
// documents, postings and counts and nothing of the others'; unindexing
// a collection's last document leaves no counts either; and replacing a
// document leaves one posting per term.
func TestEraseLeavesNoPostings(t *testing.T) {
	ctx := t.Context()
	s := freshStore(t)
	for _, c := range scopes {
		for range 2 { // the second time replaces
			if err := s.Index(ctx, c, storage.Document{ID: "1", Text: "shared note of " + c, Fields: map[string]string{"kind": "k"}},
				storage.Document{ID: "2", Text: "second note"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// "note", "shared", the scope's words and the field: one posting each
	// per document, none left of a replaced one.
	if n := count(t, s, "postings", scopes[0]); n == 0 || n > 12 {
		t.Errorf("postings of %s after a replacement: %d", scopes[0], n)
	}
	dropped, err := storage.DropIndexes(ctx, s, storage.LayerPrefix("notes", storage.ResourceScope("a")))
	if err != nil || !slices.Equal(dropped, scopes[:1]) {
		t.Fatalf("erase of a: dropped %q, %v", dropped, err)
	}
	if err := s.Unindex(ctx, scopes[4], "1", "2"); err != nil {
		t.Fatal(err)
	}
	for i, c := range scopes {
		gone := i == 0 || i == 4
		for _, table := range []string{"docs", "postings", "doc_stats"} {
			if n := count(t, s, table, c); (n == 0) != gone {
				t.Errorf("%s: %d rows of %s; erased %v", c, n, table, gone)
			}
		}
		want := []string{"1", "2"}
		if gone {
			want = nil
		}
		got := hitIDs(t, s, c, storage.Query{Text: "note"})
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("%s: note: got %q, want %q", c, got, want)
		}
	}
	var total int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{s.Schema(), "memlayer_postings"}.Sanitize()+` p
		WHERE NOT EXISTS (SELECT 1 FROM `+pgx.Identifier{s.Schema(), "memlayer_docs"}.Sanitize()+` d WHERE d.seq = p.seq)`).Scan(&total); err != nil || total != 0 {
		t.Errorf("%d postings of no document, %v", total, err)
	}
}

// version2Layout is the search index of schema version 2: tsvectors
// and a GIN index.
func version2Layout(schema string) []string {
	docs := pgx.Identifier{schema, "memlayer_docs"}.Sanitize()
	return []string{
		`CREATE SCHEMA ` + pgx.Identifier{schema}.Sanitize(),
		`CREATE TABLE ` + pgx.Identifier{schema, "memlayer_meta"}.Sanitize() + ` (name text PRIMARY KEY, value bigint NOT NULL)`,
		`INSERT INTO ` + pgx.Identifier{schema, "memlayer_meta"}.Sanitize() + ` VALUES ('schema_version', 2)`,
		`CREATE TABLE ` + pgx.Identifier{schema, "memlayer_kv"}.Sanitize() + ` (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL, version bigint NOT NULL)`,
		`CREATE TABLE ` + docs + ` (seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, collection text COLLATE "C" NOT NULL,
			id text NOT NULL, text text NOT NULL, fields jsonb NOT NULL, vec real[], tsv tsvector NOT NULL, UNIQUE (collection, id))`,
		`CREATE INDEX memlayer_docs_recent ON ` + docs + ` (collection, seq)`,
		`CREATE INDEX memlayer_docs_tsv ON ` + docs + ` USING gin (tsv)`,
	}
}

// TestMigrationFromTsvectors: tables of schema version 2 get their
// postings and counts once, when two stores open them at once; each
// user's documents (nested and empty names sharing words) are found in
// its own collection only, filters work on them, and documents indexed
// after come after them.
func TestMigrationFromTsvectors(t *testing.T) {
	url := pgtestURL(t)
	ctx := context.Background()
	schema := newSchema(t, url)
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, st := range version2Layout(schema) {
		if _, err := c.Exec(ctx, st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	for i, col := range scopes[:3] {
		for j, text := range []string{"The pricing page", "Weather in Lisbon"} {
			if _, err := c.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "memlayer_docs"}.Sanitize()+` (collection, id, text, fields, tsv)
				VALUES ($1, $2, $3, $4, to_tsvector('english', $3))`, col, fmt.Sprintf("%d-%d", i, j), text, map[string]string{"kind": fmt.Sprint(j)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	stores := make([]*postgres.Store, 2)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: schema})
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { s.Close() })
			stores[i] = s
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	s := stores[0]
	for i, col := range scopes[:3] {
		if got, want := hitIDs(t, s, col, storage.Query{Text: "pricings"}), []string{fmt.Sprintf("%d-0", i)}; !slices.Equal(got, want) {
			t.Errorf("%s: pricing: got %q, want %q", col, got, want)
		}
		if got, want := hitIDs(t, s, col, storage.Query{Filter: map[string]string{"kind": "1"}}), []string{fmt.Sprintf("%d-1", i)}; !slices.Equal(got, want) {
			t.Errorf("%s: filter: got %q, want %q", col, got, want)
		}
	}
	if err := s.Index(ctx, scopes[0], storage.Document{ID: "new", Text: "Pricing for schools"}); err != nil {
		t.Fatal(err)
	}
	var docs, next int
	if err := s.Pool().QueryRow(ctx, `SELECT docs, next FROM `+pgx.Identifier{schema, "memlayer_doc_stats"}.Sanitize()+` WHERE collection = $1`, scopes[0]).Scan(&docs, &next); err != nil {
		t.Fatal(err)
	}
	if docs != 3 || next != 3 {
		t.Errorf("%s: docs %d, next %d, want 3, 3", scopes[0], docs, next)
	}
	var tsv int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'tsv'`, schema).Scan(&tsv); err != nil || tsv != 0 {
		t.Errorf("the tsvector column is still there: %d, %v", tsv, err)
	}
}

// TestConcurrentIndexers: writers of one collection replacing the same
// documents in different orders at once all succeed (they take the
// collection's counts first, so none waits for another's row while
// holding one it needs), and the counts match the documents.
func TestConcurrentIndexers(t *testing.T) {
	ctx := t.Context()
	s := freshStore(t)
	c := scopes[1]
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for round := range 10 {
				docs := make([]storage.Document, 6)
				for i := range docs {
					id := (i*(w+1) + round) % 6 // each writer its own order
					docs[i] = storage.Document{ID: fmt.Sprint(id), Text: fmt.Sprintf("note %d by %d", id, w)}
				}
				if err := s.Index(ctx, c, docs...); err != nil {
					t.Errorf("writer %d, round %d: %v", w, round, err)
					return
				}
			}
		})
	}
	wg.Wait()
	var docs, rows, terms int
	err := s.Pool().QueryRow(ctx, `SELECT (SELECT docs FROM `+pgx.Identifier{s.Schema(), "memlayer_doc_stats"}.Sanitize()+` WHERE collection = $1),
		(SELECT count(*) FROM `+pgx.Identifier{s.Schema(), "memlayer_docs"}.Sanitize()+` WHERE collection = $1),
		(SELECT sum(cardinality(terms)) FROM `+pgx.Identifier{s.Schema(), "memlayer_docs"}.Sanitize()+` WHERE collection = $1)`, c).Scan(&docs, &rows, &terms)
	if err != nil || docs != 6 || rows != 6 {
		t.Errorf("counts say %d documents, the table holds %d, want 6, 6 (%v)", docs, rows, err)
	}
	// "note", the ID and the writer: 2 or 3 distinct terms a document.
	if n := count(t, s, "postings", c); n != terms || n < 12 || n > 18 {
		t.Errorf("%d postings of documents of %d terms in all", n, terms)
	}
}

// TestRepeatedIDInOneCall: a document given twice in one Index call is
// the later one, placed as the later one, and counted once.
func TestRepeatedIDInOneCall(t *testing.T) {
	ctx := t.Context()
	s := freshStore(t)
	c := scopes[2]
	if err := s.Index(ctx, c, storage.Document{ID: "1", Text: "alpha"}, storage.Document{ID: "2", Text: "beta"},
		storage.Document{ID: "1", Text: "gamma"}); err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(t, s, c, storage.Query{Text: "alpha"}); len(got) != 0 {
		t.Errorf("alpha, replaced in the same call: got %q", got)
	}
	if got := hitIDs(t, s, c, storage.Query{Text: "gamma"}); !slices.Equal(got, []string{"1"}) {
		t.Errorf("gamma: got %q, want 1", got)
	}
	if got := hitIDs(t, s, c, storage.Query{}); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("newest first: got %q, want 1, 2", got)
	}
	if n := count(t, s, "postings", c); n != 2 {
		t.Errorf("%d postings, want 2 (gamma, beta)", n)
	}
}
