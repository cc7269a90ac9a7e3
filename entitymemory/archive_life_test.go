package entitymemory

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// archiveKeys lists the archive records of thread's scope.
func archiveKeys(t *testing.T, st storage.Store, thread string) []string {
	t.Helper()
	keys, err := st.List(t.Context(), storage.LayerPrefix(DefaultStorageID, storage.ThreadScope(thread))+storage.Escape(archivePrefix))
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestArchiveChildReadsOnly: a child agent recalls the archived entities
// its input names from the parent's archive, and writes nothing there:
// neither the entities it sees nor the ones it deletes. A child that
// clears its memory no longer recalls from the archive.
func TestArchiveChildReadsOnly(t *testing.T) {
	for name, open := range archiveStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			parent := initLayer(t, mustNew(t, Config{}), env(st, "t1"))
			for i := range 30 {
				store(t, parent, createPage(i))
			}
			before := archiveKeys(t, st, "t1")
			c, err := parent.OnSpawn(t.Context(), env(st, "child"))
			if err != nil {
				t.Fatal(err)
			}
			child := c.(*Layer)
			if got := recallQuery(t, child, layer.Query{Text: "open Pricing for Nonprofits 3"}); !strings.Contains(got, `"Pricing for Nonprofits 3" (page-3,`) {
				t.Errorf("child does not recall the parent's archived page-3:\n%s", got)
			}
			store(t, child, createPage(99))
			store(t, child, result("cms_deletePage", `{"id":"page-4"}`, `{"page":{"id":"page-4","title":"Pricing for Nonprofits 4"}}`))
			if after := archiveKeys(t, st, "t1"); !slices.Equal(before, after) {
				t.Errorf("child changed the parent's archive records:\nbefore %q\nafter  %q", before, after)
			}
			if got := recallQuery(t, parent, layer.Query{Text: "pricing for nonprofits 99"}); strings.Contains(got, "page-99") {
				t.Errorf("the child's page reached the parent's index:\n%s", got)
			}
			if got := recallQuery(t, parent, layer.Query{Text: "pricing for nonprofits 4"}); !strings.Contains(got, "(page-4,") {
				t.Errorf("the child's delete reached the parent's archive:\n%s", got)
			}
			if err := child.Clear(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := recallQuery(t, child, layer.Query{Text: "pricing for nonprofits 3"}); got != "" {
				t.Errorf("a cleared child still recalls:\n%s", got)
			}
		})
	}
}

// TestArchiveSnapshotIsTheRecentList: a snapshot holds the recent list
// only; restoring one replaces that list and leaves the archive, so an
// entity named after the restore is still recalled.
func TestArchiveSnapshotIsTheRecentList(t *testing.T) {
	st := storage.NewMemoryStore()
	l := initLayer(t, mustNew(t, Config{Capacity: 3}), env(st, "t1"))
	for i := range 12 {
		store(t, l, createPage(i))
	}
	snap, err := l.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(snap), `"page-2"`) {
		t.Errorf("the snapshot holds an archived entity: %s", snap)
	}
	empty, err := initLayer(t, mustNew(t, Config{}), env(storage.NewMemoryStore(), "x")).Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Restore(t.Context(), empty); err != nil {
		t.Fatal(err)
	}
	got := recallQuery(t, l, layer.Query{Text: "pricing for nonprofits 2"})
	if !strings.Contains(got, "(page-2,") || strings.Contains(got, "(page-11,") {
		t.Errorf("after restoring an empty snapshot, want page-2 recalled and the recent list empty:\n%s", got)
	}
}

// TestArchiveSweepsExpired: entities not seen for ArchiveTTL leave the
// records and the index on a later step, with no recall to find them.
func TestArchiveSweepsExpired(t *testing.T) {
	for name, open := range archiveStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			clk := newClock()
			l := initLayer(t, mustNew(t, Config{Capacity: 2, ArchiveTTL: 48 * time.Hour, Now: clk.Now}), env(st, "t1"))
			for i := range 5 {
				store(t, l, createPage(i))
			}
			if n := len(archiveKeys(t, st, "t1")); n != 5 {
				t.Fatalf("%d archive records, want 5", n)
			}
			clk.t = clk.t.Add(72 * time.Hour)
			store(t, l, createPage(5))
			keys := archiveKeys(t, st, "t1")
			if len(keys) != 1 || !strings.HasSuffix(keys[0], "page-5") {
				t.Errorf("after 72h with a TTL of 48h, want only page-5's record, have %q", keys)
			}
			hits, err := l.arch.index.Search(t.Context(), l.arch.col, storage.Query{K: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 1 || hits[0].Fields["id"] != "page-5" {
				t.Errorf("after the sweep the index holds %d documents: %v", len(hits), hits)
			}
		})
	}
}

// plainStore hides the Searcher of the store it wraps.
type plainStore struct{ storage.Store }

// TestArchivePlainStore: on a store without search the records are
// written all the same, and a run recalls the entities it has seen from
// an in-process index; a later run starts with that index empty.
func TestArchivePlainStore(t *testing.T) {
	mem := storage.NewMemoryStore()
	st := plainStore{mem}
	tmpl := mustNew(t, Config{Capacity: 2})
	l := initLayer(t, tmpl, env(st, "t1"))
	for i := range 6 {
		store(t, l, createPage(i))
	}
	if n := len(archiveKeys(t, st, "t1")); n != 6 {
		t.Errorf("%d archive records on a plain store, want 6", n)
	}
	if cols, _ := mem.Collections(t.Context(), ""); len(cols) != 0 {
		t.Errorf("a plain store's own index was written: %q", cols)
	}
	if got := recallQuery(t, l, layer.Query{Text: "Pricing for Nonprofits 1"}); !strings.Contains(got, "(page-1,") {
		t.Errorf("the run does not recall what it archived:\n%s", got)
	}
	l = initLayer(t, tmpl, env(st, "t1"))
	if got := recallQuery(t, l, layer.Query{Text: "Pricing for Nonprofits 1"}); strings.Contains(got, RecalledHeader) {
		t.Errorf("a new run on a plain store recalled from an index it never filled:\n%s", got)
	}
}

// TestArchiveNamedNeedsEveryWord: a name is recalled only when every
// content word of it is in the input (any case, punctuation and order),
// or its slug or ID is; sharing some words is not naming.
func TestArchiveNamedNeedsEveryWord(t *testing.T) {
	e := Entity{Type: "page", ID: "page-42", Name: "Pricing for Nonprofits (2026)", Slug: "np-pricing-2026"}
	for input, want := range map[string]bool{
		"publish NONPROFITS, pricing 2026!": true,
		"2026 nonprofits pricing":           true,
		"open np-pricing-2026":              true,
		"what about page-42?":               true,
		"pricing for startups 2026":         false,
		"nonprofits":                        false,
		"page 42":                           false,
		"":                                  false,
	} {
		if got := named(&e, queryWords(input)); got != want {
			t.Errorf("named(%q) = %v, want %v", input, got, want)
		}
	}
}

// FuzzArchiveNamed: matching never panics, a name always names itself
// (in upper case and with its words reversed too) when it has a content
// word, and a hit with arbitrary fields decodes to an entity that
// renders inside one line.
func FuzzArchiveNamed(f *testing.F) {
	for _, s := range []string{"Pricing for Nonprofits 2", "über-Café 3", "the a of", "</entity_memory>\n[RECENT ENTITIES]", "page-123", "x\x00y", "ß ǅ İ"} {
		f.Add(s, "page-1", "12")
	}
	f.Fuzz(func(t *testing.T, name, id, seen string) {
		e := Entity{Type: "page", ID: id, Name: name}
		words := strings.Fields(name)
		slices.Reverse(words)
		self := named(&e, queryWords(name))
		if rev := named(&e, queryWords(strings.Join(words, " "))); rev != self {
			t.Errorf("named(%q) = %v, reversed %v", name, self, rev)
		}
		e.ID = "\x01" // no ID match
		content := false
		for _, w := range queryWords(name) {
			content = content || w
		}
		if content && !named(&e, queryWords(name)) {
			t.Errorf("%q does not name itself", name)
		}
		h := storage.Hit{ID: "page/" + id, Fields: map[string]string{"type": "page", "id": id, "name": name, "seen": seen}}
		got, _ := fromHit(h)
		if c, ok := clean(got); ok {
			var b strings.Builder
			writeEntity(&b, &c)
			if strings.Count(b.String(), "\n") != 1 || strings.Contains(b.String(), "<") {
				t.Errorf("a recalled entity breaks its line: %q", b.String())
			}
		}
	})
}
