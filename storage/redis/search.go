package redis

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/storage"
)

// The search index is an inverted index kept in Redis beside the records.
// The keys of one collection share a prefix with a hash tag, so they sit
// in one slot of a cluster and one Lua script can change them together:
//
//	{ns}\x00s/{h}/d       hash: document ID -> JSON of text, fields, vector
//	{ns}\x00s/{h}/r       sorted set: document ID, scored by its sequence
//	{ns}\x00s/{h}/k       hash: document ID -> its length and distinct terms
//	{ns}\x00s/{h}/t:TERM  hash: document ID -> "tf length sequence"
//	{ns}\x00s/{h}/T       set: the terms that have a posting hash
//	{ns}\x00s/{h}/s       hash: total length and the last sequence
//	{ns}\x00s/collections sorted set of every collection's name, by name
//
// where h is a hash of the collection's name. A store key never holds a
// NUL byte, so no record can collide with these keys, and List skips them.

// Bounds of a query.
const (
	// maxQueryTerms caps the terms of a text query: a query of a long
	// text matches on its first 64 distinct terms.
	maxQueryTerms = 64
	// denseWindow is how many candidates a vector ranks: the text
	// query's best and the collection's most recent, each up to this
	// many.
	denseWindow = 1000
	// fetchChunk is how many documents one HMGET reads while a query
	// fills its hits.
	fetchChunk = 256
)

// searchPrefix returns the prefix of the keys of collection.
func (s *Store) searchPrefix(collection string) string {
	h := sha256.Sum256([]byte(collection))
	return s.ns + "\x00s/{" + hex.EncodeToString(h[:16]) + "}/"
}

func (s *Store) registry() string { return s.ns + "\x00s/collections" }

// indexScript changes the collection of prefix ARGV[1]. With ARGV[2]
// "i" it replaces the documents of ARGV[3...], in fours: ID, body, length,
// "term\ttf\n..." lines; with "u" it removes the documents of the IDs
// ARGV[3...].
var indexScript = goredis.NewScript(`
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

// dropScript deletes every key of the collection of prefix ARGV[1].
var dropScript = goredis.NewScript(`
local p = ARGV[1]
for _, term in ipairs(redis.call('SMEMBERS', p..'T')) do
  redis.call('DEL', p..'t:'..term)
end
return redis.call('DEL', p..'d', p..'r', p..'k', p..'s', p..'T')
`)

// body is how a document is kept in the d hash.
type body struct {
	Text   string            `json:"t,omitempty"`
	Fields map[string]string `json:"f,omitempty"`
	Vector []float32         `json:"v,omitempty"`
}

// docTerms returns what BM25 ranks of text: its tokens that are not stop
// words, stemmed, as internal/lexical's Corpus does.
func docTerms(text string) []string {
	toks := lexical.Tokens(nil, text)
	out := toks[:0]
	for _, t := range toks {
		if !lexical.IsStopWord(t) {
			out = append(out, lexical.Stem(t))
		}
	}
	return out
}

// Index implements [storage.Searcher] with one Lua script: the documents
// of a call are indexed together or not at all. The collection is
// registered before and after the script, so that a collection that
// holds documents is always listed by Collections, even when a Drop runs
// at the same time.
func (s *Store) Index(ctx context.Context, collection string, docs ...storage.Document) error {
	if err := s.begin(ctx, "index", collection, true); err != nil {
		return err
	}
	for _, d := range docs {
		if err := storage.ValidateDocument(d); err != nil {
			return fmt.Errorf("storage/redis: index %s: %w", storage.Quote(collection), err)
		}
	}
	if len(docs) == 0 {
		return nil
	}
	p := s.searchPrefix(collection)
	args := make([]any, 0, 2+4*len(docs))
	args = append(args, p, "i")
	var lines strings.Builder
	for _, d := range docs {
		b, err := json.Marshal(body{Text: d.Text, Fields: d.Fields, Vector: d.Vector})
		if err != nil {
			return fmt.Errorf("storage/redis: index %s: %w", storage.Quote(collection), err)
		}
		terms := docTerms(d.Text)
		tf := map[string]int{}
		var order []string
		for _, t := range terms {
			if tf[t] == 0 {
				order = append(order, t)
			}
			tf[t]++
		}
		lines.Reset()
		for _, t := range order {
			lines.WriteString(t)
			lines.WriteByte('\t')
			lines.WriteString(strconv.Itoa(tf[t]))
			lines.WriteByte('\n')
		}
		args = append(args, d.ID, b, strconv.Itoa(len(terms)), lines.String())
	}
	reg := func() error {
		return s.client.ZAdd(ctx, s.registry(), goredis.Z{Member: collection}).Err()
	}
	if err := reg(); err != nil {
		return s.wrap(ctx, "index", collection, err)
	}
	if err := indexScript.Run(ctx, s.client, []string{p + "r"}, args...).Err(); err != nil {
		return s.wrap(ctx, "index", collection, err)
	}
	if err := reg(); err != nil {
		return s.wrap(ctx, "index", collection, err)
	}
	return nil
}

// Unindex implements [storage.Searcher] with one Lua script.
func (s *Store) Unindex(ctx context.Context, collection string, ids ...string) error {
	if err := s.begin(ctx, "unindex", collection, true); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	p := s.searchPrefix(collection)
	args := make([]any, 0, 2+len(ids))
	args = append(args, p, "u")
	for _, id := range ids {
		args = append(args, id)
	}
	if err := indexScript.Run(ctx, s.client, []string{p + "r"}, args...).Err(); err != nil {
		return s.wrap(ctx, "unindex", collection, err)
	}
	return nil
}

// Collections implements [storage.Searcher]: a range of the registry of
// collection names, then one EXISTS per name found, in a pipeline.
func (s *Store) Collections(ctx context.Context, prefix string) ([]string, error) {
	if err := s.begin(ctx, "collections", prefix, false); err != nil {
		return nil, err
	}
	// Names are valid UTF-8, which never holds the byte 0xff.
	names, err := s.client.ZRangeByLex(ctx, s.registry(), &goredis.ZRangeBy{Min: "[" + prefix, Max: "(" + prefix + "\xff"}).Result()
	if err != nil {
		return nil, s.wrap(ctx, "collections", prefix, err)
	}
	if len(names) == 0 {
		return nil, nil
	}
	cmds := make([]*goredis.IntCmd, len(names))
	_, err = s.client.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = pl.Exists(ctx, s.searchPrefix(n)+"r")
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(ctx, "collections", prefix, err)
	}
	var out []string
	for i, n := range names {
		if cmds[i].Val() > 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// Drop implements [storage.Searcher]: the name leaves the registry
// first, then one Lua script deletes the collection's keys.
func (s *Store) Drop(ctx context.Context, collection string) error {
	if err := s.begin(ctx, "drop", collection, true); err != nil {
		return err
	}
	if err := s.client.ZRem(ctx, s.registry(), collection).Err(); err != nil {
		return s.wrap(ctx, "drop", collection, err)
	}
	p := s.searchPrefix(collection)
	if err := dropScript.Run(ctx, s.client, []string{p + "r"}, p).Err(); err != nil {
		return s.wrap(ctx, "drop", collection, err)
	}
	return nil
}

// Search implements [storage.Searcher]. See the package documentation
// for what a query reads.
func (s *Store) Search(ctx context.Context, collection string, q storage.Query) ([]storage.Hit, error) {
	if err := s.begin(ctx, "search", collection, true); err != nil {
		return nil, err
	}
	k, err := storage.ValidateQuery(q)
	if err != nil {
		return nil, fmt.Errorf("storage/redis: search %s: %w", storage.Quote(collection), err)
	}
	p := s.searchPrefix(collection)
	out, err := s.search(ctx, p, q, k)
	if err != nil {
		return nil, s.wrap(ctx, "search", collection, err)
	}
	return storage.TopHits(out, k), nil
}

func (s *Store) search(ctx context.Context, p string, q storage.Query, k int) ([]storage.Ranked, error) {
	terms := queryTerms(q.Text)
	hasText := strings.TrimSpace(q.Text) != ""
	if len(q.Vector) == 0 {
		if !hasText {
			return s.recent(ctx, p, q.Filter, k, q.Oldest)
		}
		if len(terms) == 0 {
			return nil, nil // only stop words: nothing to match
		}
		return s.text(ctx, p, terms, q.Filter, k)
	}
	var text []storage.Ranked
	if len(terms) > 0 {
		var err error
		if text, err = s.text(ctx, p, terms, q.Filter, denseWindow); err != nil {
			return nil, err
		}
	}
	recent, err := s.recent(ctx, p, q.Filter, denseWindow, false)
	if err != nil {
		return nil, err
	}
	dense := storage.RankByVector(q.Vector, text, recent)
	if len(terms) == 0 {
		return dense, nil
	}
	return storage.Fuse(text, dense), nil
}

// queryTerms returns the distinct terms of a query, at most
// maxQueryTerms, in the order they first occur.
func queryTerms(text string) []string {
	var out []string
	for _, t := range docTerms(text) {
		if !slices.Contains(out, t) {
			out = append(out, t)
			if len(out) == maxQueryTerms {
				break
			}
		}
	}
	return out
}

// text ranks the documents holding a query term by BM25, computed here
// from the terms' postings, and returns the best limit that pass filter.
func (s *Store) text(ctx context.Context, p string, terms []string, filter map[string]string, limit int) ([]storage.Ranked, error) {
	var n *goredis.IntCmd
	var total *goredis.StringCmd
	posts := make([]*goredis.MapStringStringCmd, len(terms))
	_, err := s.client.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		n = pl.ZCard(ctx, p+"r")
		total = pl.HGet(ctx, p+"s", "total")
		for i, t := range terms {
			posts[i] = pl.HGetAll(ctx, p+"t:"+t)
		}
		return nil
	})
	if err != nil && err != goredis.Nil {
		return nil, err
	}
	docs := float64(n.Val())
	if docs == 0 {
		return nil, nil
	}
	sum, _ := strconv.ParseFloat(total.Val(), 64)
	avg := sum / docs
	if avg == 0 {
		avg = 1
	}
	at := map[string]int{}
	var cands []storage.Ranked
	for _, pc := range posts {
		post := pc.Val()
		if len(post) == 0 {
			continue
		}
		df := float64(len(post))
		idf := math.Log(1 + (docs-df+0.5)/(df+0.5))
		for id, v := range post {
			f := strings.Fields(v)
			if len(f) != 3 {
				continue
			}
			tf, _ := strconv.ParseFloat(f[0], 64)
			dl, _ := strconv.ParseFloat(f[1], 64)
			seq, _ := strconv.ParseInt(f[2], 10, 64)
			j, ok := at[id]
			if !ok {
				j = len(cands)
				at[id] = j
				cands = append(cands, storage.Ranked{Hit: storage.Hit{ID: id}, Seq: seq})
			}
			cands[j].Score += idf * tf * (lexical.K1 + 1) / (tf + lexical.K1*(1-lexical.B+lexical.B*dl/avg))
		}
	}
	storage.SortRanked(cands)
	return s.fill(ctx, p, cands, filter, limit)
}

// recent returns the limit most recently indexed documents that pass
// filter (the least recent with oldest), reading the recency set a page
// at a time.
func (s *Store) recent(ctx context.Context, p string, filter map[string]string, limit int, oldest bool) ([]storage.Ranked, error) {
	page := int64(limit)
	if len(filter) > 0 {
		page = max(page, fetchChunk)
	}
	var out []storage.Ranked
	for start := int64(0); len(out) < limit; start += page {
		r := goredis.ZRangeArgs{Key: p + "r", Start: start, Stop: start + page - 1, Rev: !oldest}
		zs, err := s.client.ZRangeArgsWithScores(ctx, r).Result()
		if err != nil {
			return nil, err
		}
		cands := make([]storage.Ranked, len(zs))
		for i, z := range zs {
			cands[i] = storage.Ranked{Hit: storage.Hit{ID: z.Member.(string)}, Seq: int64(z.Score)}
		}
		got, err := s.fill(ctx, p, cands, filter, limit-len(out))
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
		if int64(len(zs)) < page {
			break
		}
	}
	return out, nil
}

// fill reads the documents of cands in order, a chunk at a time, and
// returns the first limit that exist and pass filter.
func (s *Store) fill(ctx context.Context, p string, cands []storage.Ranked, filter map[string]string, limit int) ([]storage.Ranked, error) {
	var out []storage.Ranked
	for len(cands) > 0 && len(out) < limit {
		chunk := cands[:min(len(cands), max(limit-len(out), 16), fetchChunk)]
		if len(filter) > 0 {
			chunk = cands[:min(len(cands), fetchChunk)]
		}
		cands = cands[len(chunk):]
		ids := make([]string, len(chunk))
		for i, c := range chunk {
			ids[i] = c.ID
		}
		vals, err := s.client.HMGet(ctx, p+"d", ids...).Result()
		if err != nil {
			return nil, err
		}
		for i, v := range vals {
			str, ok := v.(string)
			if !ok {
				continue // unindexed since its posting was read
			}
			var b body
			if err := json.Unmarshal([]byte(str), &b); err != nil {
				return nil, fmt.Errorf("document %s: %w", storage.Quote(ids[i]), err)
			}
			if !storage.Matches(b.Fields, filter) {
				continue
			}
			c := chunk[i]
			c.Text, c.Fields = b.Text, b.Fields
			c.Vector = b.Vector
			out = append(out, c)
			if len(out) == limit {
				break
			}
		}
	}
	return out, nil
}

var _ storage.Searcher = (*Store)(nil)
