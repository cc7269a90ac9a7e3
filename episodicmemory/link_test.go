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

// resourceCfg is a resource-scoped layer's config: one log for the
// resource's threads.
func resourceCfg(maxRecall, maxLinks int) episodicmemory.Config {
	return episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, MaxRecall: maxRecall, MaxLinks: maxLinks}
}

// launchTask is thread 1's task: it creates page-7 for the resource
// tagged tag.
func launchTask(tag string) []layer.Turn {
	return []layer.Turn{
		toolStep(0, "c1", "cms_createPage", `{"title":"Summer Launch `+tag+`"}`, `{"page":{"id":"page-7","title":"Summer Launch `+tag+`"}}`),
		turnStep(1, "q", "Created page-7, Summer Launch "+tag+"."),
	}
}

// publishStep is thread 2's first step: it publishes page-7.
func publishStep(query string) layer.Turn {
	s := toolStep(0, "c2", "cms_publishPage", `{"id":"page-7"}`, `{"ok":true}`)
	s.Query = query
	return s
}

// fillerSteps are a third thread's unrelated steps, newer than the
// launch task.
func fillerSteps(n int) []layer.Turn {
	out := make([]layer.Turn, n)
	for i := range out {
		out[i] = toolStep(i, fmt.Sprintf("f%d", i), "crm_logCall", fmt.Sprintf(`{"contact":"lead %d"}`, i), fmt.Sprintf(`{"id":"call-log-%d"}`, i))
		out[i].Query = "Log today's sales calls"
	}
	return out
}

// A thread's task episode is linked to the task of another thread of its
// resource that touched the same entity, and Recall follows the link:
// the linked entries are shown, marked, although the input shares no
// word with them and newer entries of a third thread crowd them out
// without the link.
func TestLinks_FollowedWithinResource(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	store(t, bound(t, resourceCfg(0, 0), st, "t1", "u"), launchTask("tagu")...)
	store(t, bound(t, resourceCfg(0, 0), st, "t3", "u"), fillerSteps(30)...)
	l := bound(t, resourceCfg(4, 0), st, "t2", "u")
	store(t, l, publishStep("Publish page-7"))
	links, err := l.Links(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 1 || links[0].Thread != "t1" || links[0].Task != 1 || strings.Join(links[0].Shared, ",") != "page-7" || links[0].Score != 1 {
		t.Fatalf("links = %+v, want one to task 1 of t1, sharing page-7", links)
	}
	mark := `(linked: task 1 of thread "t1")`
	b := recall(t, l, "Publish it now")
	if !strings.Contains(b, "Summer Launch tagu") || !strings.Contains(b, mark) {
		t.Errorf("recall does not follow the link to t1:\n%s", b)
	}
	t.Logf("recall of t2 with the link:\n%s", b)
	off := bound(t, resourceCfg(4, -1), st, "t2", "u")
	if b := recall(t, off, "Publish it now"); strings.Contains(b, "tagu") {
		t.Errorf("without links the launch task is recalled anyway, so the test shows nothing:\n%s", b)
	}
	cands, err := l.Candidates(ctx, layer.Query{Text: "Publish it now"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cands {
		found = found || c.Source == "t1" && strings.Contains(c.Text, mark)
	}
	if !found {
		t.Errorf("scored assembly is not offered the linked entries: %+v", cands)
	}
}

// In thread scope a log holds one thread: there are no links.
func TestLinks_NoneInThreadScope(t *testing.T) {
	st := storage.NewMemoryStore()
	store(t, bound(t, episodicmemory.Config{}, st, "t1", "u"), launchTask("x")...)
	l := bound(t, episodicmemory.Config{}, st, "t2", "u")
	store(t, l, publishStep("Publish page-7"))
	if links, err := l.Links(context.Background()); err != nil || len(links) != 0 {
		t.Fatalf("thread scope: links %+v, %v; want none", links, err)
	}
}

// Links never cross resources: users whose IDs collide or nest ("a",
// "a/b") or are empty (each thread then has a resource of its own) run
// at once, with the same thread IDs and the same entity; each one's
// second thread links to its own first thread only, and recalls none of
// the others' entries. Erasing one user removes its links and leaves the
// others'.
func TestLinks_NeverAcrossResources(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	users := []string{"a", "a/b", ""}
	tag := map[string]string{"a": "tagplain", "a/b": "tagslash", "": "tagempty"}
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, s := range launchTask(tag[u]) {
				l := bound(t, resourceCfg(0, 0), st, "t1", u)
				if err := l.Store(ctx, s); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	second := map[string]*episodicmemory.Layer{}
	var mu sync.Mutex
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := bound(t, resourceCfg(0, 0), st, "t2", u)
			if err := l.Store(ctx, publishStep("Publish page-7")); err != nil {
				t.Error(err)
			}
			mu.Lock()
			second[u] = l
			mu.Unlock()
		}()
	}
	wg.Wait()
	check := func(u string, wantLink bool) {
		t.Helper()
		l := second[u]
		links, err := l.Links(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(links) == 1 && links[0].Thread == "t1"; got != wantLink || len(links) > 1 {
			t.Errorf("user %q: links %+v; want a link to t1: %v", u, links, wantLink)
		}
		b := recall(t, bound(t, resourceCfg(0, 0), st, "t2", u), "Publish it now")
		for _, o := range users {
			if o != u && strings.Contains(b, tag[o]) {
				t.Errorf("user %q recalls user %q's entry:\n%s", u, o, b)
			}
		}
		if wantLink != strings.Contains(b, tag[u]) {
			t.Errorf("user %q: recall shows its own launch task: %v, want %v:\n%s", u, !wantLink, wantLink, b)
		}
	}
	check("a", true)
	check("a/b", true)
	check("", false) // no resource: t1 and t2 do not share a log
	storagetest.Erase(t, st, storage.LayerPrefix(episodicmemory.DefaultStorageID, storage.ResourceScope("a")))
	second["a"] = bound(t, resourceCfg(0, 0), st, "t2", "a")
	if links, err := second["a"].Links(ctx); err != nil || len(links) != 0 {
		t.Errorf("erased user a: links %+v, %v; want none", links, err)
	}
	check("a/b", true)
	check("", false)
}

// BenchmarkRecallLinks recalls in a resource's log of 1,000 entries
// written by 4 threads, following links (the default) and not (MaxLinks
// -1): the cost of links in Recall.
func BenchmarkRecallLinks(b *testing.B) {
	st := storage.NewMemoryStore()
	linkBenchLog(b, st)
	for _, links := range []int{0, -1} {
		b.Run(fmt.Sprintf("MaxLinks=%d", links), func(b *testing.B) {
			l := bound(b, resourceCfg(0, links), st, "t0", "u")
			q := layer.Query{Text: "open page-7 again and fix its hero section", Budget: 2000}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Recall(context.Background(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// linkBenchLog writes the benchmarks' log to st: 1,000 entries of user
// "u", 250 by each of 4 threads.
func linkBenchLog(b *testing.B, st storage.Store) {
	for th := range 4 {
		l := bound(b, resourceCfg(0, 0), st, fmt.Sprint("t", th), "u")
		for i := range 250 {
			s := benchStep(i % 50)
			s.Query = fmt.Sprintf("work on page-%d", i%50)
			store(b, l, s)
		}
	}
}
