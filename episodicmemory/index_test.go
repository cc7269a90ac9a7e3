package episodicmemory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// searchCounter counts a store's reads and keeps its search capability;
// hidden hides it.
type (
	searchCounter = storagetest.Counting
	hidden        = storagetest.Hidden
)

// The case: a note stored long ago, beyond what Init used to
// load (the newest 256 raw segments, 512 digests), is read by reference
// and recalled by its words.
func TestIndex_OldNoteReadAndRecalled(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	cfg := episodicmemory.Config{CompactAfter: 8, Retain: 100}
	w := bound(t, cfg, store, "t", "")
	if err := w.Note(ctx, 0, "outcome", "The customer asked for a zeppelin-themed landing page."); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 1200; n++ {
		if err := w.Store(ctx, pageStep(n)); err != nil {
			t.Fatal(err)
		}
	}
	l := bound(t, cfg, store, "t", "")
	e, whole, err := l.Read(ctx, "note-0-1")
	if err != nil || whole || e.Ref != "note-0-1" {
		t.Fatalf("Read(note-0-1) = %+v, %v, %v; want its digest (raw dropped by retention)", e, whole, err)
	}
	out, err := callRead(l, `{"ref":"note-0-1"}`)
	if err != nil || !strings.Contains(out, "zeppelin-themed") {
		t.Fatalf("read tool = %q, %v", out, err)
	}
	if b := recall(t, l, "zeppelin landing page"); !strings.Contains(b, "[note-0-1]") {
		t.Fatalf("recall does not find the old note:\n%s", b)
	}
	// A raw episode still within retention is read whole.
	if e, whole, err := l.Read(ctx, "call-1150"); err != nil || !whole || !strings.Contains(e.Result, "page-1150") {
		t.Fatalf("Read(call-1150) = %+v, %v, %v", e, whole, err)
	}
	if b := recall(t, l, "Page 3"); !strings.Contains(b, "[call-3]") {
		t.Fatalf("recall does not find an old page by title:\n%s", b)
	}
	if _, _, err := l.Read(ctx, "call-99999"); !errors.Is(err, episodicmemory.ErrNoEpisode) {
		t.Errorf("Read of an unknown reference = %v, want ErrNoEpisode", err)
	}
}

func callRead(l *episodicmemory.Layer, args string) (string, error) {
	return l.Functions()[0].Call(context.Background(), []byte(args))
}

// Init and the first Recall read the same few records at 100 steps and at
// 2,000; a step writes the same bytes.
func TestIndex_InitAndStepFlat(t *testing.T) {
	ctx := context.Background()
	reads := map[int]int64{}
	for _, n := range []int{100, 2000} {
		cs := &searchCounter{MemoryStore: storage.NewMemoryStore()}
		w := bound(t, episodicmemory.Config{}, cs, "t", "")
		for i := range n {
			if err := w.Store(ctx, pageStep(i)); err != nil {
				t.Fatal(err)
			}
		}
		cs.Gets.Store(0)
		cs.Lists.Store(0)
		l := bound(t, episodicmemory.Config{}, cs, "t", "")
		if b := recall(t, l, "Page 7"); !strings.Contains(b, "[call-7]") {
			t.Fatalf("n=%d: recall:\n%s", n, b)
		}
		reads[n] = cs.Gets.Load() + cs.Lists.Load()
	}
	if reads[2000] != reads[100] || reads[100] > 2 {
		t.Fatalf("records read by Init and Recall: %v, want the same small number", reads)
	}
}

// Bytes written per step stay constant with the store's index (compaction
// off: it writes one digest record per CompactAfter/2 episodes).
func TestIndex_StepBytesFlat(t *testing.T) {
	cs := &searchCounter{MemoryStore: storage.NewMemoryStore()}
	l := bound(t, episodicmemory.Config{CompactAfter: 1 << 30, CompactTokens: 1 << 30}, cs, "t", "")
	per := map[int]int64{}
	for n := range 1001 {
		before := cs.Bytes.Load()
		if err := l.Store(context.Background(), pageStep(n%10)); err != nil {
			t.Fatal(err)
		}
		per[n] = cs.Bytes.Load() - before
	}
	if per[1000] > per[10]+8 { // the head's numbers grow by a few digits
		t.Fatalf("bytes per step: step 10 %d, step 1000 %d", per[10], per[1000])
	}
}

// A log written before the index (here: through a store without search)
// is indexed on first use; then its oldest episode is recalled and read.
func TestIndex_OldLogIndexedOnFirstUse(t *testing.T) {
	ctx := context.Background()
	mem := storage.NewMemoryStore()
	cfg := episodicmemory.Config{CompactAfter: 8}
	old := bound(t, cfg, hidden{Store: mem}, "t", "")
	for n := range 300 {
		if err := old.Store(ctx, pageStep(n)); err != nil {
			t.Fatal(err)
		}
	}
	if cols, _ := mem.Collections(ctx, ""); len(cols) != 0 {
		t.Fatalf("a store without search got collections %v", cols)
	}
	l := bound(t, cfg, mem, "t", "")
	if b := recall(t, l, "Page 0"); !strings.Contains(b, "[call-0]") {
		t.Fatalf("old episode not recalled after indexing:\n%s", b)
	}
	if e, _, err := l.Read(ctx, "call-0"); err != nil || e.Ref != "call-0" {
		t.Fatalf("Read(call-0) = %+v, %v", e, err)
	}
	cs := &searchCounter{MemoryStore: mem}
	bound(t, cfg, cs, "t", "")
	if g := cs.Gets.Load(); g != 1 {
		t.Errorf("the next Init read %d records, want the head only", g)
	}
}

// On a store without search, recall and the read tool still work: the
// view through a private index, older references through the digest
// records.
func TestIndex_StoreWithoutSearch(t *testing.T) {
	ctx := context.Background()
	st := hidden{Store: storage.NewMemoryStore()}
	cfg := episodicmemory.Config{CompactAfter: 8, MaxDigests: 16}
	w := bound(t, cfg, st, "t", "")
	for n := range 200 {
		if err := w.Store(ctx, pageStep(n)); err != nil {
			t.Fatal(err)
		}
	}
	l := bound(t, cfg, st, "t", "")
	if b := recall(t, l, "Page 199"); !strings.Contains(b, "[call-199]") {
		t.Fatalf("recall:\n%s", b)
	}
	if e, _, err := l.Read(ctx, "call-0"); err != nil || e.Ref != "call-0" {
		t.Fatalf("Read(call-0) = %+v, %v", e, err)
	}
}

// Scopes whose IDs collide or nest ("a", "a/b", "a:b", " a") keep apart
// in records and index; concurrent writers of a shared resource log lose
// nothing; erasing one scope (its collections dropped, its records
// deleted) leaves nothing of it and all of the others.
func TestIndex_CrossUser(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	users := []string{"a", "a/b", "a:b", " a"}
	tag := map[string]string{"a": "tagplain", "a/b": "tagslash", "a:b": "tagcolon", " a": "tagspace"}
	const per = 15
	var wg sync.WaitGroup
	for _, u := range users {
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tmpl, _ := episodicmemory.New(episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, CompactAfter: 8, Now: fixed})
				l, err := tmpl.Init(ctx, layer.Env{ThreadID: fmt.Sprintf("t%d", w), ResourceID: u, Store: store})
				if err != nil {
					t.Error(err)
					return
				}
				for n := range per {
					st := toolStep(n, fmt.Sprintf("w%d-c%d", w, n), "cms_note", `{"text":"`+tag[u]+`"}`, `{"id":"`+tag[u]+fmt.Sprint(w, n)+`"}`)
					if err := l.(layer.Storer).Store(ctx, st); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, u := range users {
		l := bound(t, episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, MaxRecall: 100}, store, "check", u)
		b := recall(t, l, tag[u])
		if n := strings.Count(b, "cms_note"); n != 2*per {
			t.Errorf("user %q: recall shows %d episodes, want %d", u, n, 2*per)
		}
		for _, o := range users {
			if o != u && strings.Contains(b, tag[o]) {
				t.Errorf("user %q sees user %q's episodes", u, o)
			}
		}
		for w := range 2 {
			for n := range per {
				if _, _, err := l.Read(ctx, fmt.Sprintf("w%d-c%d", w, n)); err != nil {
					t.Errorf("user %q: Read(w%d-c%d): %v", u, w, n, err)
				}
			}
		}
	}
	prefix := storage.LayerPrefix(episodicmemory.DefaultStorageID, storage.ResourceScope("a"))
	storagetest.Erase(t, store, prefix)
	if b := recall(t, bound(t, episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}}, store, "after", "a"), tag["a"]); b != "" {
		t.Errorf("erased user recalls:\n%s", b)
	}
	if b := recall(t, bound(t, episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, MaxRecall: 100}, store, "after", "a/b"), tag["a/b"]); strings.Count(b, "cms_note") != 2*per {
		t.Errorf("user a/b lost episodes to a's erase:\n%s", b)
	}
}
