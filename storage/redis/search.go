package redis

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
//	{ns}\x00s/{h}/k       hash: document ID -> its length, its distinct
//	                      terms with their counts, its fields' tags
//	{ns}\x00s/{h}/z:TERM  sorted set: "tf length ID" of each document
//	                      holding TERM, scored by the document's sequence
//	{ns}\x00s/{h}/f:TAG   sorted set: the ID of each document whose field
//	                      has the name and value of TAG, by sequence
//	{ns}\x00s/{h}/T       set: the terms that have a z: set
//	{ns}\x00s/{h}/F       set: the tags that have an f: set
//	{ns}\x00s/{h}/s       hash: total length, the last sequence, and the
//	                      layout's version (v)
//	{ns}\x00s/collections sorted set of every collection's name, by name
//
// where h is a hash of the collection's name and TAG the SHA-1, in hex,
// of a field's name, a NUL byte and its value. A store key never holds a
// NUL byte, so no record can collide with these keys, and List skips
// them.
//
// A collection of an earlier version has, instead of the z: sets, a
// hash per term (t:TERM: ID -> "tf length sequence") and no f: sets or
// version; its first query converts it, while writes keep it consistent
// meanwhile (see indexScript).

// Bounds of a query.
const (
	// maxQueryTerms caps the terms of a text query: a query of a long
	// text matches on its first 64 distinct terms.
	maxQueryTerms = 64
	// postingsPerTerm is how many of a term's newest documents a text
	// query reads. A term of fewer documents is read whole; a more
	// common one, which weighs little, is read from its newest.
	postingsPerTerm = 64
	// postingsPerQuery caps the postings a query of many terms reads:
	// each of its terms gets an equal share, at least minPostings.
	postingsPerQuery = 512
	minPostings      = 16
	// rescored is the fewest candidates a text query scores in full.
	rescored = 20
	// maxWalk is the most documents a filtered query checks against
	// the filter per list it walks (a term's, or the filter's
	// smallest): a document past them is not found.
	maxWalk = 10000
	// denseWindow is how many candidates a vector ranks: the text
	// query's best and the collection's most recent, each up to this
	// many.
	denseWindow = 1000
	// fetchChunk is how many documents one HMGET reads while a query
	// fills its hits.
	fetchChunk = 256
	// layoutVersion is the version of the index's layout, kept in the
	// s hash; a collection without it is converted before use.
	layoutVersion = "2"
)

// searchPrefix returns the prefix of the keys of collection.
func (s *Store) searchPrefix(collection string) string {
	h := sha256.Sum256([]byte(collection))
	return s.ns + "\x00s/{" + hex.EncodeToString(h[:16]) + "}/"
}

func (s *Store) registry() string { return s.ns + "\x00s/collections" }

// fieldTag names a field's value in the index: the SHA-1 of name, a NUL
// byte and value, in hex, as indexScript computes it with redis.sha1hex.
func fieldTag(name, value string) string {
	h := sha1.Sum([]byte(name + "\x00" + value))
	return hex.EncodeToString(h[:])
}

// convertBatch is how many documents one script converts of a
// collection of the earlier layout.
var convertBatch = 200

// indexScript changes the collection of prefix ARGV[1]. With ARGV[2]
// "i" it replaces the documents of ARGV[3...], in fours: ID, body,
// length, and lines of "term\ttf" and "=tag"; with "u" it removes the
// documents of the IDs ARGV[3...]; with "m" it converts the next ARGV[3]
// documents of a collection of the earlier layout and returns 1 once
// none is left.
//
// A collection of the earlier layout (no version in its s hash) is
// converted a batch at a time, oldest first, the s hash's m field
// holding the sequence of the last document converted. Meanwhile it
// holds documents of both layouts, which a k entry tells apart: a line
// of the earlier layout is a bare term, whose posting is in the t: hash.
// Writes keep it consistent; queries convert it to the end before they
// read (see Store.converted). A document is converted by copying its
// postings from the t: hashes to the z: sets (T lists their terms
// already), adding it to the f: sets of its fields (read from its body),
// and rewriting its k entry. The last batch unlinks the t: hashes.
var indexScript = goredis.NewScript(`
local p = ARGV[1]
local function dropTerm(term)
  if redis.call('EXISTS', p..'z:'..term) == 0 and redis.call('EXISTS', p..'t:'..term) == 0 then
    redis.call('SREM', p..'T', term)
  end
end
local function remove(id)
  local old = redis.call('HGET', p..'k', id)
  if not old then return end
  local len = string.match(old, '^(%d+)')
  local first = true
  for line in string.gmatch(old, '[^\n]+') do
    if first then
      local n = tonumber(line)
      if n ~= 0 then redis.call('HINCRBY', p..'s', 'total', 0 - n) end
      first = false
    elseif string.sub(line, 1, 1) == '=' then
      local tag = string.sub(line, 2)
      local fk = p..'f:'..tag
      redis.call('ZREM', fk, id)
      if redis.call('EXISTS', fk) == 0 then redis.call('SREM', p..'F', tag) end
    else
      local term, tf = string.match(line, '^(.*)\t(%d+)$')
      if term then
        redis.call('ZREM', p..'z:'..term, tf..' '..len..' '..id)
      else
        term = line
        redis.call('HDEL', p..'t:'..term, id)
      end
      dropTerm(term)
    end
  end
  redis.call('HDEL', p..'k', id)
  redis.call('HDEL', p..'d', id)
  redis.call('ZREM', p..'r', id)
end
local function convert(id, seq)
  local old = redis.call('HGET', p..'k', id) or '0'
  if string.find(old, '[\t=]') then return end
  local lines, len = {}, nil
  for line in string.gmatch(old, '[^\n]+') do
    if not len then
      len = line
      lines[1] = len
    else
      local v = redis.call('HGET', p..'t:'..line, id)
      local tf = v and string.match(v, '^(%d+)') or '1'
      redis.call('ZADD', p..'z:'..line, seq, tf..' '..len..' '..id)
      lines[#lines+1] = line..'\t'..tf
    end
  end
  local ok, body = pcall(cjson.decode, redis.call('HGET', p..'d', id) or '{}')
  if ok and type(body) == 'table' and type(body.f) == 'table' then
    for name, value in pairs(body.f) do
      local tag = redis.sha1hex(name..'\0'..value)
      redis.call('ZADD', p..'f:'..tag, seq, id)
      redis.call('SADD', p..'F', tag)
      lines[#lines+1] = '='..tag
    end
  end
  redis.call('HSET', p..'k', id, table.concat(lines, '\n'))
end
if ARGV[2] == 'm' then
  if redis.call('HGET', p..'s', 'v') == '` + layoutVersion + `' or redis.call('EXISTS', p..'r') == 0 then return 1 end
  local from = redis.call('HGET', p..'s', 'm') or '0'
  local n = tonumber(ARGV[3])
  local docs = redis.call('ZRANGEBYSCORE', p..'r', '('..from, '+inf', 'WITHSCORES', 'LIMIT', 0, n)
  for i = 1, #docs, 2 do convert(docs[i], docs[i+1]) end
  if #docs < 2*n then
    for _, term in ipairs(redis.call('SMEMBERS', p..'T')) do
      redis.call('UNLINK', p..'t:'..term)
    end
    redis.call('HSET', p..'s', 'v', '` + layoutVersion + `')
    redis.call('HDEL', p..'s', 'm')
    return 1
  end
  redis.call('HSET', p..'s', 'm', docs[#docs])
  return 0
end
if ARGV[2] == 'u' then
  for i = 3, #ARGV do remove(ARGV[i]) end
  if redis.call('EXISTS', p..'r') == 0 then redis.call('DEL', p..'s', p..'T', p..'F') end
  return redis.call('ZCARD', p..'r')
end
if redis.call('EXISTS', p..'r') == 0 then
  redis.call('HSET', p..'s', 'v', '` + layoutVersion + `')
end
for i = 3, #ARGV, 4 do
  local id, body, len, lines = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3]
  remove(id)
  local seq = redis.call('HINCRBY', p..'s', 'seq', 1)
  redis.call('HINCRBY', p..'s', 'total', tonumber(len))
  redis.call('HSET', p..'d', id, body)
  redis.call('ZADD', p..'r', seq, id)
  for line in string.gmatch(lines, '[^\n]+') do
    if string.sub(line, 1, 1) == '=' then
      local tag = string.sub(line, 2)
      redis.call('ZADD', p..'f:'..tag, seq, id)
      redis.call('SADD', p..'F', tag)
    else
      local term, tf = string.match(line, '^(.*)\t(%d+)$')
      redis.call('ZADD', p..'z:'..term, seq, tf..' '..len..' '..id)
      redis.call('SADD', p..'T', term)
    end
  end
  redis.call('HSET', p..'k', id, len..'\n'..lines)
end
return redis.call('ZCARD', p..'r')
`)

// dropScript deletes every key of the collection of prefix ARGV[1], of
// either layout.
var dropScript = goredis.NewScript(`
local p = ARGV[1]
for _, term in ipairs(redis.call('SMEMBERS', p..'T')) do
  redis.call('DEL', p..'z:'..term, p..'t:'..term)
end
for _, tag in ipairs(redis.call('SMEMBERS', p..'F')) do
  redis.call('DEL', p..'f:'..tag)
end
return redis.call('DEL', p..'d', p..'r', p..'k', p..'s', p..'T', p..'F')
`)

// queryScript reads what a filtered query needs of the collection of
// prefix ARGV[1], without changing it (a query without a filter is a
// pipeline: see postings). ARGV[2] is how many postings to read of
// each list, ARGV[3] "1" to walk oldest first, ARGV[4] the number f of
// filter tags, ARGV[5...] the tags, then the query's terms. It returns
// the collection's documents, total length and layout version, then
// one list per term, {df, member, sequence, ...}, of the term's newest
// documents that pass the filter, members being "tf length ID"; without
// terms, one list of the IDs of the newest (oldest) documents that pass
// the filter. A list walks the smallest of the term's set and the
// filter's sets, checks each member against the others, and stops at
// ARGV[2] found or maxWalk checked.
var queryScript = goredis.NewScript(`
local p, want, oldest, nf = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local docs = redis.call('ZCARD', p..'r')
local head = {docs, redis.call('HGET', p..'s', 'total') or '0', redis.call('HGET', p..'s', 'v') or ''}
if docs == 0 or head[3] ~= '` + layoutVersion + `' then return head end
local filters, entries = {}, {}
for i = 1, nf do
  local key = p..'f:'..ARGV[4+i]
  filters[i] = {key, redis.call('ZCARD', key)}
end
table.sort(filters, function(a, b) return a[2] < b[2] end)
local function pass(id, skip)
  for i = 1, nf do
    if i ~= skip and not redis.call('ZSCORE', filters[i][1], id) then return false end
  end
  return true
end
local function walk(key, keep)
  local out, checked, start = {}, 0, 0
  local page = math.max(want, 64)
  while #out < 2*want and checked < ` + strconv.Itoa(maxWalk) + ` do
    local cmd = oldest and 'ZRANGE' or 'ZREVRANGE'
    local got = redis.call(cmd, key, start, start+page-1, 'WITHSCORES')
    for i = 1, #got, 2 do
      checked = checked + 1
      local m = keep(got[i])
      if m then
        out[#out+1] = m
        out[#out+1] = got[i+1]
        if #out >= 2*want then break end
      end
      if checked >= ` + strconv.Itoa(maxWalk) + ` then break end
    end
    if #got < 2*page then break end
    start = start + page
  end
  return out
end
local function posting(term, id)
  local e = entries[id]
  if e == nil then
    e = redis.call('HGET', p..'k', id) or false
    entries[id] = e
  end
  if not e then return nil end
  local at = string.find(e, '\n'..term..'\t', 1, true)
  if not at then return nil end
  return string.match(e, '^(%d+)', at + #term + 2)..' '..string.match(e, '^(%d+)')..' '..id
end
if #ARGV == 4 + nf then
  if nf == 0 then return head end
  head[4] = walk(filters[1][1], function(id) if pass(id, 1) then return id end end)
  return head
end
for i = 5 + nf, #ARGV do
  local term = ARGV[i]
  local key = p..'z:'..term
  local df = redis.call('ZCARD', key)
  local list = {df}
  if df > 0 and (nf == 0 or filters[1][2] > 0) then
    local got
    if nf == 0 then
      got = redis.call('ZREVRANGE', key, 0, want-1, 'WITHSCORES')
    elseif df <= filters[1][2] then
      got = walk(key, function(m)
        if pass(string.match(m, '^%d+ %d+ (.*)$'), 0) then return m end
      end)
    else
      got = walk(filters[1][1], function(id)
        if pass(id, 1) then return posting(term, id) end
      end)
    end
    for _, v in ipairs(got) do list[#list+1] = v end
  end
  head[#head+1] = list
end
return head
`)

// body is how a document is kept in the d hash.
type body struct {
	Text   string            `json:"t,omitempty"`
	Fields map[string]string `json:"f,omitempty"`
	Vector []float32         `json:"v,omitempty"`
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
		terms := lexical.Terms(nil, d.Text)
		indexLines(&lines, terms, d.Fields)
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

// indexLines writes a document's lines of the index script to b: a
// "term\ttf" line per distinct term, in the order they first occur, and
// a "=tag" line per field, by name.
func indexLines(b *strings.Builder, terms []string, fields map[string]string) {
	b.Reset()
	tf := make(map[string]int, len(terms))
	for _, t := range terms {
		tf[t]++
	}
	for _, t := range terms {
		n := tf[t]
		if n == 0 {
			continue // written already
		}
		tf[t] = 0
		b.WriteString(t)
		b.WriteByte('\t')
		b.WriteString(strconv.Itoa(n))
		b.WriteByte('\n')
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		b.WriteByte('=')
		b.WriteString(fieldTag(name, fields[name]))
		b.WriteByte('\n')
	}
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
	if len(q.Vector) == 0 {
		if len(terms) == 0 {
			if strings.TrimSpace(q.Text) != "" {
				return nil, nil // only stop words: nothing to match
			}
			return s.recent(ctx, p, q.Filter, k, q.Oldest)
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
	for _, t := range lexical.Terms(nil, text) {
		if !slices.Contains(out, t) {
			out = append(out, t)
			if len(out) == maxQueryTerms {
				break
			}
		}
	}
	return out
}

// postingsOf returns how many postings a query of n terms reads of each:
// postingsPerTerm, less for a query of many terms, so that it reads at
// most postingsPerQuery in all, but never fewer than minPostings.
func postingsOf(n int) int {
	return min(postingsPerTerm, max(minPostings, postingsPerQuery/max(n, 1)))
}

// read is what a query read of a collection: its documents and total
// length, and its lists.
type read struct {
	docs  int
	total float64
	lists []list
}

// list is what a query read of one term (its document frequency df and
// the postings read, "tf length ID" scored by sequence) or of the
// filtered recent documents (IDs).
type list struct {
	df int64
	zs []goredis.Z
}

// query runs queryScript, converting the collection first when an
// earlier version wrote it. terms nil asks for the filtered recent list.
func (s *Store) query(ctx context.Context, p string, want int, oldest bool, filter map[string]string, terms []string) (read, error) {
	args := []any{p, want, "0", len(filter)}
	if oldest {
		args[2] = "1"
	}
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		args = append(args, fieldTag(name, filter[name]))
	}
	for _, t := range terms {
		args = append(args, t)
	}
	return s.converted(ctx, p, func() (read, string, error) {
		res, err := queryScript.Run(ctx, s.client, []string{p + "r"}, args...).Slice()
		if err != nil {
			return read{}, "", err
		}
		return queryReply(res, len(terms) > 0)
	})
}

// queryReply reads queryScript's reply: the head, then a list per term
// (withTerms) or one list of IDs.
func queryReply(res []any, withTerms bool) (read, string, error) {
	if len(res) < 3 {
		return read{}, "", fmt.Errorf("query: unexpected reply %v", res)
	}
	docs, _ := res[0].(int64)
	str, _ := res[1].(string)
	total, _ := strconv.ParseFloat(str, 64)
	rd := read{docs: int(docs), total: total}
	v, _ := res[2].(string)
	for _, r := range res[3:] {
		l, _ := r.([]any)
		if !withTerms {
			rd.lists = append(rd.lists, list{zs: pairs(l)})
			continue
		}
		if len(l) > 0 {
			df, _ := l[0].(int64)
			rd.lists = append(rd.lists, list{df: df, zs: pairs(l[1:])})
		}
	}
	return rd, v, nil
}

// pairs reads a list of member, score, member, score, ...
func pairs(l []any) []goredis.Z {
	zs := make([]goredis.Z, 0, len(l)/2)
	for j := 0; j+1 < len(l); j += 2 {
		m, _ := l[j].(string)
		sq, _ := l[j+1].(string)
		seq, _ := strconv.ParseFloat(sq, 64)
		zs = append(zs, goredis.Z{Member: m, Score: seq})
	}
	return zs
}

// postings reads, without a filter, the newest want postings of each
// term and its document frequency, in one pipeline (cheaper than a
// script that returns the same), converting the collection first when
// an earlier version wrote it.
func (s *Store) postings(ctx context.Context, p string, want int, terms []string) (read, error) {
	return s.converted(ctx, p, func() (read, string, error) {
		var docs *goredis.IntCmd
		var head *goredis.SliceCmd
		dfs := make([]*goredis.IntCmd, len(terms))
		posts := make([]*goredis.ZSliceCmd, len(terms))
		_, err := s.client.Pipelined(ctx, func(pl goredis.Pipeliner) error {
			docs = pl.ZCard(ctx, p+"r")
			head = pl.HMGet(ctx, p+"s", "total", "v")
			for i, t := range terms {
				dfs[i] = pl.ZCard(ctx, p+"z:"+t)
				posts[i] = pl.ZRevRangeWithScores(ctx, p+"z:"+t, 0, int64(want)-1)
			}
			return nil
		})
		if err != nil {
			return read{}, "", err
		}
		rd := read{docs: int(docs.Val()), lists: make([]list, len(terms))}
		h := head.Val()
		str, _ := h[0].(string)
		rd.total, _ = strconv.ParseFloat(str, 64)
		v, _ := h[1].(string)
		for i := range terms {
			rd.lists[i] = list{df: dfs[i].Val(), zs: posts[i].Val()}
		}
		return rd, v, nil
	})
}

// converted runs a read of the collection of prefix p, which returns
// the collection's layout version. A non-empty collection of an earlier
// layout is converted, a batch of convertBatch documents per script
// (see indexScript), and the read run again.
func (s *Store) converted(ctx context.Context, p string, run func() (read, string, error)) (read, error) {
	rd, v, err := run()
	if err != nil || rd.docs == 0 || v == layoutVersion {
		return rd, err
	}
	for {
		done, err := indexScript.Run(ctx, s.client, []string{p + "r"}, p, "m", convertBatch).Int()
		if err != nil {
			return read{}, fmt.Errorf("convert the index of an earlier version: %w", err)
		}
		if done == 1 {
			break
		}
	}
	rd, v, err = run()
	if err == nil && rd.docs > 0 && v != layoutVersion {
		return read{}, errors.New("query: the collection's layout changed while converting it")
	}
	return rd, err
}

// text ranks the documents holding a query term by BM25 and returns the
// best limit that pass filter. It reads the newest postings of each term
// (see postingsOf), weighs each term by its exact document frequency,
// scores the postings read, and rescores the best candidates from their
// text, so that a document whose common term was not read counts it.
func (s *Store) text(ctx context.Context, p string, terms []string, filter map[string]string, limit int) ([]storage.Ranked, error) {
	perTerm := max(postingsOf(len(terms)), limit)
	var rd read
	var err error
	if len(filter) == 0 {
		rd, err = s.postings(ctx, p, perTerm, terms)
	} else {
		rd, err = s.query(ctx, p, perTerm, false, filter, terms)
	}
	if err != nil || rd.docs == 0 {
		return nil, err
	}
	avg := rd.total / float64(rd.docs)
	if avg == 0 {
		avg = 1
	}
	idf := make([]float64, len(terms))
	at := map[string]int{}
	var cands []storage.Ranked
	for i, l := range rd.lists {
		idf[i] = lexical.IDF(rd.docs, int(l.df))
		for _, z := range l.zs {
			m, _ := z.Member.(string)
			tf, length, id, ok := parsePosting(m)
			if !ok {
				continue
			}
			c, seen := at[id]
			if !seen {
				c = len(cands)
				at[id] = c
				cands = append(cands, storage.Ranked{Hit: storage.Hit{ID: id}, Seq: int64(z.Score)})
			}
			cands[c].Score += lexical.TermScore(idf[i], tf, length, avg)
		}
	}
	storage.SortRanked(cands)
	rows, err := s.fill(ctx, p, cands, filter, max(rescored, limit+limit/2))
	if err != nil {
		return nil, err
	}
	storage.Rescore(rows, terms, idf, avg)
	return rows[:min(limit, len(rows))], nil
}

// parsePosting reads a member of a term's set: "tf length ID".
func parsePosting(m string) (tf, length int, id string, ok bool) {
	f, rest, ok1 := strings.Cut(m, " ")
	l, id, ok2 := strings.Cut(rest, " ")
	tf, err1 := strconv.Atoi(f)
	length, err2 := strconv.Atoi(l)
	return tf, length, id, ok1 && ok2 && err1 == nil && err2 == nil
}

// recent returns the limit most recently indexed documents that pass
// filter (the least recent with oldest): a range of the recency set
// without a filter, else a walk of the filter's smallest set.
func (s *Store) recent(ctx context.Context, p string, filter map[string]string, limit int, oldest bool) ([]storage.Ranked, error) {
	var cands []storage.Ranked
	if len(filter) == 0 {
		r := goredis.ZRangeArgs{Key: p + "r", Start: 0, Stop: int64(limit) - 1, Rev: !oldest}
		zs, err := s.client.ZRangeArgsWithScores(ctx, r).Result()
		if err != nil {
			return nil, err
		}
		for _, z := range zs {
			cands = append(cands, storage.Ranked{Hit: storage.Hit{ID: z.Member.(string)}, Seq: int64(z.Score)})
		}
	} else {
		rd, err := s.query(ctx, p, limit, oldest, filter, nil)
		if err != nil || len(rd.lists) == 0 {
			return nil, err
		}
		for _, z := range rd.lists[0].zs {
			cands = append(cands, storage.Ranked{Hit: storage.Hit{ID: z.Member.(string)}, Seq: int64(z.Score)})
		}
	}
	return s.fill(ctx, p, cands, filter, limit)
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
