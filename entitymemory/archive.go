package entitymemory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// Defaults of the archive.
const (
	// DefaultArchiveCapacity is how many entities the archive of one
	// scope keeps. Ten thousand is far more than a conversation names
	// and small enough that an eviction pass stays short.
	DefaultArchiveCapacity = 10_000
	// DefaultArchiveTTL is how long an archived entity that is not seen
	// again is kept: a year, so that "the page from last spring" still
	// resolves.
	DefaultArchiveTTL = 365 * 24 * time.Hour
	// DefaultMaxRecalled is how many archived entities one recall adds
	// to the recent list.
	DefaultMaxRecalled = 5
)

// RecalledHeader introduces the archived entities a recall adds because
// the conversation names them.
const RecalledHeader = "Named in the conversation (seen earlier):"

// Record names in the layer's scope.
const (
	archiveName     = "archive"      // the search collection
	archiveHeadName = "archive-head" // the entity count
	archivePrefix   = "archive/"     // one record per entity
	recentTurns     = 4              // earlier user messages a recall also reads
	refreshAfter    = 24 * time.Hour // an unchanged entity's seen time is rewritten at most this often
	candidates      = 4              // index hits read per entity recalled
	minIDMatchLen   = 4              // an ID shorter than this does not name an entity on its own
	sweepBatch      = 8              // archived entities a step checks against ArchiveTTL
)

// archive keeps every entity a scope has seen. Each entity is a record
// of its own (the source of truth), mirrored as a document in a search
// collection, so that recall finds the ones the conversation names
// without loading the archive. A small head record counts the entities,
// so that the oldest are evicted past the capacity.
//
// On a store that is a [storage.Searcher], the collection lives in the
// store. On any other store, it is an in-process index of the entities
// this run has seen: the records are written, but only this run's
// entities are recalled.
type archive struct {
	store    storage.Store
	index    storage.Searcher
	col      string
	head     string
	layerID  string
	scope    string
	capacity int
	ttl      time.Duration
	retries  int

	readOnly bool // a child's view of its parent's archive: recalls, never writes

	seeded bool              // the recent list was archived this run
	known  map[string]Entity // entities archived this run, by docID
	turns  []string          // the last user messages, oldest first
	last   lastSearch        // the last recall's search, for the next step's
}

// lastSearch is a recall's search, kept for the recalls of the run's
// next steps: the steps of one turn recall with the same query, and what
// changes in the archive between them is what this run saw, which it
// knows, or forgot, which drops the search. Another run of the scope
// archiving at the same time is seen from its next query on.
type lastSearch struct {
	query string
	k     int
	hits  []storage.Hit
	since []storage.Hit // this run's documents indexed after the search, oldest first
	ok    bool
}

// maxSince is how many documents indexed after a kept search it takes
// along; past it, the next recall searches again.
const maxSince = 64

func newArchive(store storage.Store, layerID, scope string, cfg Config) *archive {
	if cfg.ArchiveCapacity < 0 {
		return nil
	}
	a := &archive{
		store: store, layerID: layerID, scope: scope,
		col:      storage.IndexName(layerID, scope, archiveName),
		head:     storage.LayerKey(layerID, scope, archiveHeadName),
		capacity: cfg.ArchiveCapacity, ttl: cfg.ArchiveTTL, retries: cfg.MaxRetries,
		known: map[string]Entity{},
	}
	if s, ok := layer.IndexOf(store); ok {
		a.index = s
	} else {
		a.index = &storage.MemoryIndex{}
	}
	return a
}

// child returns a read-only view of a for a child agent: it recalls from
// the same index and writes nothing, neither records nor documents.
func (a *archive) child() *archive {
	return &archive{
		index: a.index, col: a.col, layerID: a.layerID, scope: a.scope,
		capacity: a.capacity, ttl: a.ttl, readOnly: true,
		turns: slices.Clone(a.turns), known: map[string]Entity{},
	}
}

func docID(e *Entity) string { return e.Type + "/" + e.ID }

func (a *archive) recordKey(e *Entity) string {
	return storage.LayerKey(a.layerID, a.scope, archivePrefix+docID(e))
}

// archived is an entity's stored form.
type archived struct {
	Type   string    `json:"type"`
	ID     string    `json:"id"`
	Name   string    `json:"name"`
	Slug   string    `json:"slug,omitempty"`
	Parent string    `json:"parent,omitempty"`
	SeenAt time.Time `json:"seenAt"`
}

func document(e *Entity) storage.Document {
	f := map[string]string{"type": e.Type, "id": e.ID, "name": e.Name, "seen": strconv.FormatInt(e.SeenAt.Unix(), 10)}
	if e.Slug != "" {
		f["slug"] = e.Slug
	}
	if e.Parent != "" {
		f["parent"] = e.Parent
	}
	name := e.Name
	if name == e.ID {
		name = "" // a name that is only the ID fallback
	}
	return storage.Document{ID: docID(e), Text: name + "\n" + e.Slug + "\n" + squash(e.ID), Fields: f}
}

// squash returns s lowercased with everything but letters and digits
// left out, so that the store's index keeps an ID as one token
// ("page-123" becomes "page123"). Indexed by its parts, an ID would share
// its prefix ("page") with every entity of its kind, and a query that
// says "page" would match, and rank, the whole archive.
func squash(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// searchText is the text recall queries the index with: text, then the
// squashed form of each of its compounds ("page-123"), which finds the
// entity of that ID.
func searchText(text string) string {
	var b strings.Builder
	b.WriteString(text)
	for _, t := range lexical.Tokens(nil, text) {
		if strings.ContainsAny(t, "-_.:/") {
			b.WriteByte('\n')
			b.WriteString(squash(t))
		}
	}
	return b.String()
}

func fromHit(h storage.Hit) (Entity, time.Time) {
	sec, _ := strconv.ParseInt(h.Fields["seen"], 10, 64)
	seen := time.Unix(sec, 0).UTC()
	return Entity{Type: h.Fields["type"], ID: h.Fields["id"], Name: h.Fields["name"], Slug: h.Fields["slug"], Parent: h.Fields["parent"], SeenAt: seen}, seen
}

// note remembers a user message, for the recalls of later steps.
func (a *archive) note(msg string) {
	if msg == "" || len(a.turns) > 0 && a.turns[len(a.turns)-1] == msg {
		return
	}
	a.turns = append(a.turns, msg)
	if len(a.turns) > recentTurns+1 {
		a.turns = a.turns[1:]
	}
}

// add archives the entities of one step. It writes only what is new to
// this run or changed, so a step writes in proportion to what it saw,
// never to what the archive holds.
func (a *archive) add(ctx context.Context, ents []Entity) error {
	if a.readOnly {
		return nil
	}
	docs, added, err := a.record(ctx, ents)
	if err != nil || len(docs) == 0 {
		return err
	}
	if err := a.index.Index(ctx, a.col, docs...); err != nil {
		a.last = lastSearch{}
		return fmt.Errorf("archive: index: %w", err)
	}
	a.last.indexed(docs)
	if err := a.sweep(ctx, ents); err != nil {
		return err
	}
	return a.grow(ctx, added)
}

// record writes the records of the entities of ents that are new to this
// run or changed, and returns their documents and how many of them are
// new to the archive.
func (a *archive) record(ctx context.Context, ents []Entity) ([]storage.Document, int, error) {
	var docs []storage.Document
	added := 0
	for i := range ents {
		e := ents[i]
		if e.Deleted || a.current(&e) {
			continue
		}
		created, err := a.write(ctx, &e)
		if err != nil {
			return nil, 0, err
		}
		if created {
			added++
		}
		a.known[docID(&e)] = e
		docs = append(docs, document(&e))
	}
	return docs, added, nil
}

// current reports whether this run archived e already, with the same
// name, slug and parent, and recently enough not to refresh its age.
func (a *archive) current(e *Entity) bool {
	old, ok := a.known[docID(e)]
	return ok && old.Name == e.Name && old.Slug == e.Slug && old.Parent == e.Parent && e.SeenAt.Sub(old.SeenAt) < refreshAfter
}

// write stores the record of e, and reports whether it is new to the
// archive rather than an overwrite.
func (a *archive) write(ctx context.Context, e *Entity) (created bool, err error) {
	data, err := json.Marshal(archived{e.Type, e.ID, e.Name, e.Slug, e.Parent, e.SeenAt.UTC()})
	if err != nil {
		return false, err
	}
	key := a.recordKey(e)
	_, err = a.store.Put(ctx, key, data, storage.NoVersion)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrConflict):
		_, err = a.store.Put(ctx, key, data, storage.AnyVersion)
	}
	if err != nil {
		return false, fmt.Errorf("archive %s: %w", key, err)
	}
	return false, nil
}

// grow counts added new entities, and evicts those seen longest ago
// beyond the capacity.
func (a *archive) grow(ctx context.Context, added int) error {
	if added == 0 {
		return nil
	}
	n, err := a.count(ctx, added)
	if err != nil {
		return err
	}
	if n > a.capacity {
		return a.evict(ctx, n-a.capacity)
	}
	return nil
}

// remove forgets entities a delete-like tool acted on.
func (a *archive) remove(ctx context.Context, gone []Entity) error {
	if a.readOnly {
		return nil
	}
	var ids []string
	removed := 0
	for i := range gone {
		key := a.recordKey(&gone[i])
		if _, err := a.store.Get(ctx, key); errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err := a.store.Delete(ctx, key, storage.AnyVersion); err != nil {
			return fmt.Errorf("archive: forget %s: %w", key, err)
		}
		removed++
		ids = append(ids, docID(&gone[i]))
		delete(a.known, docID(&gone[i]))
	}
	if len(ids) == 0 {
		return nil
	}
	a.last = lastSearch{}
	if err := a.index.Unindex(ctx, a.col, ids...); err != nil {
		return fmt.Errorf("archive: unindex: %w", err)
	}
	_, err := a.count(ctx, -removed)
	return err
}

// count adds delta to the stored entity count and returns the new count.
func (a *archive) count(ctx context.Context, delta int) (int, error) {
	for range max(a.retries, 1) {
		n, ver := 0, storage.NoVersion
		it, err := a.store.Get(ctx, a.head)
		switch {
		case err == nil:
			n, _ = strconv.Atoi(string(it.Value))
			ver = it.Version
		case !errors.Is(err, storage.ErrNotFound):
			return 0, fmt.Errorf("archive: count: %w", err)
		}
		n = max(n+delta, 0)
		_, err = a.store.Put(ctx, a.head, []byte(strconv.Itoa(n)), ver)
		if err == nil {
			return n, nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return 0, fmt.Errorf("archive: count: %w", err)
		}
	}
	return 0, fmt.Errorf("archive: count: %w", storage.ErrConflict)
}

// sweep forgets up to sweepBatch of the entities indexed longest ago
// that were not seen within the TTL, so that age retention does not wait
// for a recall to come across them. It runs only on steps that index
// something, and reads a bounded number of hits whatever the archive
// holds. Now is the latest SeenAt of the step's entities.
func (a *archive) sweep(ctx context.Context, ents []Entity) error {
	if a.ttl <= 0 || len(ents) == 0 {
		return nil
	}
	now := latestSeen(ents)
	hits, err := a.index.Search(ctx, a.col, storage.Query{K: sweepBatch, Oldest: true})
	if err != nil {
		return fmt.Errorf("archive: sweep: %w", err)
	}
	var expired []Entity
	for _, h := range hits {
		if e, seen := fromHit(h); now.Sub(seen) > a.ttl {
			expired = append(expired, e)
		}
	}
	if len(expired) == 0 {
		return nil
	}
	return a.remove(ctx, expired)
}

// latestSeen returns the latest SeenAt of ents.
func latestSeen(ents []Entity) time.Time {
	var now time.Time
	for i := range ents {
		if ents[i].SeenAt.After(now) {
			now = ents[i].SeenAt
		}
	}
	return now
}

// evict deletes the n entities seen longest ago.
func (a *archive) evict(ctx context.Context, n int) error {
	hits, err := a.index.Search(ctx, a.col, storage.Query{K: min(n, storage.MaxK), Oldest: true})
	if err != nil {
		return fmt.Errorf("archive: evict: %w", err)
	}
	gone := make([]Entity, 0, len(hits))
	for _, h := range hits {
		e, _ := fromHit(h)
		gone = append(gone, e)
	}
	return a.remove(ctx, gone)
}

// seed archives the recent list on the first step of a run whose scope
// has no archive yet (no head record), so that entities stored before
// the archive existed are archived on first use. Where the head exists,
// every entity of the list was archived when it was seen.
func (a *archive) seed(ctx context.Context, list []Entity) error {
	if a.seeded || a.readOnly {
		return nil
	}
	a.seeded = true
	_, err := a.store.Get(ctx, a.head)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, storage.ErrNotFound):
		return fmt.Errorf("archive: seed: %w", err)
	}
	return a.add(ctx, list)
}

// recall returns up to max archived entities that text names and that
// are not in the recent list, best match first. Entities past the TTL are
// left out and forgotten.
func (a *archive) recall(ctx context.Context, text string, recent []Entity, limit int, now time.Time) ([]Entity, error) {
	query := a.window(text)
	words := queryWords(query)
	if len(words) == 0 || limit <= 0 {
		return nil, nil
	}
	hits, err := a.search(ctx, query, limit*candidates)
	if err != nil {
		return nil, fmt.Errorf("archive: recall: %w", err)
	}
	out, expired := a.pick(hits, recent, words, limit, now)
	if len(expired) > 0 {
		if err := a.remove(ctx, expired); err != nil {
			return out, err
		}
	}
	return out, nil
}

// window returns the user messages a recall with text reads: text and
// the recentTurns messages before it. It is the same at every step of a
// turn, before and after the turn's message is noted.
func (a *archive) window(text string) string {
	msgs := a.turns
	if len(msgs) == 0 || msgs[len(msgs)-1] != text {
		msgs = append(msgs[:len(msgs):len(msgs)], text)
	}
	return strings.Join(msgs[max(len(msgs)-recentTurns-1, 0):], "\n")
}

// search returns the archive's best k hits for query. The steps of one
// turn ask the same query: the search of the first is kept, and a later
// one gets its hits followed by the documents this run indexed since (a
// document indexed again replaces its hit). Recall then picks from them
// what the query names, so no entity the query names and this run saw is
// missed; only their order may differ from a new search's.
func (a *archive) search(ctx context.Context, query string, k int) ([]storage.Hit, error) {
	if l := &a.last; l.ok && l.query == query && l.k == k {
		return l.merged(), nil
	}
	hits, err := a.index.Search(ctx, a.col, storage.Query{Text: searchText(query), K: k})
	if err != nil {
		return nil, err
	}
	a.last = lastSearch{query: query, k: k, hits: hits, ok: true}
	return hits, nil
}

// merged returns the kept hits, each replaced by its document indexed
// since if there is one, then the other documents indexed since.
func (l *lastSearch) merged() []storage.Hit {
	if len(l.since) == 0 {
		return l.hits
	}
	newer := make(map[string]int, len(l.since))
	for i, h := range l.since {
		newer[h.ID] = i
	}
	out := make([]storage.Hit, 0, len(l.hits)+len(l.since))
	for _, h := range l.hits {
		if i, ok := newer[h.ID]; ok {
			h = l.since[i]
			delete(newer, h.ID)
		}
		out = append(out, h)
	}
	for i, h := range l.since {
		if j, ok := newer[h.ID]; ok && j == i {
			out = append(out, h)
		}
	}
	return out
}

// indexed takes docs, just indexed, along with the kept search.
func (l *lastSearch) indexed(docs []storage.Document) {
	if !l.ok {
		return
	}
	if len(l.since)+len(docs) > maxSince {
		*l = lastSearch{}
		return
	}
	for _, d := range docs {
		l.since = append(l.since, storage.Hit{ID: d.ID, Text: d.Text, Fields: d.Fields})
	}
}

// pick returns up to limit of the hits that words name and that are not
// in the recent list, in order, and apart those of them past the TTL.
func (a *archive) pick(hits []storage.Hit, recent []Entity, words map[string]bool, limit int, now time.Time) (out, expired []Entity) {
	for _, h := range hits {
		e, seen := fromHit(h)
		if containsEntity(recent, &e) || !named(&e, words) {
			continue
		}
		if a.ttl > 0 && now.Sub(seen) > a.ttl {
			expired = append(expired, e)
			continue
		}
		out = append(out, e)
		if len(out) == limit {
			break
		}
	}
	return out, expired
}

// queryWords returns the set of the words of text, stemmed, with the
// whole compounds ("page-123") among them.
func queryWords(text string) map[string]bool {
	words := map[string]bool{}
	for _, t := range lexical.Tokens(nil, text) {
		if !lexical.IsStopWord(t) {
			words[lexical.Stem(t)] = true
		}
	}
	return words
}

// named reports whether words name e: every word of its name (case,
// punctuation and order aside), or its slug, or an ID long enough not to
// occur by chance.
func named(e *Entity, words map[string]bool) bool {
	if len(e.ID) >= minIDMatchLen && whole(e.ID, words) || e.Slug != "" && whole(e.Slug, words) {
		return true
	}
	return allWords(e.Name, words)
}

// allWords reports whether every word of name, stop words aside, is
// among words, and name has such a word at all.
func allWords(name string, words map[string]bool) bool {
	n := 0
	for _, t := range lexical.Tokens(nil, name) {
		if lexical.IsStopWord(t) {
			continue
		}
		if !words[lexical.Stem(t)] {
			return false
		}
		n++
	}
	return n > 0
}

// whole reports whether every token of s is among words, and s has a
// letter or digit at all.
func whole(s string, words map[string]bool) bool {
	toks := lexical.Tokens(nil, s)
	if len(toks) == 0 {
		return false
	}
	// A compound ID is one token whole ("page-123"); a plain one is its
	// single token.
	return words[lexical.Stem(toks[len(toks)-1])]
}

// clear deletes the whole archive of the scope.
func (a *archive) clear(ctx context.Context) error {
	// Escape works byte by byte, so the records' escaped names share
	// the escaped prefix.
	keys, err := a.store.List(ctx, storage.LayerPrefix(a.layerID, a.scope)+storage.Escape(archivePrefix))
	if err != nil {
		return fmt.Errorf("archive: clear: %w", err)
	}
	for _, k := range keys {
		if err := a.store.Delete(ctx, k, storage.AnyVersion); err != nil {
			return fmt.Errorf("archive: clear: %w", err)
		}
	}
	if err := a.store.Delete(ctx, a.head, storage.AnyVersion); err != nil {
		return fmt.Errorf("archive: clear: %w", err)
	}
	a.known = map[string]Entity{}
	a.last = lastSearch{}
	if err := a.index.Drop(ctx, a.col); err != nil {
		return fmt.Errorf("archive: clear: %w", err)
	}
	return nil
}
