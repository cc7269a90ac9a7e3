package sqlite

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

// history is a test's writes to three users' collections whose IDs nest
// or are empty ("a", "a/b", ""): documents with fields, replacements,
// deletions and a marker without text.
func history() []indexOp {
	var ops []indexOp
	for _, user := range []string{"a", "a/b", ""} {
		c := storage.IndexName("ep", storage.ResourceScope(user), "docs")
		for i := range 60 {
			kind := []string{"turn", "fact", "note"}[i%3]
			text := fmt.Sprintf("Page %d of the pricing for nonprofits, turn %d", i%7, i)
			if i%5 == 0 {
				text += " lisbon weather"
			}
			ops = append(ops, indexOp{c, storage.Document{ID: fmt.Sprintf("d%d", i%40), Text: text, Fields: map[string]string{"kind": kind}}})
			if i%9 == 0 {
				ops = append(ops, indexOp{c, storage.Document{Text: fmt.Sprintf("d%d", i%40+1)}})
			}
			ops = append(ops, indexOp{c, storage.Document{ID: "mark", Fields: map[string]string{"mark": "1", "next": fmt.Sprint(i)}}})
		}
	}
	return ops
}

// apply runs ops on s.
func apply(t *testing.T, s *Store, ops []indexOp) {
	t.Helper()
	for _, op := range ops {
		var err error
		if op.d.ID == "" {
			err = s.Unindex(t.Context(), op.c, op.d.Text)
		} else {
			err = s.Index(t.Context(), op.c, op.d)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestTermsFileMigrated: a file whose term index is the FTS5 table of
// the version before the postings is migrated when first opened to
// write, and then searches exactly as a file that indexed the same
// history with postings: the same hits with the same scores, for text,
// filtered text, filter alone and each user, with the same counts and
// ordinals. The FTS5 table and its triggers are gone.
func TestTermsFileMigrated(t *testing.T) {
	t.Parallel() // its own database; mostly waits on the disk
	dir := t.TempDir()
	ops := history()
	termsFile(t, filepath.Join(dir, "old.db"), ops)
	old, err := Open(t.Context(), Config{Path: filepath.Join(dir, "old.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	fresh, err := Open(t.Context(), Config{Path: filepath.Join(dir, "new.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	apply(t, fresh, ops)

	for _, name := range []string{termsTable, termsTable + "_ai", termsTable + "_ad"} {
		var n int
		if err := old.db.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = ?`, name).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s still in the migrated file: %d, %v", name, n, err)
		}
	}
	for _, q := range []string{
		`SELECT collection || ' ' || docs || ' ' || length || ' ' || next FROM ` + statsTable + ` ORDER BY collection`,
		`SELECT collection || ' ' || id || ' ' || ord || ' ' || length || ' ' || coalesce(tokens, '-') FROM ` + docsTable + ` ORDER BY collection, id`,
		`SELECT p.token || ' ' || d.collection || ' ' || d.id FROM ` + postingsTable + ` p JOIN ` + docsTable + ` d ON d.rowid = p.doc ORDER BY 1`,
	} {
		if a, b := column(t, old, q), column(t, fresh, q); !slices.Equal(a, b) || len(a) == 0 {
			t.Errorf("%s:\\nmigrated %q\\nfresh    %q", q, a, b)
		}
	}
	queries := []storage.Query{
		{Text: "pricing nonprofits"},
		{Text: "lisbon", K: 3},
		{Text: "page 3 weather"},
		{Text: "pricing", Filter: map[string]string{"kind": "fact"}},
		{Text: "weather turn", Filter: map[string]string{"kind": "note"}, K: 50},
		{Filter: map[string]string{"mark": "1"}},
		{Filter: map[string]string{"kind": "turn"}, K: 5},
	}
	for _, user := range []string{"a", "a/b", ""} {
		c := storage.IndexName("ep", storage.ResourceScope(user), "docs")
		for _, q := range queries {
			a, err := old.Search(t.Context(), c, q)
			if err != nil {
				t.Fatal(err)
			}
			b, err := fresh.Search(t.Context(), c, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) == 0 || !slices.EqualFunc(a, b, func(x, y storage.Hit) bool { return x.ID == y.ID && x.Score == y.Score }) {
				t.Errorf("user %q, %+v:\\nmigrated %v\\nfresh    %v", user, q, a, b)
			}
		}
	}
}

// column returns the first column of q's rows.
func column(t *testing.T, s *Store, q string) []string {
	t.Helper()
	rs, err := s.db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		var v string
		if err := rs.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEraseLeavesNoPostings: replacing, unindexing and dropping leave no
// posting of a document that is gone, and erasing user "a"'s search
// data (every collection under its scope, of two layers) leaves no
// posting of its collections and every posting of users "a/b" and ""
// (whose IDs nest in and prefix a's), which search as before.
func TestEraseLeavesNoPostings(t *testing.T) {
	t.Parallel() // its own database; mostly waits on the disk
	s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "e.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ops := history()
	for _, op := range slices.Clone(ops) {
		op.c = strings.Replace(op.c, "ep", "sem", 1)
		ops = append(ops, op)
	}
	apply(t, s, ops)
	orphans := func() int {
		var n int
		if err := s.db.QueryRow(`SELECT count(*) FROM ` + postingsTable + ` p
			WHERE NOT EXISTS (SELECT 1 FROM ` + docsTable + ` d WHERE d.rowid = p.doc)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// postingsOf counts the postings of a user's documents, by their
	// rows and by their collections' tags.
	postingsOf := func(user string) (byDoc, byTag int) {
		for _, layer := range []string{"ep", "sem"} {
			c := storage.IndexName(layer, storage.ResourceScope(user), "docs")
			var n, m int
			if err := s.db.QueryRow(`SELECT count(*) FROM `+postingsTable+` p JOIN `+docsTable+` d ON d.rowid = p.doc WHERE d.collection = ?`, c).Scan(&n); err != nil {
				t.Fatal(err)
			}
			tag := strings.TrimSuffix(termToken(c, "x"), "x")
			if err := s.db.QueryRow(`SELECT count(*) FROM `+postingsTable+` WHERE token >= ? AND token < ?`, tag, tag+"\xff").Scan(&m); err != nil {
				t.Fatal(err)
			}
			byDoc, byTag = byDoc+n, byTag+m
		}
		return byDoc, byTag
	}
	if n := orphans(); n != 0 {
		t.Errorf("%d postings of replaced or unindexed documents", n)
	}
	before := map[string]int{}
	for _, user := range []string{"a", "a/b", ""} {
		byDoc, byTag := postingsOf(user)
		if byDoc == 0 || byTag == 0 {
			t.Fatalf("user %q has no postings: %d, %d", user, byDoc, byTag)
		}
		before[user] = byDoc
	}
	want := map[string][]string{}
	for _, user := range []string{"a/b", ""} {
		want[user] = hitIDs(t, s, storage.IndexName("ep", storage.ResourceScope(user), "docs"), storage.Query{Text: "pricing lisbon", K: 50})
	}
	for _, layer := range []string{"ep", "sem"} {
		if _, err := storage.DropIndexes(t.Context(), s, storage.LayerPrefix(layer, storage.ResourceScope("a"))); err != nil {
			t.Fatal(err)
		}
	}
	if byDoc, byTag := postingsOf("a"); byDoc != 0 || byTag != 0 {
		t.Errorf("erased user a keeps %d postings (%d by its tags)", byDoc, byTag)
	}
	if n := orphans(); n != 0 {
		t.Errorf("%d postings of erased documents", n)
	}
	for _, user := range []string{"a/b", ""} {
		if byDoc, _ := postingsOf(user); byDoc != before[user] {
			t.Errorf("user %q: %d postings after a's erase, want %d", user, byDoc, before[user])
		}
		got := hitIDs(t, s, storage.IndexName("ep", storage.ResourceScope(user), "docs"), storage.Query{Text: "pricing lisbon", K: 50})
		if len(got) == 0 || !slices.Equal(got, want[user]) {
			t.Errorf("user %q after a's erase: %q, want %q", user, got, want[user])
		}
	}
}

// TestFilteredTextReadsBoundedPostings: a filtered text query checks at
// most filterScan of a term's newest postings. A passing document
// within them is found; one older than all of them is not, a
// documented limit.
func TestFilteredTextReadsBoundedPostings(t *testing.T) {
	t.Parallel() // its own database; mostly waits on the disk
	if testing.Short() {
		t.Skip("indexes 10,000 documents")
	}
	s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "f.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := storage.IndexName("ep", storage.ResourceScope("u"), "docs")
	docs := []storage.Document{{ID: "oldest", Text: "alpha", Fields: map[string]string{"kind": "rare"}}}
	for i := range filterScan {
		docs = append(docs, storage.Document{ID: fmt.Sprint(i), Text: "alpha", Fields: map[string]string{"kind": "common"}})
		if i == filterScan-50 {
			docs = append(docs, storage.Document{ID: "recent", Text: "alpha", Fields: map[string]string{"kind": "rare"}})
		}
	}
	for b := range slices.Chunk(docs, 1000) {
		if err := s.Index(t.Context(), c, b...); err != nil {
			t.Fatal(err)
		}
	}
	rare := map[string]string{"kind": "rare"}
	if got := hitIDs(t, s, c, storage.Query{Text: "alpha", Filter: rare}); !slices.Equal(got, []string{"recent"}) {
		t.Errorf("alpha, kind rare: got %q, want [recent]", got)
	}
	if got := hitIDs(t, s, c, storage.Query{Filter: rare}); !slices.Equal(got, []string{"recent", "oldest"}) {
		t.Errorf("kind rare without text: got %q, want both", got)
	}
}

// TestPostingsReadByKey: a term's postings, filtered or not, are read
// through the postings' primary key, never by a scan or a sort.
func TestPostingsReadByKey(t *testing.T) {
	s, err := Open(t.Context(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, filter := range []map[string]string{nil, {"kind": "turn", "ep": "1"}} {
		q, args := postingsSQL("c", []string{"pricing", "lisbon"}, filter, 128)
		all := queryPlan(t, s, q, args...)
		keyed := strings.Count(all, "USING PRIMARY KEY (token=?")
		if strings.Contains(all, "SCAN "+postingsTable) || strings.Contains(all, "SCAN f") ||
			strings.Contains(all, "TEMP B-TREE") || keyed != 2*(1+len(filter)) {
			t.Errorf("filter %v: plan %q", slices.Sorted(maps.Keys(filter)), all)
		}
	}
}
