package sqlite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/storage"
)

// withoutPostings turns the index of a new file into one without the
// postings, their tokens, or the triggers that keep them and the
// collections' counts.
var withoutPostings = []string{
	`DROP TRIGGER ` + postingsTable + `_ai`,
	`DROP TRIGGER ` + postingsTable + `_ad`,
	`DROP TRIGGER ` + statsTable + `_ai`,
	`DROP TRIGGER ` + statsTable + `_ad`,
	`DROP TABLE ` + postingsTable,
	`ALTER TABLE ` + docsTable + ` DROP COLUMN tokens`,
}

// earlierLayout turns the index of a new file into the layout the
// first versions wrote: an FTS5 table over the documents' text kept by
// triggers, and no term index, lengths, ordinals or counts.
var earlierLayout = append(slices.Clip(withoutPostings),
	`DROP TABLE `+statsTable,
	`ALTER TABLE `+docsTable+` DROP COLUMN length`,
	`ALTER TABLE `+docsTable+` DROP COLUMN ord`,
	`CREATE VIRTUAL TABLE `+oldFTSTable+` USING fts5(text, content='`+docsTable+`',
		content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2')`,
	`CREATE TRIGGER `+docsTable+`_ai AFTER INSERT ON `+docsTable+` BEGIN
		INSERT INTO `+oldFTSTable+` (rowid, text) VALUES (new.rowid, new.text);
	END`,
	`CREATE TRIGGER `+docsTable+`_ad AFTER DELETE ON `+docsTable+` BEGIN
		INSERT INTO `+oldFTSTable+` (`+oldFTSTable+`, rowid, text) VALUES ('delete', old.rowid, old.text);
	END`,
)

// termsLayout turns the index of a new file into the layout of the
// version before the postings: an FTS5 term index of each document's
// tokens, with the counts kept by its triggers.
var termsLayout = append(slices.Clip(withoutPostings),
	`CREATE VIRTUAL TABLE `+termsTable+` USING fts5(terms, detail=none,
		tokenize="unicode61 remove_diacritics 0 tokenchars '-_.:/'")`,
	`INSERT INTO `+termsTable+` (`+termsTable+`, rank) VALUES ('secure-delete', 1)`,
	`CREATE TRIGGER `+termsTable+`_ai AFTER INSERT ON `+docsTable+` BEGIN
		INSERT INTO `+statsTable+` (collection, docs, length, next) VALUES (new.collection, 1, new.length, new.ord + 1)
			ON CONFLICT (collection) DO UPDATE SET docs = docs + 1, length = length + excluded.length, next = excluded.next;
	END`,
	`CREATE TRIGGER `+termsTable+`_ad AFTER DELETE ON `+docsTable+` BEGIN
		DELETE FROM `+termsTable+` WHERE rowid = old.rowid;
		UPDATE `+statsTable+` SET docs = docs - 1, length = length - old.length WHERE collection = old.collection;
		DELETE FROM `+statsTable+` WHERE collection = old.collection AND docs <= 0;
	END`,
)

// earlierFile writes a file of the first layout holding docs in each
// of the collections, inserted as an earlier version did.
func earlierFile(t *testing.T, path string, docs map[string][]storage.Document) {
	t.Helper()
	s := layoutFile(t, path, earlierLayout)
	defer s.Close()
	for _, c := range slices.Sorted(maps.Keys(docs)) {
		for _, d := range docs[c] {
			if _, err := s.db.Exec(`INSERT INTO `+docsTable+` (collection, id, text, fields) VALUES (?, ?, ?, ?)`, c, d.ID, d.Text, fieldsJSON(t, d)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// indexOp is a write of a test's history: the document indexed in
// collection c, or, when it has no ID, the deletion of the document
// whose ID is its text.
type indexOp struct {
	c string
	d storage.Document
}

// termsFile writes a file of the layout before the postings, and runs
// ops on it as that version did.
func termsFile(t *testing.T, path string, ops []indexOp) {
	t.Helper()
	s := layoutFile(t, path, termsLayout)
	defer s.Close()
	for _, op := range ops {
		c, d := op.c, op.d
		if d.ID == "" {
			if _, err := s.db.Exec(`DELETE FROM `+docsTable+` WHERE collection = ? AND id = ?`, c, d.Text); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := s.db.Exec(`DELETE FROM `+docsTable+` WHERE collection = ? AND id = ?`, c, d.ID); err != nil {
			t.Fatal(err)
		}
		tokens, length := docTerms(c, d.Text, d.Fields)
		var rowid int64
		err := s.db.QueryRow(`INSERT INTO `+docsTable+` (collection, id, text, fields, length, ord)
			VALUES (?1, ?2, ?3, ?4, ?5, coalesce((SELECT next FROM `+statsTable+` WHERE collection = ?1), 0)) RETURNING rowid`,
			c, d.ID, d.Text, fieldsJSON(t, d), length).Scan(&rowid)
		if err != nil {
			t.Fatal(err)
		}
		if length == 0 {
			continue
		}
		var list []string
		if err := json.Unmarshal([]byte(tokens.(string)), &list); err != nil {
			t.Fatal(err)
		}
		if _, err := s.db.Exec(`INSERT INTO `+termsTable+` (rowid, terms) VALUES (?, ?)`, rowid, strings.Join(list, " ")); err != nil {
			t.Fatal(err)
		}
	}
}

// layoutFile opens a new file at path and runs layout on it.
func layoutFile(t *testing.T, path string, layout []string) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range layout {
		if _, err := s.db.Exec(q); err != nil {
			s.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	return s
}

func fieldsJSON(t *testing.T, d storage.Document) string {
	t.Helper()
	if d.Fields == nil {
		return "{}"
	}
	b, err := json.Marshal(d.Fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func hitIDs(t *testing.T, s *Store, c string, q storage.Query) []string {
	t.Helper()
	hits, err := s.Search(t.Context(), c, q)
	if err != nil {
		t.Fatalf("Search(%s, %q): %v", c, q.Text, err)
	}
	var ids []string
	for _, h := range hits {
		ids = append(ids, h.ID)
	}
	return ids
}

// TestEarlierFileIndexed: a file an earlier version wrote is indexed
// when it is first opened to write, each document in its own collection
// (users "a", "a/b" and "" share words), and the earlier index is gone.
// Opened read-only before that, it has no hits and no error.
func TestEarlierFileIndexed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	ca, cab, cnone := storage.IndexName("notes", storage.ResourceScope("a"), "docs"),
		storage.IndexName("notes", storage.ResourceScope("a/b"), "docs"),
		storage.IndexName("notes", storage.ThreadScope("t1"), "docs")
	earlierFile(t, path, map[string][]storage.Document{
		ca:    {{ID: "a1", Text: "The pricing page for nonprofits"}, {ID: "a2", Text: "Weather in Lisbon", Fields: map[string]string{"kind": "turn"}}},
		cab:   {{ID: "b1", Text: "Pricing tiers of the shop"}},
		cnone: {{ID: "n1", Text: "An anonymous pricing note"}},
	})

	ro, err := Open(t.Context(), Config{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(t, ro, ca, storage.Query{Text: "pricing"}); len(got) != 0 {
		t.Errorf("read-only earlier file: hits %q, want none", got)
	}
	ro.Close()

	s, err := Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for c, want := range map[string][]string{ca: {"a1"}, cab: {"b1"}, cnone: {"n1"}} {
		if got := hitIDs(t, s, c, storage.Query{Text: "pricings"}); !slices.Equal(got, want) {
			t.Errorf("%s: pricing: got %q, want %q", c, got, want)
		}
	}
	if got := hitIDs(t, s, ca, storage.Query{Text: "lisbon", Filter: map[string]string{"kind": "turn"}}); !slices.Equal(got, []string{"a2"}) {
		t.Errorf("filtered query on an earlier document: got %q, want a2", got)
	}
	for _, old := range []string{oldFTSTable, termsTable} {
		if has, err := s.hasTable(t.Context(), old); err != nil || has {
			t.Errorf("earlier index %s still there: %v, %v", old, has, err)
		}
	}
	// Documents indexed now come after the earlier ones.
	if err := s.Index(t.Context(), ca, storage.Document{ID: "a3", Text: "Pricing for schools"}); err != nil {
		t.Fatal(err)
	}
	var docs, next int
	if err := s.db.QueryRow(`SELECT docs, next FROM `+statsTable+` WHERE collection = ?`, ca).Scan(&docs, &next); err != nil {
		t.Fatal(err)
	}
	if docs != 3 || next != 3 {
		t.Errorf("collection a: docs %d, next %d, want 3, 3", docs, next)
	}
	if got := hitIDs(t, s, ca, storage.Query{Text: "pricing"}); len(got) != 2 {
		t.Errorf("pricing after a new document: got %q, want a1 and a3", got)
	}
}

// TestCommonTermsReadInPart: a term in more documents than a query reads
// of it weighs less than a rare one, the rare term's old document is
// still found first, and the estimate of the common term's documents is
// near the truth.
func TestCommonTermsReadInPart(t *testing.T) {
	s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := storage.IndexName("notes", storage.ResourceScope("u1"), "docs")
	other := storage.IndexName("notes", storage.ResourceScope("u2"), "docs")
	docs := []storage.Document{{ID: "old", Text: "zephyr alpha"}}
	for i := range 1200 {
		text := fmt.Sprintf("filler%d", i)
		if i%2 == 0 {
			text += " alpha"
		}
		docs = append(docs, storage.Document{ID: fmt.Sprintf("d%04d", i), Text: text})
	}
	for b := range slices.Chunk(docs, 500) {
		if err := s.Index(t.Context(), c, b...); err != nil {
			t.Fatal(err)
		}
		// Another user's documents of the same term, interleaved.
		if err := s.Index(t.Context(), other, storage.Document{ID: "x" + b[0].ID, Text: "alpha zephyr"}); err != nil {
			t.Fatal(err)
		}
	}
	got := hitIDs(t, s, c, storage.Query{Text: "alpha zephyr", K: 3})
	if len(got) == 0 || got[0] != "old" {
		t.Errorf("alpha zephyr: got %q, want old first", got)
	}
	post, err := s.postings(t.Context(), c, []string{"alpha"}, nil, postingsOf(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(post[0]) != postingsPerTerm {
		t.Fatalf("read %d postings of alpha, want %d", len(post[0]), postingsPerTerm)
	}
	var st collectionStats
	if err := s.db.QueryRow(`SELECT docs, length, next FROM `+statsTable+` WHERE collection = ?`, c).Scan(&st.docs, &st.length, &st.next); err != nil {
		t.Fatal(err)
	}
	idf, err := s.idf(t.Context(), post, postingsPerTerm, st)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := lexical.IDF(st.docs, 660), lexical.IDF(st.docs, 540); idf[0] < lo || idf[0] > hi {
		t.Errorf("alpha is in 601 documents; its idf is %.4f, want that of 540 to 660 documents (%.4f to %.4f)", idf[0], lo, hi)
	}
}

// TestDropLeavesNoTerms: dropping a collection removes its terms, its
// counts and its collection's name from the file once it is purged, and
// leaves the collection nested under the same name searchable.
func TestDropLeavesNoTerms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "d.db")
	s, err := Open(t.Context(), Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ca := storage.IndexName("notes", storage.ResourceScope("zqvuser"), "docs")
	cab := storage.IndexName("notes", storage.ResourceScope("zqvuser/kid"), "docs")
	if err := s.Index(t.Context(), ca, storage.Document{ID: "1", Text: "qqsecretterm in a note", Fields: map[string]string{"kind": "qqsecretkind"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Index(t.Context(), cab, storage.Document{ID: "1", Text: "the kept note"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Drop(t.Context(), ca); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM `+statsTable+` WHERE collection = ?`, ca).Scan(&n); err != nil || n != 0 {
		t.Errorf("counts of the dropped collection: %d rows, %v", n, err)
	}
	if got := hitIDs(t, s, cab, storage.Query{Text: "note"}); !slices.Equal(got, []string{"1"}) {
		t.Errorf("nested collection after the drop: got %q", got)
	}
	if err := s.Purge(t.Context()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tag := termToken(ca, "note")
	for _, gone := range []string{"qqsecretterm", "qqsecretkind", strings.TrimSuffix(tag, "_note"), ca} {
		if bytes.Contains(b, []byte(gone)) {
			t.Errorf("the file still holds %q after the drop and a purge", gone)
		}
	}
}

// TestTermTokens: a term of any bytes becomes one token of the index's
// tokenizer, different collections' tokens differ, and query syntax in
// a term is only text.
func TestTermTokens(t *testing.T) {
	for _, term := range []string{"page-123", "über", `a"b`, "x) OR (y", "NEAR", "日本語"} {
		tok := termToken("c1", term)
		if strings.Trim(tok, "abcdefghijklmnopqrstuvwxyz0123456789-_.:/") != "" {
			t.Errorf("term %q: token %q has a byte the tokenizer splits on", term, tok)
		}
		if tok == termToken("c2", term) {
			t.Errorf("term %q: collections c1 and c2 share token %q", term, tok)
		}
	}
	ctx := context.Background()
	s, err := Open(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := storage.IndexName("notes", storage.ResourceScope("u"), "docs")
	if err := s.Index(ctx, c, storage.Document{ID: "1", Text: `x) OR (y über 日本語 "quoted"`}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"über", "日本語", `"quoted`, "x) OR (y"} {
		if got := hitIDs(t, s, c, storage.Query{Text: q}); !slices.Equal(got, []string{"1"}) {
			t.Errorf("query %q: got %q, want 1", q, got)
		}
	}
}

// TestTextlessDocumentsHaveNoTermRow: a document without terms (a
// layer's marker, replaced at every step) writes no postings, so
// replacing it never deletes one; filtered listings still
// find it, text queries never do, and the documents with text beside it
// are searched as before, filter or none. Two users' markers of one ID
// stay apart, and erasing one leaves the other.
func TestTextlessDocumentsHaveNoTermRow(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ca := storage.IndexName("ep", storage.ResourceScope("a"), "docs")
	cab := storage.IndexName("ep", storage.ResourceScope("a/b"), "docs")
	cta := storage.IndexName("ep", storage.ThreadScope("a"), "docs") // a thread named like the resource
	terms := func() int {
		var n int
		if err := s.db.QueryRow(`SELECT count(*) FROM ` + postingsTable).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []string{ca, cab, cta} {
		if err := s.Index(ctx, c, storage.Document{ID: "note", Text: "a pricing page", Fields: map[string]string{"ep": "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	before := terms()
	for i := range 5 {
		for _, c := range []string{ca, cab, cta} {
			mark := storage.Document{ID: "mark", Fields: map[string]string{"mark": "1", "next": strconv.Itoa(i)}}
			if err := s.Index(ctx, c, mark, storage.Document{ID: "blank", Text: "  the  ", Fields: map[string]string{"ep": "1"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := terms(); n != before {
		t.Errorf("postings %d after indexing documents without terms, want %d", n, before)
	}
	for _, c := range []string{ca, cab, cta} {
		if got := hitIDs(t, s, c, storage.Query{Filter: map[string]string{"mark": "1"}}); !slices.Equal(got, []string{"mark"}) {
			t.Errorf("%s: marker by filter: %q", c, got)
		}
		hits, err := s.Search(ctx, c, storage.Query{Filter: map[string]string{"mark": "1"}})
		if err != nil || len(hits) != 1 || hits[0].Fields["next"] != "4" {
			t.Errorf("%s: marker = %+v, %v; want next 4", c, hits, err)
		}
		for _, q := range []storage.Query{{Text: "pricing"}, {Text: "pricing", Filter: map[string]string{"ep": "1"}}} {
			if got := hitIDs(t, s, c, q); !slices.Equal(got, []string{"note"}) {
				t.Errorf("%s: %+v: got %q, want [note]", c, q, got)
			}
		}
	}
	if err := s.Drop(ctx, ca); err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(t, s, ca, storage.Query{Filter: map[string]string{"mark": "1"}}); len(got) != 0 {
		t.Errorf("dropped collection's marker: %q", got)
	}
	for _, c := range []string{cab, cta} {
		if got := hitIDs(t, s, c, storage.Query{Filter: map[string]string{"mark": "1"}}); !slices.Equal(got, []string{"mark"}) {
			t.Errorf("%s: marker after a's drop: %q", c, got)
		}
		if got := hitIDs(t, s, c, storage.Query{Text: "pricing"}); !slices.Equal(got, []string{"note"}) {
			t.Errorf("%s: note after a's drop: %q", c, got)
		}
	}
}
