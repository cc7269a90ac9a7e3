package thread_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres/pgtest"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/thread/threadtest"
)

// backend opens a fresh store of one kind for a test.
type backend struct {
	name string
	open func(t *testing.T) storage.Store
}

// backends are the stores every Catalog test runs on: the in-memory
// store and SQLite always; Redis when MEMLAYER_REDIS_URL names a server
// and PostgreSQL when MEMLAYER_POSTGRES_URL does (.ci/with-redis and
// .ci/with-postgres start throwaway ones); each skips with the reason
// otherwise.
func backends() []backend {
	return []backend{
		{"memory", func(*testing.T) storage.Store { return storage.NewMemoryStore() }},
		{"sqlite", func(t *testing.T) storage.Store {
			st, err := sqlite.Open(t.Context(), sqlite.Config{Path: t.TempDir() + "/threads.db"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"redis", func(t *testing.T) storage.Store {
			u := os.Getenv("MEMLAYER_REDIS_URL")
			if u == "" {
				t.Skip("MEMLAYER_REDIS_URL is unset: run under .ci/with-redis to test on Redis")
			}
			st, err := redis.New(redis.Config{URL: u, Namespace: fmt.Sprintf("catalog-%d:", time.Now().UnixNano())})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"postgres", func(t *testing.T) storage.Store {
			open := pgtest.Opener("catalog")
			if open == nil {
				t.Skip("MEMLAYER_POSTGRES_URL is unset: run under .ci/with-postgres to test on PostgreSQL")
			}
			return open(t, 0)
		}},
	}
}

// onEach runs test on a fresh store of every backend.
func onEach(t *testing.T, test func(t *testing.T, st storage.Store)) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) { test(t, be.open(t)) })
	}
}

// step writes one step of a thread of resource: a user message and an
// answer, after the thread's stored messages. It waits a millisecond
// first, so that each step is newer than the one before.
func step(t *testing.T, st storage.Store, threadID, resource, request string) {
	t.Helper()
	time.Sleep(time.Millisecond)
	l, err := thread.Load(t.Context(), st, threadID)
	if err != nil {
		t.Fatal(err)
	}
	w := thread.NewWriter(st, threadID, l)
	msgs := []thread.Message{{Role: thread.RoleUser, Text: request}, {Role: thread.RoleAssistant, Text: "done: " + request}}
	if err := w.Write(t.Context(), thread.Step{Messages: msgs, ResourceID: resource, Steps: 1}); err != nil {
		t.Fatal(err)
	}
}

// ids returns the thread IDs of a page.
func ids(p thread.Page) []string {
	out := make([]string, len(p.Threads))
	for i, th := range p.Threads {
		out[i] = th.ThreadID
	}
	return out
}

// listAll pages through a resource's threads, limit at a time, and
// returns their IDs; between pages it calls between (when not nil).
func listAll(t *testing.T, c thread.Catalog, resource string, q thread.ListQuery, between func(page int)) []string {
	t.Helper()
	var out []string
	for page := 0; ; page++ {
		p, err := c.List(t.Context(), resource, q)
		if err != nil {
			t.Fatalf("List %q page %d: %v", resource, page, err)
		}
		if len(p.Threads) > q.Limit {
			t.Fatalf("page %d holds %d threads, limit %d", page, len(p.Threads), q.Limit)
		}
		out = append(out, ids(p)...)
		if p.Next == "" {
			return out
		}
		if page > 100 {
			t.Fatal("List never ends")
		}
		if between != nil {
			between(page)
		}
		q.Cursor = p.Next
	}
}

// TestCatalogList: a resource's threads list newest first, page by
// page, filtered by metadata; no page shows another resource's thread,
// whatever the IDs (nested, sharing a prefix, equal to a resource ID);
// a thread written between pages moves to the front and no untouched
// thread shows twice or is skipped.
func TestCatalogList(t *testing.T) {
	onEach(t, func(t *testing.T, st storage.Store) {
		ctx := t.Context()
		c := thread.Catalog{Store: st}
		for i := 1; i <= 5; i++ {
			step(t, st, fmt.Sprintf("t%d", i), "a", fmt.Sprintf("request %d", i))
		}
		step(t, st, "t1/x", "a/b", "nested resource")
		step(t, st, "a", "ab", "prefix resource")
		step(t, st, "anon", "", "no resource")

		if got := listAll(t, c, "a", thread.ListQuery{Limit: 2}, nil); !slices.Equal(got, []string{"t5", "t4", "t3", "t2", "t1"}) {
			t.Errorf("threads of a = %v", got)
		}
		for res, want := range map[string][]string{"a/b": {"t1/x"}, "ab": {"a"}, "b": nil, "t1": nil} {
			if got := listAll(t, c, res, thread.ListQuery{Limit: 10}, nil); !slices.Equal(got, want) {
				t.Errorf("threads of %q = %v, want %v", res, got, want)
			}
		}

		// A thread written between pages moves to the front; the others
		// each show once.
		got := listAll(t, c, "a", thread.ListQuery{Limit: 2}, func(page int) {
			if page == 0 {
				step(t, st, "t2", "a", "again")
			}
		})
		if !slices.Equal(got, []string{"t5", "t4", "t3", "t1"}) {
			t.Errorf("paging while t2 is written: %v", got)
		}
		if p, err := c.List(ctx, "a", thread.ListQuery{Limit: 1}); err != nil || !slices.Equal(ids(p), []string{"t2"}) {
			t.Errorf("newest after the write: %v, %v", ids(p), err)
		}

		// Metadata filter: every entry must match exactly.
		set := func(id string, md map[string]string) {
			if _, err := c.Update(ctx, id, thread.Update{Set: md}); err != nil {
				t.Fatal(err)
			}
		}
		set("t1", map[string]string{"project": "x", "tier": "gold"})
		set("t3", map[string]string{"project": "x"})
		set("t4", map[string]string{"project": "xy"})
		set("t1/x", map[string]string{"project": "x"})
		for _, tc := range []struct {
			filter map[string]string
			want   []string
		}{
			{map[string]string{"project": "x"}, []string{"t3", "t1"}},
			{map[string]string{"project": "x", "tier": "gold"}, []string{"t1"}},
			{map[string]string{"project": ""}, nil},
			{map[string]string{"tier": "silver"}, nil},
		} {
			if got := listAll(t, c, "a", thread.ListQuery{Limit: 1, Metadata: tc.filter}, nil); !slices.Equal(got, tc.want) {
				t.Errorf("filter %v: %v, want %v", tc.filter, got, tc.want)
			}
		}

		// Bad queries are errors that name the problem.
		for _, tc := range []struct {
			res  string
			q    thread.ListQuery
			want error
		}{
			{"", thread.ListQuery{}, thread.ErrInvalidID},
			{"a", thread.ListQuery{Limit: -1}, thread.ErrInvalidQuery},
			{"a", thread.ListQuery{Limit: thread.MaxListLimit + 1}, thread.ErrInvalidQuery},
			{"a", thread.ListQuery{Cursor: "not a cursor"}, thread.ErrInvalidQuery},
			{"a", thread.ListQuery{Cursor: "e30"}, thread.ErrInvalidQuery}, // "{}"
		} {
			if _, err := c.List(ctx, tc.res, tc.q); !errors.Is(err, tc.want) {
				t.Errorf("List(%q, %+v) = %v, want %v", tc.res, tc.q, err, tc.want)
			}
		}
	})
}

// TestCatalogOddIDs: thread IDs that are not UTF-8, hold line breaks or
// escape characters list, page by cursor and read back as themselves.
func TestCatalogOddIDs(t *testing.T) {
	onEach(t, func(t *testing.T, st storage.Store) {
		odd := []string{"\xff\xfe", "\ufffd\ufffd", "x\ny", "%", "%25", "a/../b"}
		for _, id := range odd {
			step(t, st, id, "r", "request of "+id)
		}
		c := thread.Catalog{Store: st}
		got := listAll(t, c, "r", thread.ListQuery{Limit: 1}, nil)
		want := slices.Clone(odd)
		slices.Reverse(want) // newest first
		if !slices.Equal(got, want) {
			t.Errorf("odd IDs listed as %q", got)
		}
		for _, id := range odd {
			if th, err := c.Get(t.Context(), id); err != nil || th.ThreadID != id || th.Messages != 2 {
				t.Errorf("Get(%q) = %+v, %v", id, th, err)
			}
		}
	})
}

// TestCatalogTitle: a thread's title is derived from its first user
// request and kept across steps; a title set replaces it, an empty one
// brings it back; a bad title is refused and the old one stays.
func TestCatalogTitle(t *testing.T) {
	onEach(t, func(t *testing.T, st storage.Store) {
		ctx := t.Context()
		c := thread.Catalog{Store: st}
		step(t, st, "t", "r", "Create an About page for the\n\tACME site, with the team's photos and a contact form below")
		step(t, st, "t", "r", "a later request")
		th, err := c.Get(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if want := "Create an About page for the ACME site, with the team's…"; th.Title != want || th.TitleSet {
			t.Errorf("derived title %q (set %v), want %q", th.Title, th.TitleSet, want)
		}
		title := "About page"
		if th, err = c.Update(ctx, "t", thread.Update{Title: &title}); err != nil || th.Title != title || !th.TitleSet {
			t.Fatalf("set title: %+v, %v", th, err)
		}
		step(t, st, "t", "r", "one more")
		for _, bad := range []string{"two\nlines", strings.Repeat("x", thread.MaxTitleLen+1), "\xff"} {
			if _, err := c.Update(ctx, "t", thread.Update{Title: &bad}); !errors.Is(err, thread.ErrInvalidMeta) {
				t.Errorf("title %q: %v, want ErrInvalidMeta", bad, err)
			}
		}
		if th, err = c.Get(ctx, "t"); err != nil || th.Title != title || th.Messages != 6 {
			t.Errorf("after a step and bad titles: %+v, %v", th, err)
		}
		empty := ""
		if th, err = c.Update(ctx, "t", thread.Update{Title: &empty}); err != nil || th.TitleSet || !strings.HasPrefix(th.Title, "Create an About page") {
			t.Errorf("title cleared: %+v, %v", th, err)
		}
		if _, err := c.Get(ctx, "none"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Get of no thread: %v", err)
		}
	})
}

// TestCatalogMetadata: metadata set by many writers at once keeps every
// write; a thread no run stored yet needs a resource, then lists, and
// its first run keeps its title; bad input writes nothing; a thread of
// another resource cannot be claimed.
func TestCatalogMetadata(t *testing.T) {
	onEach(t, func(t *testing.T, st storage.Store) {
		ctx := t.Context()
		c := thread.Catalog{Store: st}
		title := "Planned"
		if _, err := c.Update(ctx, "new", thread.Update{Title: &title}); !errors.Is(err, thread.ErrNoResource) {
			t.Errorf("update of a thread with no resource: %v", err)
		}
		if keys, _ := st.List(ctx, ""); len(keys) != 0 {
			t.Errorf("a refused update wrote %v", keys)
		}
		th, err := c.Update(ctx, "new", thread.Update{ResourceID: "r", Title: &title, Set: map[string]string{"k": "v"}})
		if err != nil || th.ResourceID != "r" || th.Title != title || th.Metadata["k"] != "v" || th.Version != 0 {
			t.Fatalf("create: %+v, %v", th, err)
		}
		if p, err := c.List(ctx, "r", thread.ListQuery{}); err != nil || !slices.Equal(ids(p), []string{"new"}) {
			t.Errorf("list before the first run: %v, %v", ids(p), err)
		}
		if p, err := c.Messages(ctx, "new", thread.MessageQuery{}); err != nil || p.Total != 0 || len(p.Messages) != 0 {
			t.Errorf("messages before the first run: %+v, %v", p, err)
		}
		step(t, st, "new", "r", "first run")
		if th, err = c.Get(ctx, "new"); err != nil || th.Title != title || th.Messages != 2 {
			t.Errorf("after the first run: %+v, %v", th, err)
		}
		if _, err := c.Update(ctx, "new", thread.Update{ResourceID: "other"}); !errors.Is(err, thread.ErrOtherOwner) {
			t.Errorf("claim by another resource: %v", err)
		}

		// Concurrent writers, each its own key, on one thread and on
		// several threads of one resource (one list).
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 8 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, err := c.Update(ctx, "new", thread.Update{Set: map[string]string{fmt.Sprint("w", i): "x"}})
				errs <- err
			}()
			go func() {
				defer wg.Done()
				_, err := c.Update(ctx, fmt.Sprint("c", i), thread.Update{ResourceID: "r", Set: map[string]string{"n": fmt.Sprint(i)}})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		th, _ = c.Get(ctx, "new")
		if len(th.Metadata) != 9 {
			t.Errorf("after 8 concurrent writers: %v", th.Metadata)
		}
		if got := listAll(t, c, "r", thread.ListQuery{Limit: 3}, nil); len(got) != 9 {
			t.Errorf("threads after 8 concurrent creations: %v", got)
		}

		// Bad IDs are ErrInvalidID and write nothing.
		long := strings.Repeat("x", thread.MaxIDLen+1)
		for _, tc := range []struct {
			id string
			u  thread.Update
		}{{"", thread.Update{ResourceID: "r"}}, {long, thread.Update{ResourceID: "r"}}, {"fresh", thread.Update{ResourceID: long}}} {
			if _, err := c.Update(ctx, tc.id, tc.u); !errors.Is(err, thread.ErrInvalidID) {
				t.Errorf("Update(%.20q, %.20v): %v, want ErrInvalidID", tc.id, tc.u, err)
			}
		}
		if _, err := c.Get(ctx, ""); !errors.Is(err, thread.ErrInvalidID) {
			t.Errorf("Get of an empty ID: %v", err)
		}
		if _, err := c.Messages(ctx, long, thread.MessageQuery{}); !errors.Is(err, thread.ErrInvalidID) {
			t.Errorf("Messages of a long ID: %v", err)
		}
		if _, err := c.Get(ctx, "fresh"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("a refused update stored the thread: %v", err)
		}

		// Bad metadata writes nothing.
		too := map[string]string{}
		for i := range thread.MaxMetadataKeys {
			too[fmt.Sprint("m", i)] = "v"
		}
		for _, u := range []thread.Update{
			{Set: map[string]string{"": "v"}},
			{Set: map[string]string{"k": strings.Repeat("v", thread.MaxMetadataValueLen+1)}},
			{Set: map[string]string{"k\n": "v"}},
			{Unset: []string{""}},
			{Set: too}, // 64 new keys on 9 is more than 64
		} {
			if _, err := c.Update(ctx, "new", u); !errors.Is(err, thread.ErrInvalidMeta) {
				t.Errorf("update %v: %v, want ErrInvalidMeta", u, err)
			}
		}
		if after, _ := c.Get(ctx, "new"); len(after.Metadata) != 9 || after.Title != title {
			t.Errorf("bad updates changed the thread: %+v", after)
		}
		if th, err = c.Update(ctx, "new", thread.Update{Unset: []string{"k", "w0", "absent"}}); err != nil || len(th.Metadata) != 7 {
			t.Errorf("unset: %v, %v", th.Metadata, err)
		}
	})
}

// TestCatalogMessages: a thread's messages page by index, from the start
// or from the end; a page stays right while runs append; a page before
// what retention kept starts at the first message kept.
func TestCatalogMessages(t *testing.T) {
	onEach(t, func(t *testing.T, st storage.Store) {
		ctx := t.Context()
		c := thread.Catalog{Store: st}
		for i := range 4 {
			step(t, st, "t", "r", fmt.Sprint("request ", i))
		}
		var got []string
		for from := 0; ; {
			p, err := c.Messages(ctx, "t", thread.MessageQuery{From: from, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			total := 8
			if from >= 3 {
				total = 10 // a step was appended after the first page
			}
			if p.First != from || p.Total != total || p.Next != min(from+3, total) || len(p.Messages) != p.Next-p.First {
				t.Fatalf("page from %d: first %d next %d total %d, %d messages", from, p.First, p.Next, p.Total, len(p.Messages))
			}
			for _, m := range p.Messages {
				got = append(got, m.Text)
			}
			if p.Next == p.Total {
				break
			}
			from = p.Next
			if from == 3 {
				step(t, st, "t", "r", "appended while paging")
			}
		}
		if len(got) != 10 || got[0] != "request 0" || got[7] != "done: request 3" || got[8] != "appended while paging" {
			t.Errorf("pages: %q", got)
		}
		last, err := c.Messages(ctx, "t", thread.MessageQuery{From: -2})
		if err != nil || last.First != 8 || len(last.Messages) != 2 || last.Messages[0].Text != "appended while paging" {
			t.Errorf("last two: %+v, %v", last, err)
		}
		for _, q := range []thread.MessageQuery{{Limit: -1}, {Limit: thread.MaxMessageLimit + 1}} {
			if _, err := c.Messages(ctx, "t", q); !errors.Is(err, thread.ErrInvalidQuery) {
				t.Errorf("%+v: %v", q, err)
			}
		}
		if _, err := c.Messages(ctx, "none", thread.MessageQuery{}); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("messages of no thread: %v", err)
		}

		// Retention deletes what a summary covers but the last two.
		l, err := thread.Load(ctx, st, "t")
		if err != nil {
			t.Fatal(err)
		}
		w := thread.NewWriter(st, "t", l)
		err = w.Write(ctx, thread.Step{ResourceID: "r", Messages: []thread.Message{{Role: thread.RoleUser, Text: "last"}},
			Summary: &thread.Summary{Version: 1, Covers: 10, Text: "all of it"}, Retain: 1})
		if err != nil {
			t.Fatal(err)
		}
		p, err := c.Messages(ctx, "t", thread.MessageQuery{})
		if err != nil || p.Retained == 0 || p.First != p.Retained || p.Total != 11 || p.Messages[len(p.Messages)-1].Text != "last" {
			t.Errorf("after retention: %+v, %v", p, err)
		}
	})
}

// TestCatalogDelete: deleting a thread removes all it owns and takes it
// out of its resource's list, and leaves the threads whose IDs nest in
// it or share its prefix, with their layer state; erasing the resource
// deletes its list.
func TestCatalogDelete(t *testing.T) {
	onEach(t, func(t *testing.T, st storage.Store) {
		ctx := t.Context()
		c := thread.Catalog{Store: st}
		in := inspect.Inspector{Store: st}
		for _, id := range []string{"a", "a/b", "ab"} {
			step(t, st, id, "r", "request of "+id)
			if _, err := c.Update(ctx, id, thread.Update{Set: map[string]string{"id": id}}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Put(ctx, storage.LayerKey("kv", storage.ThreadScope(id), "state"), []byte(`{}`), storage.NoVersion); err != nil {
				t.Fatal(err)
			}
		}
		step(t, st, "other", "r2", "another user")
		e, err := in.DeleteThread(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if e.Counts["thread.meta"] != 1 || e.Counts["thread.head"] != 1 || e.Counts["layer.kv"] != 1 {
			t.Errorf("deleted %v", e.Counts)
		}
		if got := listAll(t, c, "r", thread.ListQuery{Limit: 10}, nil); !slices.Equal(got, []string{"ab", "a/b"}) {
			t.Errorf("threads after deleting a: %v", got)
		}
		if _, err := c.Get(ctx, "a"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("Get of the deleted thread: %v", err)
		}
		if keys, _ := st.List(ctx, storage.ThreadPrefix("a")); len(keys) != 0 {
			t.Errorf("records of the deleted thread left: %v", keys)
		}
		for _, id := range []string{"a/b", "ab"} {
			th, err := c.Get(ctx, id)
			if err != nil || th.Metadata["id"] != id || th.Messages != 2 {
				t.Errorf("%s after deleting a: %+v, %v", id, th, err)
			}
			if _, err := st.Get(ctx, storage.LayerKey("kv", storage.ThreadScope(id), "state")); err != nil {
				t.Errorf("%s's layer state: %v", id, err)
			}
		}

		e, err = in.EraseResource(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		if e.Counts["resource.threads"] != 1 {
			t.Errorf("erase removed %v", e.Counts)
		}
		if _, err := st.Get(ctx, thread.IndexKey("r")); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("the list of the erased resource: %v", err)
		}
		if p, err := c.List(ctx, "r", thread.ListQuery{}); err != nil || len(p.Threads) != 0 {
			t.Errorf("threads of the erased resource: %v, %v", ids(p), err)
		}
		if p, err := c.List(ctx, "r2", thread.ListQuery{}); err != nil || !slices.Equal(ids(p), []string{"other"}) {
			t.Errorf("threads of another resource after the erase: %v, %v", ids(p), err)
		}
	})
}

// TestCatalogFrozen: threads of every stored version, written before
// the lists of threads were kept, list under their owner once the store
// is reindexed (List does it on first use), with the title derived from
// their first request, and their messages page.
func TestCatalogFrozen(t *testing.T) {
	onEach(t, func(t *testing.T, st storage.Store) {
		ctx := t.Context()
		c := thread.Catalog{Store: st}
		var want []string
		for v := 1; v <= thread.Version; v++ {
			id := fmt.Sprint("v", v)
			threadtest.Put(t, st, id, threadtest.Frozen(t, v))
			if err := thread.ClaimOwner(ctx, st, id, "r"); err != nil {
				t.Fatal(err)
			}
			want = append(want, id)
		}
		got := listAll(t, c, "r", thread.ListQuery{Limit: 3}, nil)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("frozen threads listed: %v", got)
		}
		for _, id := range want {
			th, err := c.Get(ctx, id)
			if err != nil || th.Title != "Create an About page" || th.TitleSet || th.Metadata != nil {
				t.Errorf("%s: %+v, %v", id, th, err)
			}
			p, err := c.Messages(ctx, id, thread.MessageQuery{From: 1, Limit: 2})
			if err != nil || p.First != 1 || len(p.Messages) != 2 || p.Total != th.Messages {
				t.Errorf("%s: messages %+v, %v", id, p, err)
			}
		}
	})
}

// TestDeriveTitle: titles are short, single-line, cut on a word.
func TestDeriveTitle(t *testing.T) {
	long := strings.Repeat("word ", 30)
	for _, tc := range []struct{ in, want string }{
		{"  Hello\n\tworld  ", "Hello world"},
		{"", ""},
		{"\u202eevil\u200b text\x07", "evil text"},
		{long, strings.TrimSpace(strings.Repeat("word ", 12)) + "…"},
		{strings.Repeat("é", 100), strings.Repeat("é", thread.DerivedTitleRunes-1) + "…"},
	} {
		got := thread.DeriveTitle(tc.in)
		if got != tc.want {
			t.Errorf("DeriveTitle(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if n := len([]rune(got)); n > thread.DerivedTitleRunes {
			t.Errorf("DeriveTitle(%q) is %d runes", tc.in, n)
		}
	}
}

// FuzzDeriveTitle: a title is valid UTF-8 with no control character,
// at most DerivedTitleRunes runes, and the same for the same text.
func FuzzDeriveTitle(f *testing.F) {
	f.Add("Create an About page")
	f.Add(strings.Repeat("ab ", 40))
	f.Fuzz(func(t *testing.T, s string) {
		got := thread.DeriveTitle(s)
		if got != thread.DeriveTitle(s) || utf8.RuneCountInString(got) > thread.DerivedTitleRunes || !utf8.ValidString(got) ||
			strings.ContainsFunc(got, unicode.IsControl) {
			t.Errorf("DeriveTitle(%q) = %q", s, got)
		}
	})
}

// FuzzListCursor: a cursor List did not return is ErrInvalidQuery, or
// positions the page; it never panics or reaches another resource.
func FuzzListCursor(f *testing.F) {
	st := storage.NewMemoryStore()
	for _, id := range []string{"a", "b", "c"} {
		w := thread.NewWriter(st, id, nil)
		if err := w.Write(context.Background(), thread.Step{ResourceID: "r", Messages: []thread.Message{{Role: thread.RoleUser, Text: id}}}); err != nil {
			f.Fatal(err)
		}
	}
	w := thread.NewWriter(st, "other", nil)
	if err := w.Write(context.Background(), thread.Step{ResourceID: "r2", Messages: []thread.Message{{Role: thread.RoleUser, Text: "x"}}}); err != nil {
		f.Fatal(err)
	}
	c := thread.Catalog{Store: st}
	p, err := c.List(context.Background(), "r", thread.ListQuery{Limit: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p.Next)
	f.Add("")
	f.Add("e30")
	f.Add("eyJ0IjoxLCJpZCI6IiUifQ") // {"t":1,"id":"%"}
	f.Fuzz(func(t *testing.T, cur string) {
		p, err := c.List(t.Context(), "r", thread.ListQuery{Cursor: cur})
		if err != nil {
			if !errors.Is(err, thread.ErrInvalidQuery) {
				t.Errorf("cursor %q: %v", cur, err)
			}
			return
		}
		for _, th := range p.Threads {
			if th.ResourceID != "r" || th.ThreadID == "other" {
				t.Errorf("cursor %q listed %+v", cur, th)
			}
		}
	})
}
