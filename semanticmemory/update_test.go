package semanticmemory_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// Update writes the next version of a fact by its ID, keeping the ID and
// Created; recall, search and the audit see it; a change that changes
// nothing writes nothing; bad input and unknown IDs store nothing.
func TestUpdateByID(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	l := bind(t, semanticmemory.Config{Embedder: &ngramEmbedder{}}, store, "t1")
	city := remember(t, l, "profile", "The user lives in Lisbon.")
	tea := remember(t, l, "preference", "The user prefers tea.")

	up, err := l.Update(ctx, city.ID, semanticmemory.Change{Text: "The user lives  in Porto."})
	if err != nil {
		t.Fatal(err)
	}
	if up.ID != city.ID || up.Version != 2 || up.Text != "The user lives in Porto." || up.Kind != "profile" ||
		!up.Created.Equal(city.Created) || !up.Updated.After(city.Updated) || up.Source.By != "code" || len(up.Embedding) == 0 {
		t.Fatalf("updated %+v from %+v", up, city)
	}
	if block := recall(t, l, "where does the user live"); !strings.Contains(block, "Porto") || strings.Contains(block, "Lisbon") {
		t.Fatalf("recall after the update:\n%s", block)
	}
	// Another process's layer sees it.
	other := bind(t, semanticmemory.Config{}, store, "t2")
	if got, err := other.Get(ctx, city.ID); err != nil || got.Text != up.Text || got.Version != 2 {
		t.Fatalf("another layer gets %+v, %v", got, err)
	}
	imp := 0.9
	up2, err := l.Update(ctx, city.ID, semanticmemory.Change{Kind: "Fact", Importance: &imp})
	if err != nil || up2.Version != 3 || up2.Kind != "fact" || up2.Importance != 0.9 || up2.Text != up.Text {
		t.Fatalf("kind and importance: %+v, %v", up2, err)
	}
	same, err := l.Update(ctx, city.ID, semanticmemory.Change{Text: up.Text, Kind: "fact"})
	if err != nil || same.Version != 3 {
		t.Fatalf("a no-op update: %+v, %v", same, err)
	}
	bad := 1.5
	for name, tc := range map[string]struct {
		err  error
		want error
	}{
		"importance": {second(l.Update(ctx, tea.ID, semanticmemory.Change{Importance: &bad})), semanticmemory.ErrInvalidFact},
		"kind":       {second(l.Update(ctx, tea.ID, semanticmemory.Change{Kind: "a kind"})), semanticmemory.ErrInvalidFact},
		"long text":  {second(l.Update(ctx, tea.ID, semanticmemory.Change{Text: strings.Repeat("x", semanticmemory.MaxTextBytes+1)})), semanticmemory.ErrInvalidFact},
		"unknown":    {second(l.Update(ctx, "f99", semanticmemory.Change{Text: "x"})), semanticmemory.ErrNotFound},
		"get":        {second(l.Get(ctx, "f99")), semanticmemory.ErrNotFound},
	} {
		if !errors.Is(tc.err, tc.want) {
			t.Errorf("%s: %v, want %v", name, tc.err, tc.want)
		}
	}
	if err := l.Forget(ctx, tea.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Update(ctx, tea.ID, semanticmemory.Change{Text: "The user prefers coffee."}); !errors.Is(err, semanticmemory.ErrNotFound) {
		t.Errorf("update of a forgotten fact: %v", err)
	}
	vs, err := l.Versions(ctx, city.ID)
	if err != nil || len(vs) != 3 || vs[0].Text != city.Text || vs[2].Importance != 0.9 {
		t.Fatalf("versions: %+v, %v", vs, err)
	}
	if vs, _ := l.Versions(ctx, tea.ID); len(vs) != 2 || vs[0].Importance != tea.Importance {
		t.Errorf("the refused updates changed tea: %+v", vs)
	}
}

// Concurrent updates of one fact each write a version: none is lost.
func TestUpdateConcurrent(t *testing.T) {
	store := storage.NewMemoryStore()
	l := bind(t, semanticmemory.Config{}, store, "t1")
	f := remember(t, l, "fact", "The meeting is in room one.")
	rooms := []string{"two", "three", "four", "five"}
	var wg sync.WaitGroup
	for _, r := range rooms {
		other := bind(t, semanticmemory.Config{}, store, "t-"+r)
		wg.Go(func() {
			if _, err := other.Update(t.Context(), f.ID, semanticmemory.Change{Text: "The meeting is in room " + r + "."}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	vs, err := l.Versions(t.Context(), f.ID)
	if err != nil || len(vs) != 1+len(rooms) {
		t.Fatalf("%d versions (%v), want %d", len(vs), err, 1+len(rooms))
	}
}

// SearchKind finds the best facts of one kind, however many facts of
// other kinds match better.
func TestSearchKind(t *testing.T) {
	ctx := t.Context()
	l := bind(t, semanticmemory.Config{}, storage.NewMemoryStore(), "t1")
	for _, s := range []string{"tea green", "tea black", "tea herbal"} {
		remember(t, l, "fact", "The shop sells "+s+" tea tea.")
	}
	pref := remember(t, l, "preference", "The user likes tea.")
	hits, err := l.SearchKind(ctx, "tea", "Preference", 1)
	if err != nil || len(hits) != 1 || hits[0].ID != pref.ID {
		t.Fatalf("SearchKind: %+v, %v", hits, err)
	}
	if hits, err := l.Search(ctx, "tea", 10); err != nil || len(hits) != 4 {
		t.Fatalf("Search: %d hits, %v", len(hits), err)
	}
	if _, err := l.SearchKind(ctx, "tea", "no kind", 1); !errors.Is(err, semanticmemory.ErrInvalidFact) {
		t.Errorf("a bad kind: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }
