package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/storage"
)

// searchStore returns a Store on the test server under a fresh namespace,
// through a client whose commands and replies counter records, and
// deletes the namespace's keys when the test ends.
func searchStore(t *testing.T) (*Store, *counter) {
	t.Helper()
	url := os.Getenv("MEMLAYER_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MEMLAYER_REDIS_URL is not set")
		}
		t.Skip("MEMLAYER_REDIS_URL is not set")
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opts.ContextTimeoutEnabled = true
	client := goredis.NewClient(opts)
	c := &counter{}
	client.AddHook(c)
	ns := "memlayer-test:search:" + strings.ReplaceAll(t.Name(), "/", "-") + ":" + time.Now().Format("150405.000000") + ":"
	s, err := New(Config{Client: client, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		iter := client.Scan(ctx, 0, globEscape(ns)+"*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		s.Close()
		client.Close()
	})
	return s, c
}

// counter is a go-redis hook that counts what queries read: the values
// of every reply, and the IDs HMGET asks for.
type counter struct {
	mu       sync.Mutex
	returned int // values of replies, nested lists flattened
	fetched  int // fields of HMGETs
}

// replySize counts the values of a command's reply.
func replySize(cmd goredis.Cmder) int {
	switch c := cmd.(type) {
	case *goredis.Cmd:
		return flat(c.Val())
	case *goredis.SliceCmd:
		return len(c.Val())
	case *goredis.StringSliceCmd:
		return len(c.Val())
	case *goredis.MapStringStringCmd:
		return 2 * len(c.Val())
	case *goredis.ZSliceCmd:
		return 2 * len(c.Val())
	}
	return 1
}

func flat(v any) int {
	l, ok := v.([]any)
	if !ok {
		return 1
	}
	n := 0
	for _, x := range l {
		n += flat(x)
	}
	return n
}

func (c *counter) reset() (returned, fetched int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	returned, fetched = c.returned, c.fetched
	c.returned, c.fetched = 0, 0
	return returned, fetched
}

func (c *counter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *counter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		err := next(ctx, cmd)
		c.count(cmd)
		return err
	}
}

func (c *counter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return err
	}
}

func (c *counter) count(cmd goredis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cmd.Name() == "hmget" {
		c.fetched += len(cmd.Args()) - 2
	}
	c.returned += replySize(cmd)
}

// calls returns the server's count of calls of each command named, from
// INFO commandstats; commands that Lua scripts run count too.
func calls(t *testing.T, s *Store, names ...string) map[string]int {
	t.Helper()
	info, err := s.client.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, n := range names {
		m := regexp.MustCompile(`cmdstat_` + n + `:calls=(\d+)`).FindStringSubmatch(info)
		if m != nil {
			out[n], _ = strconv.Atoi(m[1])
		}
	}
	return out
}

func indexAll(t *testing.T, ix storage.Searcher, c string, docs []storage.Document) {
	t.Helper()
	for len(docs) > 0 {
		n := min(len(docs), 500)
		if err := ix.Index(t.Context(), c, docs[:n]...); err != nil {
			t.Fatal(err)
		}
		docs = docs[n:]
	}
}

// sameHits fails the test unless a and b hold the same IDs in the same
// order with the same scores.
func sameHits(t *testing.T, what string, got, want []storage.Hit) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d hits, MemoryIndex %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if got[i].ID != want[i].ID || math.Abs(got[i].Score-want[i].Score) > 1e-9 {
			t.Errorf("%s: hit %d = %s %.6f, MemoryIndex %s %.6f", what, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
		}
	}
}

// TestSearchFindsOldRareTermDocument: a term in more documents than a
// query reads is read from its newest, but a document found by a rarer
// term of the query is scored in full, the common term included.
func TestSearchFindsOldRareTermDocument(t *testing.T) {
	s, _ := searchStore(t)
	var mem storage.MemoryIndex
	ctx := t.Context()
	c := storage.IndexName("notes", storage.ResourceScope("u1"), "docs")
	docs := []storage.Document{{ID: "old", Text: "Pricing page for Lisbon"}}
	for i := range 1000 {
		docs = append(docs, storage.Document{ID: fmt.Sprintf("d%04d", i), Text: fmt.Sprintf("pricing page %d", i)})
	}
	indexAll(t, s, c, docs)
	indexAll(t, &mem, c, docs)
	q := storage.Query{Text: "pricing Lisbon", K: 5}
	got, err := s.Search(ctx, c, q)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := mem.Search(ctx, c, q)
	if len(got) == 0 || got[0].ID != "old" {
		t.Fatalf("%q = %v, want the old document first", q.Text, got)
	}
	sameHits(t, q.Text, got[:1], want[:1])

	// A document holding only the common term, older than its newest
	// postings, is not found: the documented bound.
	got, err = s.Search(ctx, c, storage.Query{Text: "pricing", K: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 10 || slices.ContainsFunc(got, func(h storage.Hit) bool { return h.ID == "old" }) || got[0].ID != "d0999" {
		t.Errorf("pricing = %v, want the 10 newest", got)
	}
}

// TestSearchReadsBounded: what a query reads does not grow with the
// documents that match it or fail its filter.
func TestSearchReadsBounded(t *testing.T) {
	s, cnt := searchStore(t)
	ctx := t.Context()
	c := storage.IndexName("notes", storage.ResourceScope("u1"), "docs")
	var docs []storage.Document
	for i := range 3000 {
		kind := "bulk"
		if i%300 == 7 {
			kind = "rare"
		}
		f := map[string]string{"kind": kind}
		if i == 0 {
			f["mark"] = "1"
		}
		docs = append(docs, storage.Document{ID: fmt.Sprintf("d%04d", i), Text: fmt.Sprintf("common word%d", i%50), Fields: f})
	}
	indexAll(t, s, c, docs)
	for _, tc := range []struct {
		name              string
		q                 storage.Query
		hits              int
		returned, fetched int // at most: reply values, documents
		zscores, hgets    int // at most, on the server
	}{
		{"common term", storage.Query{Text: "common", K: 10}, 10, 2*postingsPerTerm + 4*rescored, 2 * rescored, 0, 0},
		{"common terms", storage.Query{Text: "common word3 word4", K: 10}, 10, 6*postingsPerTerm + 4*rescored, 2 * rescored, 0, 0},
		{"marker", storage.Query{Filter: map[string]string{"mark": "1"}, K: 1}, 1, 8, 1, 0, 0},
		{"oldest of a kind", storage.Query{Filter: map[string]string{"kind": "rare"}, K: 3, Oldest: true}, 3, 12, 3, 0, 0},
		{"common term, rare kind", storage.Query{Text: "common", Filter: map[string]string{"kind": "rare"}, K: 5}, 5, 40, 10, 0, 10},
		{"two filters", storage.Query{Filter: map[string]string{"mark": "1", "kind": "bulk"}, K: 5}, 1, 8, 1, 1, 0},
	} {
		// The server's command counts are the whole server's: other
		// packages' tests share it (make test runs them at once), and
		// their calls only add. The least of three runs of the query is
		// its own.
		var got []storage.Hit
		var returned, fetched int
		z, h := math.MaxInt, math.MaxInt
		for range 3 {
			before := calls(t, s, "zscore", "hget")
			cnt.reset()
			var err error
			if got, err = s.Search(ctx, c, tc.q); err != nil {
				t.Fatal(err)
			}
			returned, fetched = cnt.reset()
			after := calls(t, s, "zscore", "hget")
			// The server's counts include the query script's own HGETs
			// of the collection's stats (2).
			z, h = min(z, after["zscore"]-before["zscore"]), min(h, after["hget"]-before["hget"]-2)
		}
		if len(got) != tc.hits {
			t.Errorf("%s: %d hits, want %d", tc.name, len(got), tc.hits)
		}
		if returned > tc.returned || fetched > tc.fetched {
			t.Errorf("%s: read %d reply values and %d documents, want at most %d and %d", tc.name, returned, fetched, tc.returned, tc.fetched)
		}
		if z > tc.zscores || h > tc.hgets {
			t.Errorf("%s: %d ZSCOREs and %d HGETs on the server, want at most %d and %d", tc.name, z, h, tc.zscores, tc.hgets)
		}
	}
}

// oldIndexScript is the index script of the earlier layout (one hash of
// postings per term, no field sets), which TestSearchConvertsEarlierLayout
// writes with.
var oldIndexScript = goredis.NewScript(`
local p = ARGV[1]
local function remove(id)
  local old = redis.call('HGET', p..'k', id)
  if not old then return end
  local first = true
  for line in string.gmatch(old, '[^\n]+') do
    if first then
      local n = tonumber(line)
      if n ~= 0 then redis.call('HINCRBY', p..'s', 'total', 0 - n) end
      first = false
    else
      local tk = p..'t:'..line
      redis.call('HDEL', tk, id)
      if redis.call('EXISTS', tk) == 0 then redis.call('SREM', p..'T', line) end
    end
  end
  redis.call('HDEL', p..'k', id)
  redis.call('HDEL', p..'d', id)
  redis.call('ZREM', p..'r', id)
end
if ARGV[2] == 'u' then
  for i = 3, #ARGV do remove(ARGV[i]) end
  if redis.call('EXISTS', p..'r') == 0 then redis.call('DEL', p..'s', p..'T') end
  return redis.call('ZCARD', p..'r')
end
for i = 3, #ARGV, 4 do
  local id, body, len, terms = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3]
  remove(id)
  local seq = redis.call('HINCRBY', p..'s', 'seq', 1)
  redis.call('HINCRBY', p..'s', 'total', tonumber(len))
  redis.call('HSET', p..'d', id, body)
  redis.call('ZADD', p..'r', seq, id)
  local list = {len}
  for term, tf in string.gmatch(terms, '([^\t\n]+)\t(%d+)') do
    redis.call('HSET', p..'t:'..term, id, tf..' '..len..' '..seq)
    redis.call('SADD', p..'T', term)
    list[#list+1] = term
  end
  redis.call('HSET', p..'k', id, table.concat(list, '\n'))
end
return redis.call('ZCARD', p..'r')
`)

// oldIndex indexes docs as the earlier version did.
func oldIndex(t testing.TB, s *Store, c string, docs ...storage.Document) {
	t.Helper()
	p := s.searchPrefix(c)
	args := []any{p, "i"}
	var lines strings.Builder
	for _, d := range docs {
		terms := lexical.Terms(nil, d.Text)
		indexLines(&lines, terms, nil)
		b, err := json.Marshal(body{Text: d.Text, Fields: d.Fields, Vector: d.Vector})
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, d.ID, b, strconv.Itoa(len(terms)), lines.String())
	}
	if err := s.client.ZAdd(t.Context(), s.registry(), goredis.Z{Member: c}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := oldIndexScript.Run(t.Context(), s.client, []string{p + "r"}, args...).Err(); err != nil {
		t.Fatal(err)
	}
}

// indexKeys returns the server's keys of the collection of prefix p.
func indexKeys(t *testing.T, s *Store, p string) []string {
	t.Helper()
	keys, err := s.client.Keys(t.Context(), globEscape(p)+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// TestSearchConvertsEarlierLayout: a collection an earlier version wrote
// (postings in hashes, no field sets) is converted by its first query,
// a batch at a time, writes between batches included, and then ranks
// as storage.MemoryIndex does; nothing of the earlier layout is left,
// and Drop leaves no key.
func TestSearchConvertsEarlierLayout(t *testing.T) {
	s, _ := searchStore(t)
	ctx := t.Context()
	words := []string{"pricing", "page", "nonprofit", "tier", "hero", "banner", "draft", "published", "Lisbon", "café", "footer", "gallery", "webinar", "roadmap", "careers", "partner", "launch", "brand", "review", "invoice"}
	kinds := []string{"a", "b<&>", "c é\u2028"} // values JSON escapes
	var docs []storage.Document
	for i := range 200 {
		text := ""
		for j := range 1 + i%7 {
			text += words[(i*(j+3)+j*j)%len(words)] + " "
		}
		docs = append(docs, storage.Document{ID: fmt.Sprintf("d%03d", i), Text: text, Fields: map[string]string{"kind": kinds[i%3]}})
	}
	queries := []storage.Query{
		{Text: "pricing page", K: 50},
		{Text: "Café nonprofit tiers", K: 20},
		{Text: "published", Filter: map[string]string{"kind": "b<&>"}, K: 20},
		{K: 30},
		{K: 30, Oldest: true, Filter: map[string]string{"kind": "c é\u2028"}},
	}
	// Every term is in fewer documents than a query reads of it, so the
	// ranking is exact.
	check := func(what, c string, mem *storage.MemoryIndex) {
		t.Helper()
		for _, q := range queries {
			got, err := s.Search(ctx, c, q)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := mem.Search(ctx, c, q)
			sameHits(t, fmt.Sprintf("%s, %+v", what, q), got, want)
		}
	}
	defer func(n int) { convertBatch = n }(convertBatch)
	convertBatch = 7 // many batches, and writes between them
	for _, first := range []string{"search", "index", "unindex"} {
		c := storage.IndexName("notes", storage.ResourceScope("u-"+first), "docs")
		p := s.searchPrefix(c)
		var mem storage.MemoryIndex
		oldIndex(t, s, c, docs[:140]...)
		oldIndex(t, s, c, docs[100:]...) // replaces 100-139
		indexAll(t, &mem, c, docs[:140])
		indexAll(t, &mem, c, docs[100:])
		if err := oldIndexScript.Run(ctx, s.client, []string{p + "r"}, p, "u", "d003").Err(); err != nil {
			t.Fatal(err)
		}
		mem.Unindex(ctx, c, "d003")
		if keys := indexKeys(t, s, p+"t:"); len(keys) == 0 {
			t.Fatal("the earlier layout wrote no posting hash")
		}
		if first != "search" {
			// Two batches converted, then writes to documents of both
			// layouts.
			for range 2 {
				if err := indexScript.Run(ctx, s.client, []string{p + "r"}, p, "m", convertBatch).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		switch first {
		case "index":
			ds := []storage.Document{
				{ID: "new", Text: "a new pricing page", Fields: map[string]string{"kind": "a"}},
				{ID: "d000", Text: "converted, replaced", Fields: map[string]string{"kind": "b<&>"}},
				{ID: "d100", Text: "not converted, replaced page", Fields: map[string]string{"kind": "a"}},
			}
			if err := s.Index(ctx, c, ds...); err != nil {
				t.Fatal(err)
			}
			mem.Index(ctx, c, ds...)
		case "unindex":
			if err := s.Unindex(ctx, c, "d002", "d120"); err != nil {
				t.Fatal(err)
			}
			mem.Unindex(ctx, c, "d002", "d120")
		}
		check(first+" first", c, &mem)
		if v, err := s.client.HGet(ctx, p+"s", "v").Result(); err != nil || v != layoutVersion {
			t.Errorf("%s first: layout version %q, %v; want %s", first, v, err, layoutVersion)
		}
		if keys := indexKeys(t, s, p+"t:"); len(keys) != 0 {
			t.Errorf("%s first: %d posting hashes of the earlier layout left", first, len(keys))
		}
		// The converted collection takes writes of the new layout.
		if err := s.Unindex(ctx, c, "d001", "d199"); err != nil {
			t.Fatal(err)
		}
		mem.Unindex(ctx, c, "d001", "d199")
		indexAll(t, s, c, docs[:20])
		indexAll(t, &mem, c, docs[:20])
		check(first+" first, then written", c, &mem)
		if err := s.Drop(ctx, c); err != nil {
			t.Fatal(err)
		}
		if keys := indexKeys(t, s, p); len(keys) != 0 {
			t.Errorf("%s first: keys left after Drop: %q", first, keys)
		}
	}
	// Dropped halfway through its conversion, a collection leaves no key.
	c := storage.IndexName("notes", storage.ResourceScope("u-drop"), "docs")
	p := s.searchPrefix(c)
	oldIndex(t, s, c, docs...)
	if err := indexScript.Run(ctx, s.client, []string{p + "r"}, p, "m", convertBatch).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.DropIndexes(ctx, s, storage.LayerPrefix("notes", storage.ResourceScope("u-drop"))); err != nil {
		t.Fatal(err)
	}
	if keys := indexKeys(t, s, p); len(keys) != 0 {
		t.Errorf("keys left after dropping a collection halfway converted: %q", keys)
	}
}

// TestSearchEraseLeavesNoTermKeys: erasing a user's collections
// (DropIndexes of the scope's prefix) leaves none of its term or field
// sets, and nothing of a user whose ID extends it ("a" and "a/b") or
// of an anonymous thread is touched.
func TestSearchEraseLeavesNoTermKeys(t *testing.T) {
	s, _ := searchStore(t)
	ctx := t.Context()
	scopes := []string{storage.ResourceScope("a"), storage.ResourceScope("a/b"), storage.AnonymousScope(""), storage.ThreadScope("")}
	var cols []string
	for _, sc := range scopes {
		for _, layer := range []string{"episodic", "semantic"} {
			c := storage.IndexName(layer, sc, "docs")
			cols = append(cols, c)
			var docs []storage.Document
			for i := range 50 {
				docs = append(docs, storage.Document{ID: fmt.Sprintf("%d", i), Text: fmt.Sprintf("shared words of note %d for %s", i, sc), Fields: map[string]string{"kind": strconv.Itoa(i % 4), "scope": sc}})
			}
			indexAll(t, s, c, docs)
		}
	}
	all := func() []string {
		keys, err := s.client.Keys(ctx, globEscape(s.ns+"\x00")+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		return keys
	}
	for i, sc := range scopes {
		for _, layer := range []string{"episodic", "semantic"} {
			if _, err := storage.DropIndexes(ctx, s, storage.LayerPrefix(layer, sc)); err != nil {
				t.Fatal(err)
			}
		}
		for j, c := range cols {
			keys := indexKeys(t, s, s.searchPrefix(c))
			erased := j/2 <= i
			if erased && len(keys) != 0 {
				t.Errorf("after erasing %q: %d keys of %s left: %q", sc, len(keys), c, keys)
			}
			if !erased {
				if !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "/z:shar") }) || !slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(k, "/f:") }) {
					t.Errorf("after erasing %q: the term and field sets of %s are gone: %q", sc, c, keys)
				}
				hits, err := s.Search(ctx, c, storage.Query{Text: "shared note", Filter: map[string]string{"kind": "1"}, K: 50})
				if err != nil || len(hits) != 13 {
					t.Errorf("after erasing %q: %s has %d hits, %v; want 13", sc, c, len(hits), err)
				}
			}
		}
	}
	if keys := all(); len(keys) != 0 {
		t.Errorf("keys left after erasing every user: %q", keys)
	}
}

// BenchmarkRedisConvert100k converts a collection of 100,000 documents
// of the earlier layout (12 words and one field each): the one script a
// collection's first use runs, which blocks the server meanwhile.
func BenchmarkRedisConvert100k(b *testing.B) {
	url := os.Getenv("MEMLAYER_REDIS_URL")
	if url == "" {
		b.Skip("MEMLAYER_REDIS_URL is not set")
	}
	s, err := New(Config{URL: url, Namespace: "memlayer-test:convert:" + time.Now().Format("150405.000000") + ":"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := b.Context()
	defer func() {
		iter := s.client.Scan(context.Background(), 0, globEscape(s.ns)+"*", 1000).Iterator()
		for iter.Next(context.Background()) {
			s.client.Del(context.Background(), iter.Val())
		}
		s.Close()
	}()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		c := storage.IndexName("notes", storage.ResourceScope("u"+strconv.Itoa(i)), "docs")
		batch := make([]storage.Document, 0, 500)
		for d := range 100_000 {
			var text strings.Builder
			for w := range 12 {
				fmt.Fprintf(&text, "w%d ", (d*(w+7)+w*w)%5000)
			}
			batch = append(batch, storage.Document{ID: fmt.Sprintf("doc-%06d", d), Text: text.String(), Fields: map[string]string{"kind": strconv.Itoa(d % 2)}})
			if len(batch) == cap(batch) {
				oldIndex(b, s, c, batch...)
				batch = batch[:0]
			}
		}
		b.StartTimer()
		hits, err := s.Search(ctx, c, storage.Query{Text: "w17", K: 10})
		if err != nil || len(hits) == 0 {
			b.Fatalf("search after converting: %d hits, %v", len(hits), err)
		}
	}
}
