package semanticmemory_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// searchCounter counts a store's reads and keeps its search capability;
// hidden hides it.
type (
	searchCounter = storagetest.Counting
	hidden        = storagetest.Hidden
)

func bindUser(t testing.TB, cfg semanticmemory.Config, store storage.Store, user, thread string) *semanticmemory.Layer {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = clock()
	}
	tmpl, err := semanticmemory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tmpl.Init(context.Background(), layer.Env{ThreadID: thread, ResourceID: user, Store: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return l.(*semanticmemory.Layer)
}

// The case: a preference shares no word with the request, and
// is in the prompt all the same.
func TestPinned_PreferenceWithoutSharedWord(t *testing.T) {
	store := storage.NewMemoryStore()
	l := bindUser(t, semanticmemory.Config{}, store, "user-1", "t1")
	remember(t, l, "preference", "The user prefers British spelling")
	for i := range 50 {
		remember(t, l, "fact", fmt.Sprintf("Page %d of the site is about product line %d.", i, i))
	}
	l2 := bindUser(t, semanticmemory.Config{}, store, "user-1", "t2")
	got := recall(t, l2, "Add a hero section to it")
	if !strings.Contains(got, "The user prefers British spelling") {
		t.Fatalf("recall for %q = %q, want the preference", "Add a hero section to it", got)
	}
	// Unpinned, the same fact is not recalled for that input.
	l3 := bindUser(t, semanticmemory.Config{PinKinds: []string{}, PinImportance: 2}, store, "user-1", "t3")
	remember(t, l3, "fact", "The house style is Oxford commas.")
	if got := recall(t, l3, "Add a hero section to it"); strings.Contains(got, "Oxford") {
		t.Errorf("an unpinned fact sharing no word was recalled: %q", got)
	}
}

// Important facts are pinned too, and the pinned set is bounded.
func TestPinned_ImportantAndBounded(t *testing.T) {
	ctx := context.Background()
	l := bindUser(t, semanticmemory.Config{MaxPinned: 2}, storage.NewMemoryStore(), "u", "t")
	if _, err := l.Remember(ctx, semanticmemory.Memo{Text: "Never publish on Sundays.", Kind: "rule", Importance: 0.9}); err != nil {
		t.Fatal(err)
	}
	if got := recall(t, l, "hello"); !strings.Contains(got, "Never publish on Sundays.") {
		t.Fatalf("important fact not pinned: %q", got)
	}
	for i := range 5 {
		remember(t, l, "profile", fmt.Sprintf("Profile line number %d.", i))
	}
	got := recall(t, l, "hello")
	if n := strings.Count(got, "\n[f"); n != 2 {
		t.Fatalf("recall shows %d pinned facts, want MaxPinned 2: %q", n, got)
	}
	if !strings.Contains(got, "Profile line number 4.") || !strings.Contains(got, "Profile line number 3.") {
		t.Errorf("pinned facts are not the newest: %q", got)
	}
}

// Init and Recall read nothing that grows with the facts: the same
// number of records at 10 facts and at 1,000, superseded versions
// included.
func TestIndex_InitReadsFlat(t *testing.T) {
	ctx := context.Background()
	reads := map[int]int64{}
	for _, n := range []int{10, 1000} {
		cs := &searchCounter{MemoryStore: storage.NewMemoryStore()}
		w := bindUser(t, semanticmemory.Config{}, cs, "u", "w")
		for i := range n {
			remember(t, w, "fact", fmt.Sprintf("Fact number %d is about topic %d.", i, i))
		}
		for i := range 20 { // one fact restated many times
			if _, err := w.Remember(ctx, semanticmemory.Memo{Text: "The user's favourite colour is blue", Kind: "fact", Importance: float64(i) / 40}); err != nil {
				t.Fatal(err)
			}
		}
		cs.Gets.Store(0)
		cs.Lists.Store(0)
		l := bindUser(t, semanticmemory.Config{}, cs, "u", "r")
		got := recall(t, l, "favourite colour")
		if !strings.Contains(got, "favourite colour is blue") {
			t.Fatalf("n=%d: recall = %q", n, got)
		}
		reads[n] = cs.Gets.Load() + cs.Lists.Load()
	}
	if reads[1000] != reads[10] || reads[10] > 2 {
		t.Fatalf("records read by Init and Recall: %v, want the same small number", reads)
	}
}

// A log written before the index (here: through a store without search)
// is indexed on first use, and then every fact is recalled, the oldest
// too; the next run reads no record.
func TestIndex_OldLogIndexedOnFirstUse(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMemoryStore()
	old := bindUser(t, semanticmemory.Config{}, hidden{Store: mem}, "u", "old")
	remember(t, old, "fact", "The oldest fact mentions zeppelins.")
	for i := range 30 {
		remember(t, old, "fact", fmt.Sprintf("Filler fact %d about gardens.", i))
	}
	if err := old.Forget(ctx, "f1"); err != nil {
		t.Fatal(err)
	}
	if cols, _ := mem.Collections(ctx, ""); len(cols) != 0 {
		t.Fatalf("a store without search got collections %v", cols)
	}
	cs := &searchCounter{MemoryStore: mem}
	l := bindUser(t, semanticmemory.Config{}, cs, "u", "new")
	if got := recall(t, l, "zeppelins"); !strings.Contains(got, "zeppelins") {
		t.Fatalf("old fact not recalled after indexing: %q", got)
	}
	if got := recall(t, l, "Filler fact 0 gardens"); strings.Contains(got, "Filler fact 0 ") {
		t.Errorf("forgotten fact recalled: %q", got)
	}
	if m := l.Metrics()["entries"]; m != 30 {
		t.Errorf("entries = %d, want 30", m)
	}
	cs.Gets.Store(0)
	bindUser(t, semanticmemory.Config{}, cs, "u", "again")
	if g := cs.Gets.Load(); g != 1 {
		t.Errorf("second Init read %d records, want the head only", g)
	}
}

// A restated fact supersedes the old one found through the index; the
// old version stays for the audit and is never recalled.
func TestIndex_RestatedSupersedes(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	l := bindUser(t, semanticmemory.Config{}, store, "u", "t")
	for i := range 40 {
		remember(t, l, "fact", fmt.Sprintf("Unrelated fact %d on colour theory.", i))
	}
	a := remember(t, l, "preference", "The user's favourite colour is blue")
	b := remember(t, l, "preference", "The user's favourite colour is green")
	if a.ID != b.ID || b.Version != 2 {
		t.Fatalf("restatement: %+v then %+v, want one fact, version 2", a, b)
	}
	l2 := bindUser(t, semanticmemory.Config{}, store, "u", "t2")
	got := recall(t, l2, "favourite colour")
	if !strings.Contains(got, "green") || strings.Contains(got, "is blue") {
		t.Fatalf("recall = %q, want the new version only", got)
	}
	vs, err := l2.Versions(ctx, a.ID)
	if err != nil || len(vs) != 2 || vs[0].Text != a.Text {
		t.Fatalf("Versions = %+v, %v", vs, err)
	}
}

// Users whose IDs collide in spirit (empty-looking, nesting "a" and
// "a/b") keep apart, in records and in the index; concurrent writers of
// two users lose nothing; erasing one user (dropping its scope's
// collections and deleting its records) leaves nothing of it and all of
// the other.
func TestIndex_CrossUser(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	users := []string{"a", "a/b", "a:b", " a"}
	tag := map[string]string{"a": "tagplain", "a/b": "tagslash", "a:b": "tagcolon", " a": "tagspace"}
	var wg sync.WaitGroup
	for _, u := range users {
		for w := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				l := bindUser(t, semanticmemory.Config{}, store, u, fmt.Sprintf("t%d", w))
				for i := range 10 {
					if _, err := l.Remember(ctx, semanticmemory.Memo{Text: fmt.Sprintf("Note%dx%d sings %s", w, i, tag[u]), Kind: "fact"}); err != nil {
						t.Error(err)
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, u := range users {
		l := bindUser(t, semanticmemory.Config{TopK: 100}, store, u, "check")
		facts, err := l.Facts(ctx)
		if err != nil || len(facts) != 30 {
			t.Fatalf("user %q: %d facts, %v; want 30", u, len(facts), err)
		}
		got := recall(t, l, "sings")
		if n := strings.Count(got, "sings"); n != 30 {
			t.Errorf("user %q: recall shows %d facts, want 30", u, n)
		}
		for _, o := range users {
			if o != u && strings.Contains(got, tag[o]) {
				t.Errorf("user %q sees user %q's facts", u, o)
			}
		}
	}
	// Erase "a": its collections and its records.
	prefix := storage.LayerPrefix(semanticmemory.DefaultStorageID, storage.ResourceScope("a"))
	storagetest.Erase(t, store, prefix)
	if got := recall(t, bindUser(t, semanticmemory.Config{}, store, "a", "after"), "sings"); got != "" {
		t.Errorf("erased user recalls %q", got)
	}
	if got := recall(t, bindUser(t, semanticmemory.Config{TopK: 100}, store, "a/b", "after"), "sings"); strings.Count(got, "sings") != 30 {
		t.Errorf("user a/b lost facts to a's erase: %q", got)
	}
}
