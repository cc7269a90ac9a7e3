package episodicmemory_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// textSearches is a store that counts its index's searches, and apart
// its text searches other than the one Recall makes with its own text:
// the searches for links.
type textSearches struct {
	*storage.MemoryStore
	mu     sync.Mutex
	recall string // the text Recall is given
	links  int
	all    int
}

func (s *textSearches) Search(ctx context.Context, col string, q storage.Query) ([]storage.Hit, error) {
	s.mu.Lock()
	s.all++
	if strings.TrimSpace(q.Text) != "" && q.Text != s.recall {
		s.links++
	}
	s.mu.Unlock()
	return s.MemoryStore.Search(ctx, col, q)
}

// recalled returns the searches for links one Recall of text made, and
// its block.
func (s *textSearches) recalled(t *testing.T, l *episodicmemory.Layer, text string) (int, string) {
	t.Helper()
	s.mu.Lock()
	s.recall, s.links = text, 0
	s.mu.Unlock()
	b := recall(t, l, text)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.links, b
}

// The steps of one turn share the search for links: the first step
// searches, the next steps of the turn, which ask the same question,
// find their links in its answer; a new request, a new turn and a
// matching entry of another thread the run saw search again. The links
// shown are the same as a new search's.
func TestLinkSearch_SharedByTheStepsOfATurn(t *testing.T) {
	st := &textSearches{MemoryStore: storage.NewMemoryStore()}
	store(t, bound(t, resourceCfg(0, 0), st, "t1", "u"), launchTask("tagu")...)
	l := bound(t, resourceCfg(4, 0), st, "t2", "u")
	mark := `(linked: task 1 of thread "t1")`
	const req = "Publish page-7 and announce the launch on the blog"
	step := func(name string, text string, wantSearches int) string {
		t.Helper()
		n, b := st.recalled(t, l, text)
		if n != wantSearches {
			t.Errorf("%s: %d searches for links, want %d", name, n, wantSearches)
		}
		return b
	}
	if b := step("first step", req, 1); !strings.Contains(b, mark) {
		t.Fatalf("the first step does not follow the link, so the test shows nothing:\n%s", b)
	}
	store(t, l, publishStep(req))
	if b := step("second step", req, 0); !strings.Contains(b, "Summer Launch tagu") || !strings.Contains(b, mark) {
		t.Errorf("the second step lost the link:\n%s", b)
	}
	fresh := bound(t, resourceCfg(4, 0), st, "t2", "u")
	if want, got := recall(t, fresh, req), recall(t, l, req); got != want {
		t.Errorf("the kept search recalls\n%s\nwant a new search's\n%s", got, want)
	}
	// Another thread's entry that the run learns of, without reading
	// it, makes the next step search again. Once the run has read its
	// view, it reads the entries of others it catches up with: one that
	// shares no term with the search leaves it kept; one that does makes
	// the next step search again.
	other := bound(t, resourceCfg(0, 0), st, "t3", "u")
	store(t, other, fillerSteps(1)...)
	store(t, l, toolStep(1, "c3", "cms_getPage", `{"id":"page-7"}`, `{"page":{"id":"page-7"}}`))
	step("after an entry of t3 it did not read", req, 1)
	l.Episodes() // reads the view
	store(t, other, fillerSteps(1)...)
	store(t, l, toolStep(1, "c3", "cms_getPage", `{"id":"page-7"}`, `{"page":{"id":"page-7"}}`))
	step("after an unrelated entry of t3", req, 0)
	s := toolStep(0, "c4", "blog_draftPost", `{"about":"page-7"}`, `{"post":{"id":"post-9"}}`)
	s.Query = "Draft a post about page-7"
	store(t, other, s)
	store(t, l, toolStep(2, "c5", "cms_getPage", `{"id":"page-7"}`, `{"page":{"id":"page-7"}}`))
	if b := step("after a matching entry of t3", req, 1); !strings.Contains(b, `of thread "t3")`) {
		t.Errorf("the step after t3's matching entry does not link to it:\n%s", b)
	}
	step("the step after", req, 0)
	step("a new request", "Now unpublish page-7 and tell the blog team", 1)
	step("the request before, again", req, 1)
	store(t, l, turnStep(3, req, "Published page-7."))
	step("the same request in a new turn", req, 1)
	if _, err := l.NewTask(context.Background(), 4, "something else"); err != nil {
		t.Fatal(err)
	}
	step("the same request in a new task", req, 1)
}

// A kept search never offers what was cleared or erased: users whose IDs
// collide, nest or are empty recall at once, each keeping its search;
// one clears its log, two are erased under their runs (one of which
// logs a step after). The next step of each shows nothing of what it
// lost, and the others keep their links.
func TestLinkSearch_NoneAfterClearOrErase(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	users := []string{"a", "a/b", "", "c", "d"}
	tag := map[string]string{"a": "tagplain", "a/b": "tagslash", "": "tagempty", "c": "tagclear", "d": "tagerased"}
	second := map[string]*episodicmemory.Layer{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	const req = "Publish page-7 now"
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			store(t, bound(t, resourceCfg(0, 0), st, "t1", u), launchTask(tag[u])...)
			l := bound(t, resourceCfg(0, 0), st, "t2", u)
			store(t, l, publishStep(req))
			b := recall(t, l, req)
			if wantLink := u != ""; wantLink != strings.Contains(b, tag[u]) {
				t.Errorf("user %q: the first step shows its launch task: %v, want %v:\n%s", u, !wantLink, wantLink, b)
			}
			mu.Lock()
			second[u] = l
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := second["c"].Clear(ctx); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"a", "d"} {
		storagetest.Erase(t, st, storage.LayerPrefix(episodicmemory.DefaultStorageID, storage.ResourceScope(u)))
	}
	store(t, second["d"], toolStep(1, "c9", "cms_getPage", `{"id":"page-7"}`, `{"page":{"id":"page-7"}}`))
	for _, u := range users {
		b := recall(t, second[u], req)
		for _, o := range users {
			if o != u && strings.Contains(b, tag[o]) {
				t.Errorf("user %q recalls user %q's entry:\n%s", u, o, b)
			}
		}
		if keeps := u == "a/b"; keeps != strings.Contains(b, tag[u]) {
			t.Errorf("user %q: the next step shows its launch task: %v, want %v:\n%s", u, !keeps, keeps, b)
		}
	}
}

// In thread scope there are no links: no step searches for them.
func TestLinkSearch_NoneInThreadScope(t *testing.T) {
	st := &textSearches{MemoryStore: storage.NewMemoryStore()}
	store(t, bound(t, episodicmemory.Config{}, st, "t1", "u"), launchTask("x")...)
	l := bound(t, episodicmemory.Config{}, st, "t2", "u")
	for i := range 2 {
		if n, _ := st.recalled(t, l, "Publish page-7"); n != 0 {
			t.Errorf("step %d: %d searches for links in thread scope, want 0", i, n)
		}
		store(t, l, publishStep("Publish page-7"))
	}
}

// BenchmarkRecallLinksTurn recalls in a resource's log of 1,000 entries
// written by 4 threads, each step with another request (a new search for
// links every time) and with the same request (the steps of a turn). It
// reports the index's searches a Recall makes.
func BenchmarkRecallLinksTurn(b *testing.B) {
	st := &textSearches{MemoryStore: storage.NewMemoryStore()}
	linkBenchLog(b, st)
	for _, name := range []string{"new-request", "same-request"} {
		b.Run(name, func(b *testing.B) {
			l := bound(b, resourceCfg(0, 0), st, "t0", "u")
			qs := []layer.Query{{Text: "open page-7 again and fix its hero section", Budget: 2000},
				{Text: "open page-9 again and fix its footer links", Budget: 2000}}
			b.ReportAllocs()
			st.mu.Lock()
			st.all = 0
			st.mu.Unlock()
			i := 0
			for b.Loop() {
				if name == "new-request" {
					i++
				}
				if _, err := l.Recall(context.Background(), qs[i%2]); err != nil {
					b.Fatal(err)
				}
			}
			st.mu.Lock()
			b.ReportMetric(float64(st.all)/float64(b.N), "searches/op")
			st.mu.Unlock()
		})
	}
}

// A kept search never offers an entry the run evicted: the steps of a
// turn share the search, and once a step's write evicts the linked
// entry of another thread, the next steps no longer show it.
func TestLinkSearch_NoneEvicted(t *testing.T) {
	ctx := context.Background()
	st := &textSearches{MemoryStore: storage.NewMemoryStore()}
	long := strings.Repeat("with a long hero section and many words ", 8) // the lowest utility density
	store(t, bound(t, resourceCfg(0, 0), st, "t1", "u"),
		toolStep(0, "c1", "cms_createPage", `{"title":"Summer Launch tagu `+long+`"}`, `{"page":{"id":"page-7","title":"Summer Launch tagu"}}`))
	cfg := resourceCfg(8, 0)
	cfg.Capacity = episodicmemory.Capacity{MaxEpisodes: 4, GuardImportance: 2, Reservoir: -1}
	l := bound(t, cfg, st, "t2", "u")
	const req = "Publish page-7 and announce the launch on the blog"
	if _, b := st.recalled(t, l, req); !strings.Contains(b, "tagu") {
		t.Fatalf("the first step does not follow the link, so the test shows nothing:\n%s", b)
	}
	col := storage.IndexName(episodicmemory.DefaultStorageID, storage.ResourceScope("u"), "episodes")
	evicted := false
	for i := range 6 {
		store(t, l, toolStep(i, fmt.Sprintf("c%d", i), "cms_getPage", `{"id":"page-7"}`, `{"page":{"id":"page-7"}}`))
		hs, err := st.MemoryStore.Search(ctx, col, storage.Query{Filter: map[string]string{"thread": "t1"}, K: 10})
		if err != nil {
			t.Fatal(err)
		}
		n, b := st.recalled(t, l, req)
		if n != 0 {
			t.Errorf("step %d: %d searches for links, want 0 (the turn's)", i, n)
		}
		if indexed := len(hs) > 0; indexed != strings.Contains(b, "tagu") {
			t.Errorf("step %d: t1's entry indexed: %v, shown: %v\n%s", i, indexed, !indexed, b)
		}
		evicted = evicted || len(hs) == 0
	}
	if !evicted {
		t.Fatal("t1's entry was never evicted, so the test shows nothing")
	}
}
