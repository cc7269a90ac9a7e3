package storagetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

// searchTests are the checks of [storage.Searcher], run by [RunWith] when
// the stores newStore returns implement it, and by [RunSearch].
var searchTests = []struct {
	name string
	fn   func(t *testing.T, s storage.Searcher)
}{
	{"Search/OneSharedTermMatches", testSearchOR},
	{"Search/MoreAndRarerTermsRankFirst", testSearchRanking},
	{"Search/StemsAndCase", testSearchStems},
	{"Search/Filters", testSearchFilters},
	{"Search/ReplaceByID", testSearchReplace},
	{"Search/Unindex", testSearchUnindex},
	{"Search/RecentWithoutText", testSearchRecent},
	{"Search/K", testSearchK},
	{"Search/StopWordsOnly", testSearchStopWords},
	{"Search/QuerySyntaxIsText", testSearchSyntax},
	{"Search/Unicode", testSearchUnicode},
	{"Search/Vectors", testSearchVectors},
	{"Search/ScopeIsolation", testSearchScopes},
	{"Search/EraseDropsTheScope", testSearchErase},
	{"Search/BadInputIndexesNothing", testSearchBadInput},
	{"Search/LargeCollection", testSearchLarge},
	{"Search/Concurrent", testSearchConcurrent},
	{"Search/ContextCanceled", testSearchCanceled},
	{"Search/ClosedFails", testSearchClosed},
}

// RunSearch runs the search checks alone against the searchers newSearcher
// returns, one fresh searcher per subtest.
func RunSearch(t *testing.T, newSearcher func(t *testing.T) storage.Searcher) {
	t.Helper()
	for _, tc := range searchTests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newSearcher(t)) })
	}
}

func col(user string) string {
	return storage.IndexName("notes", storage.ResourceScope(user), "docs")
}

func mustIndex(t *testing.T, s storage.Searcher, c string, docs ...storage.Document) {
	t.Helper()
	if err := s.Index(context.Background(), c, docs...); err != nil {
		t.Fatalf("Index(%s): %v", c, err)
	}
}

func search(t *testing.T, s storage.Searcher, c string, q storage.Query) []string {
	t.Helper()
	hits, err := s.Search(context.Background(), c, q)
	if err != nil {
		t.Fatalf("Search(%s, %+v): %v", c, q, err)
	}
	ids := make([]string, 0, len(hits))
	for i, h := range hits {
		ids = append(ids, h.ID)
		if i > 0 && h.Score > hits[i-1].Score {
			t.Errorf("Search(%s, %q): hit %d scores %v, above hit %d's %v", c, q.Text, i, h.Score, i-1, hits[i-1].Score)
		}
	}
	return ids
}

func wantIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

func doc(id, text string, kv ...string) storage.Document {
	d := storage.Document{ID: id, Text: text}
	for i := 0; i+1 < len(kv); i += 2 {
		if d.Fields == nil {
			d.Fields = map[string]string{}
		}
		d.Fields[kv[i]] = kv[i+1]
	}
	return d
}

func testSearchOR(t *testing.T, s storage.Searcher) {
	c := col("u1")
	mustIndex(t, s, c, doc("a", "created the pricing page"), doc("b", "published the landing page"), doc("c", "weather in Lisbon"))
	got := search(t, s, c, storage.Query{Text: "pricing banana"})
	wantIDs(t, "one shared term of two", got, []string{"a"})
	got = search(t, s, c, storage.Query{Text: "page"})
	if len(got) != 2 || slices.Contains(got, "c") {
		t.Errorf("query %q: got %q, want a and b", "page", got)
	}
}

func testSearchRanking(t *testing.T, s storage.Searcher) {
	c := col("u1")
	var docs []storage.Document
	for i := range 20 {
		docs = append(docs, doc("filler"+strconv.Itoa(i), "the page was updated by the editor"))
	}
	docs = append(docs,
		doc("both", "nonprofit pricing tier"),
		doc("one", "nonprofit discount tier"),
		doc("rare", "alpha nonprofit"),
		doc("common", "alpha page"))
	mustIndex(t, s, c, docs...)
	got := search(t, s, c, storage.Query{Text: "nonprofit pricing", K: 2})
	wantIDs(t, "two shared terms above one", got[:min(1, len(got))], []string{"both"})
	got = search(t, s, c, storage.Query{Text: "page nonprofit alpha", K: 30})
	if i, j := slices.Index(got, "rare"), slices.Index(got, "common"); i < 0 || j < 0 || i > j {
		t.Errorf("rarer term: got %q, want rare above common (nonprofit is rarer than page)", got)
	}
}

func testSearchStems(t *testing.T, s storage.Searcher) {
	c := col("u1")
	mustIndex(t, s, c, doc("a", "Published Pages"), doc("b", "an unrelated note"))
	// Every backend folds case and strips a plural "s".
	wantIDs(t, "case and plural", search(t, s, c, storage.Query{Text: "page"}), []string{"a"})
	wantIDs(t, "upper case query", search(t, s, c, storage.Query{Text: "PUBLISHED"}), []string{"a"})
}

func testSearchFilters(t *testing.T, s storage.Searcher) {
	c := col("u1")
	mustIndex(t, s, c,
		doc("a", "hero section", "kind", "fact", "thread", "t1"),
		doc("b", "hero image", "kind", "episode", "thread", "t1"),
		doc("c", "hero banner", "kind", "fact", "thread", "t2"),
		doc("d", "hero footer"))
	wantIDs(t, "kind=fact", slices.Sorted(slices.Values(search(t, s, c, storage.Query{Text: "hero", Filter: map[string]string{"kind": "fact"}}))), []string{"a", "c"})
	wantIDs(t, "kind=fact, thread=t2", search(t, s, c, storage.Query{Text: "hero", Filter: map[string]string{"kind": "fact", "thread": "t2"}}), []string{"c"})
	wantIDs(t, "absent value", search(t, s, c, storage.Query{Text: "hero", Filter: map[string]string{"kind": "skill"}}), []string{})
	// A filter value that looks like a prefix or a pattern matches only itself.
	wantIDs(t, "pattern value", search(t, s, c, storage.Query{Text: "hero", Filter: map[string]string{"kind": "fa%"}}), []string{})
	hits, err := s.Search(context.Background(), c, storage.Query{Text: "banner"})
	if err != nil || len(hits) != 1 || hits[0].Fields["thread"] != "t2" || hits[0].Text != "hero banner" {
		t.Errorf("hit of banner = %+v, %v; want its text and fields", hits, err)
	}
}

func testSearchReplace(t *testing.T, s storage.Searcher) {
	c := col("u1")
	mustIndex(t, s, c, doc("a", "old pricing text"), doc("b", "other note"))
	mustIndex(t, s, c, doc("a", "new archive text"))
	wantIDs(t, "old text after replace", search(t, s, c, storage.Query{Text: "pricing"}), []string{})
	wantIDs(t, "new text after replace", search(t, s, c, storage.Query{Text: "archive"}), []string{"a"})
	wantIDs(t, "replaced is newest", search(t, s, c, storage.Query{K: 1}), []string{"a"})
	// A document with no words (a marker) can be replaced too.
	mustIndex(t, s, c, doc("marker", "", "kind", "marker"))
	mustIndex(t, s, c, doc("marker", "", "kind", "marker", "n", "2"))
	hits, err := s.Search(context.Background(), c, storage.Query{Filter: map[string]string{"kind": "marker"}})
	if err != nil || len(hits) != 1 || hits[0].Fields["n"] != "2" {
		t.Errorf("replaced empty document: %+v, %v", hits, err)
	}
}

func testSearchUnindex(t *testing.T, s storage.Searcher) {
	c := col("u1")
	mustIndex(t, s, c, doc("a", "alpha note"), doc("b", "alpha memo"))
	if err := s.Unindex(context.Background(), c, "a", "missing"); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "after unindex", search(t, s, c, storage.Query{Text: "alpha"}), []string{"b"})
	if err := s.Unindex(context.Background(), col("nobody"), "x"); err != nil {
		t.Errorf("Unindex of a missing collection: %v", err)
	}
	if err := s.Unindex(context.Background(), c, "b"); err != nil {
		t.Fatal(err)
	}
	names, err := s.Collections(context.Background(), "")
	if err != nil || slices.Contains(names, c) {
		t.Errorf("Collections after the last document went = %q, %v; want no %s", names, err, c)
	}
}

func testSearchRecent(t *testing.T, s storage.Searcher) {
	c := col("u1")
	for i := range 5 {
		kind := "turn"
		if i%2 == 0 {
			kind = "fact"
		}
		mustIndex(t, s, c, doc("d"+strconv.Itoa(i), "note "+strconv.Itoa(i), "kind", kind))
	}
	wantIDs(t, "recent", search(t, s, c, storage.Query{K: 3}), []string{"d4", "d3", "d2"})
	wantIDs(t, "recent facts", search(t, s, c, storage.Query{Filter: map[string]string{"kind": "fact"}}), []string{"d4", "d2", "d0"})
	wantIDs(t, "oldest", search(t, s, c, storage.Query{K: 2, Oldest: true}), []string{"d0", "d1"})
	mustIndex(t, s, c, doc("d0", "note 0 again", "kind", "fact"))
	wantIDs(t, "oldest after d0 is indexed again", search(t, s, c, storage.Query{K: 2, Oldest: true}), []string{"d1", "d2"})
}

func testSearchK(t *testing.T, s storage.Searcher) {
	c := col("u1")
	var docs []storage.Document
	for i := range storage.DefaultK + 5 {
		docs = append(docs, doc(fmt.Sprintf("d%02d", i), "common word"))
	}
	mustIndex(t, s, c, docs...)
	if got := search(t, s, c, storage.Query{Text: "common"}); len(got) != storage.DefaultK {
		t.Errorf("K=0 gave %d hits, want DefaultK=%d", len(got), storage.DefaultK)
	}
	if got := search(t, s, c, storage.Query{Text: "common", K: 3}); len(got) != 3 {
		t.Errorf("K=3 gave %d hits", len(got))
	}
	// Equal scores go to the newest first.
	wantIDs(t, "ties newest first", search(t, s, c, storage.Query{Text: "common", K: 2}), []string{"d14", "d13"})
	if _, err := s.Search(context.Background(), c, storage.Query{Text: "x", K: -1}); !errors.Is(err, storage.ErrInvalidDocument) {
		t.Errorf("K=-1: %v, want ErrInvalidDocument", err)
	}
	wantIDs(t, "missing collection", search(t, s, col("nobody"), storage.Query{Text: "common"}), []string{})
}

func testSearchStopWords(t *testing.T, s storage.Searcher) {
	c := col("u1")
	mustIndex(t, s, c, doc("a", "the cat is on the mat"))
	wantIDs(t, "function words only", search(t, s, c, storage.Query{Text: "the is on"}), []string{})
}

func testSearchSyntax(t *testing.T, s storage.Searcher) {
	c := col("u1")
	mustIndex(t, s, c, doc("a", "page-123 draft"), doc("b", "NEAR AND OR NOT"))
	for _, q := range []string{`"page`, `page*`, `text:page`, `(page OR`, `NEAR(page draft)`, `-page`, `page"; DROP TABLE x; --`, `^page`, `{page}`} {
		hits, err := s.Search(context.Background(), c, storage.Query{Text: q})
		if err != nil {
			t.Errorf("query %q: %v", q, err)
			continue
		}
		if len(hits) == 0 || hits[0].ID != "a" {
			t.Errorf("query %q: got %v, want a first (its words are text, not syntax)", q, hits)
		}
	}
	wantIDs(t, "ID as a word", search(t, s, c, storage.Query{Text: "page-123"}), []string{"a"})
}

// testSearchUnicode checks what every engine shares: letters of any
// script form words, and accented Latin letters match their own form.
// Engines differ on folding accents and on splitting CJK text into words,
// so those are not compared.
func testSearchUnicode(t *testing.T, s storage.Searcher) {
	c := col("u1")
	mustIndex(t, s, c, doc("a", "Café Zürich menu"), doc("b", "会議 資料"), doc("c", "emoji 🎉 party"), doc("d", "Москва отчёт"))
	wantIDs(t, "accented word", search(t, s, c, storage.Query{Text: "zürich"}), []string{"a"})
	wantIDs(t, "cyrillic", search(t, s, c, storage.Query{Text: "москва"}), []string{"d"})
	wantIDs(t, "word beside an emoji", search(t, s, c, storage.Query{Text: "party"}), []string{"c"})
	hits, err := s.Search(context.Background(), c, storage.Query{Text: "会議 資料"})
	if err != nil {
		t.Fatalf("CJK query: %v", err)
	}
	if len(hits) > 0 && hits[0].ID != "b" {
		t.Errorf("CJK query: got %v first, want b when anything", hits[0].ID)
	}
	if _, err := s.Search(context.Background(), c, storage.Query{Text: "\xff\xfe"}); !errors.Is(err, storage.ErrInvalidDocument) {
		t.Errorf("invalid UTF-8 query: %v, want ErrInvalidDocument", err)
	}
}

func testSearchVectors(t *testing.T, s storage.Searcher) {
	c := col("u1")
	mustIndex(t, s, c,
		storage.Document{ID: "north", Text: "heading north", Vector: []float32{1, 0, 0}},
		storage.Document{ID: "east", Text: "heading east", Vector: []float32{0, 1, 0}},
		storage.Document{ID: "up", Text: "going up", Vector: []float32{0, 0, 1}},
		storage.Document{ID: "novec", Text: "heading nowhere"},
		storage.Document{ID: "short", Text: "other dims", Vector: []float32{1, 0}})
	wantIDs(t, "vector only", search(t, s, c, storage.Query{Vector: []float32{0.1, 0.9, 0.2}, K: 2}), []string{"east", "up"})
	// Fusion: "east" is first by both; "north" matches the text only
	// through "heading", "up" the vector only a little.
	got := search(t, s, c, storage.Query{Text: "east heading", Vector: []float32{0, 1, 0}, K: 10})
	if len(got) == 0 || got[0] != "east" {
		t.Errorf("text and vector: got %q, want east first", got)
	}
	if i := slices.Index(got, "short"); i >= 0 && i < 3 {
		t.Errorf("a vector of other dimensions ranked %d: %q", i, got)
	}
	if err := s.Index(context.Background(), c, storage.Document{ID: "nan", Vector: []float32{float32(math.NaN())}}); !errors.Is(err, storage.ErrInvalidDocument) {
		t.Errorf("NaN vector: %v, want ErrInvalidDocument", err)
	}
}

// testSearchScopes indexes collections of IDs that collide or nest, and a
// thread named like a resource: each sees only its own documents.
func testSearchScopes(t *testing.T, s storage.Searcher) {
	scopes := []string{
		storage.ResourceScope("u1"), storage.ResourceScope("u1/x"), storage.ResourceScope("u10"),
		storage.ThreadScope("u1"), storage.AnonymousScope("u1"), storage.ResourceScope("u1%2Fx"),
	}
	for i, sc := range scopes {
		mustIndex(t, s, storage.IndexName("notes", sc, "docs"), doc("same-id", "shared secret "+strconv.Itoa(i)))
	}
	for i, sc := range scopes {
		hits, err := s.Search(context.Background(), storage.IndexName("notes", sc, "docs"), storage.Query{Text: "secret"})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Text != "shared secret "+strconv.Itoa(i) {
			t.Errorf("scope %s: got %+v, want only its own document", sc, hits)
		}
	}
	names, err := s.Collections(context.Background(), storage.LayerPrefix("notes", storage.ResourceScope("u1")))
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "collections of resource u1", names, []string{storage.IndexName("notes", storage.ResourceScope("u1"), "docs")})
}

func testSearchErase(t *testing.T, s storage.Searcher) {
	ctx := context.Background()
	for _, u := range []string{"u1", "u1/x", "u10", ""} {
		sc := storage.ResourceScope(u)
		mustIndex(t, s, storage.IndexName("notes", sc, "docs"), doc("a", "memory of "+u))
		mustIndex(t, s, storage.IndexName("notes", sc, "archive"), doc("b", "archive of "+u))
	}
	dropped, err := storage.DropIndexes(ctx, s, storage.LayerPrefix("notes", storage.ResourceScope("u1")))
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 2 {
		t.Errorf("dropped %q, want u1's two collections", dropped)
	}
	wantErased(t, s)
}

// wantErased checks that testSearchErase's drop of u1's collections left
// the users whose IDs nest or collide with u1 theirs, and u1 nothing.
func wantErased(t *testing.T, s storage.Searcher) {
	t.Helper()
	ctx := context.Background()
	for _, u := range []string{"u1/x", "u10", ""} {
		sc := storage.ResourceScope(u)
		if got := search(t, s, storage.IndexName("notes", sc, "docs"), storage.Query{Text: "memory"}); len(got) != 1 {
			t.Errorf("user %q lost its document to u1's erase: %q", u, got)
		}
	}
	sc := storage.ResourceScope("u1")
	for _, name := range []string{"docs", "archive"} {
		if got := search(t, s, storage.IndexName("notes", sc, name), storage.Query{}); len(got) != 0 {
			t.Errorf("erased u1's %s still holds %q", name, got)
		}
	}
	names, err := s.Collections(ctx, storage.LayerPrefix("notes", sc))
	if err != nil || len(names) != 0 {
		t.Errorf("Collections of the erased scope = %q, %v", names, err)
	}
	if err := s.Drop(ctx, storage.IndexName("notes", sc, "docs")); err != nil {
		t.Errorf("second Drop: %v", err)
	}
}

func testSearchBadInput(t *testing.T, s storage.Searcher) {
	ctx := context.Background()
	c := col("u1")
	mustIndex(t, s, c, doc("keep", "prior state"))
	bad := []storage.Document{
		{},
		{ID: string(make([]byte, storage.MaxDocIDLen+1))},
		{ID: "x", Text: "\xff"},
		{ID: "x", Fields: map[string]string{"Bad Name": "v"}},
		{ID: "x", Fields: map[string]string{"__proto__!": "v"}},
		{ID: "x", Text: string(make([]byte, storage.MaxDocTextLen+1))},
	}
	for _, d := range bad {
		if err := s.Index(ctx, c, doc("good", "prior state twin"), d); !errors.Is(err, storage.ErrInvalidDocument) {
			t.Errorf("Index(%.16q): %v, want ErrInvalidDocument", d.ID, err)
		}
	}
	wantIDs(t, "after rejected batches", search(t, s, c, storage.Query{Text: "prior"}), []string{"keep"})
	if err := s.Index(ctx, "", doc("a", "x")); !errors.Is(err, storage.ErrInvalidKey) {
		t.Errorf("empty collection: %v, want ErrInvalidKey", err)
	}
}

func testSearchLarge(t *testing.T, s storage.Searcher) {
	if testing.Short() {
		t.Skip("large collection skipped in -short mode")
	}
	c := col("u1")
	n := 20000
	if raceEnabled {
		n = 3000
	}
	batch := make([]storage.Document, 0, 500)
	for i := range n {
		batch = append(batch, doc(fmt.Sprintf("d%05d", i), fmt.Sprintf("page %d of the site, section s%d", i, i%97)))
		if len(batch) == cap(batch) {
			mustIndex(t, s, c, batch...)
			batch = batch[:0]
		}
	}
	mustIndex(t, s, c, doc("needle", "the nonprofit pricing page"))
	got := search(t, s, c, storage.Query{Text: "nonprofit pricing", K: 5})
	wantIDs(t, fmt.Sprintf("needle among %d", n), got, []string{"needle"})
	got = search(t, s, c, storage.Query{Text: "s42", K: 1000})
	if len(got) != (n+96-42)/97 {
		t.Errorf("s42 matched %d documents, want %d", len(got), (n+96-42)/97)
	}
}

func testSearchConcurrent(t *testing.T, s storage.Searcher) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range 4 {
		wg.Go(func() { errs[w] = churn(ctx, s, w) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for w := range 4 {
		got := search(t, s, col("user"+strconv.Itoa(w)), storage.Query{K: 100})
		if len(got) != 20 {
			t.Errorf("writer %d: %d documents, want 20", w, len(got))
		}
	}
}

// churn is writer w of testSearchConcurrent: it indexes 25 documents in
// its own collection, searching after each and unindexing every fifth,
// and returns the first error.
func churn(ctx context.Context, s storage.Searcher, w int) error {
	c := col("user" + strconv.Itoa(w))
	for i := range 25 {
		id := "d" + strconv.Itoa(i)
		if err := s.Index(ctx, c, doc(id, "note number "+strconv.Itoa(i)+" of writer "+strconv.Itoa(w))); err != nil {
			return err
		}
		if _, err := s.Search(ctx, c, storage.Query{Text: "note writer"}); err != nil {
			return err
		}
		if i%5 == 4 {
			if err := s.Unindex(ctx, c, id); err != nil {
				return err
			}
		}
	}
	return nil
}

func testSearchCanceled(t *testing.T, s storage.Searcher) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := col("u1")
	if err := s.Index(ctx, c, doc("a", "x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Index: %v, want context.Canceled", err)
	}
	if _, err := s.Search(ctx, c, storage.Query{Text: "x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Search: %v, want context.Canceled", err)
	}
	if got := search(t, s, c, storage.Query{}); len(got) != 0 {
		t.Errorf("a canceled Index wrote %q", got)
	}
}

// testSearchClosed closes a searcher that is an io.Closer: every call
// after it fails with storage.ErrClosed.
func testSearchClosed(t *testing.T, s storage.Searcher) {
	cl, ok := s.(io.Closer)
	if !ok {
		t.Skip("the searcher has no Close")
	}
	ctx := context.Background()
	c := col("u1")
	mustIndex(t, s, c, doc("a", "before close"))
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	_, searchErr := s.Search(ctx, c, storage.Query{Text: "close"})
	_, colErr := s.Collections(ctx, "")
	for op, err := range map[string]error{
		"Index":       s.Index(ctx, c, doc("b", "after close")),
		"Unindex":     s.Unindex(ctx, c, "a"),
		"Search":      searchErr,
		"Collections": colErr,
		"Drop":        s.Drop(ctx, c),
	} {
		if !errors.Is(err, storage.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
}
