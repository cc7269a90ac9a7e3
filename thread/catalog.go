package thread

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memlayer/memlayer/storage"
)

// Catalog is the application's view of a store's threads: their titles
// and metadata, the threads of a resource by recency, and a thread's
// messages page by page. It reads and writes the records the agent loop
// reads and writes, so a thread a run stores is in the catalog, and a
// title set here is kept across runs. A Catalog is safe for concurrent
// use by many goroutines and processes; the zero Catalog has no store
// and must not be used.
//
// Deleting a thread, or every thread of a resource, is the operator API's
// work: inspect.Inspector.DeleteThread removes every record a thread owns
// (its head, segments, summaries, snapshots, audit, metadata, its layers'
// thread-scoped records and search collections) and takes it out of its
// resource's list; inspect.Inspector.EraseResource deletes the list with
// the rest.
type Catalog struct {
	// Store holds the threads.
	Store storage.Store
}

// MetaName names a thread's metadata record,
// storage.ThreadKey(threadID, MetaName): {"title": "...", "metadata":
// {"key": "value", ...}, "updated_at": "..."}. It is written with
// compare-and-swap by [Catalog.Update] only, never by a run, so setting
// a title never races with a run's steps.
const MetaName = "meta"

// Limits on what [Catalog.Update] stores.
const (
	// MaxTitleLen is the longest title, in bytes.
	MaxTitleLen = 256
	// MaxMetadataKeys is the most metadata entries a thread holds.
	MaxMetadataKeys = 64
	// MaxMetadataKeyLen and MaxMetadataValueLen bound one entry, in
	// bytes.
	MaxMetadataKeyLen   = 128
	MaxMetadataValueLen = 1024
)

// Errors of the Catalog. Check them with errors.Is.
var (
	// ErrInvalidMeta means [Catalog.Update] was given a title or
	// metadata it does not store. Nothing was written.
	ErrInvalidMeta = errors.New("thread: invalid title or metadata")
	// ErrNoResource means [Catalog.Update] was given no resource for a
	// thread that has none yet. Nothing was written.
	ErrNoResource = errors.New("thread: the thread has no resource")
	// ErrInvalidQuery means a [ListQuery] or [MessageQuery] has a limit
	// out of range, or a cursor [Catalog.List] did not return.
	ErrInvalidQuery = errors.New("thread: invalid query")
)

// metaRecord is a thread's metadata record.
type metaRecord struct {
	Title     string            `json:"title,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// Thread is a thread as the [Catalog] shows it: its head, its title and
// its metadata. A thread created by [Catalog.Update] before any run has
// a zero head (Version 0) but for its IDs.
type Thread struct {
	Info
	// Title is the title set with [Catalog.Update], else the one derived
	// from the thread's first user request (see [DeriveTitle]), else "".
	Title string `json:"title"`
	// TitleSet says Title was set, not derived.
	TitleSet bool `json:"title_set,omitempty"`
	// Metadata is the metadata set with [Catalog.Update]; nil when none.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// Update changes a thread's title and metadata. Its zero value changes
// nothing.
type Update struct {
	// ResourceID is the thread's resource. It is needed for a thread
	// that has none yet (one no run has stored), which it then belongs
	// to; otherwise it may be empty, or must be the thread's.
	ResourceID string
	// Title, when not nil, sets the title; an empty one goes back to the
	// derived title.
	Title *string
	// Set adds or replaces these metadata entries.
	Set map[string]string
	// Unset removes these metadata keys, after Set is applied.
	Unset []string
}

// maxMetaAttempts bounds the compare-and-swap rounds of one Update.
const maxMetaAttempts = 64

// Update changes a thread's title and metadata with compare-and-swap, so
// concurrent updates of one thread each keep what the others set. It
// gives a thread with no resource the one u names, and puts the thread
// in its resource's list. Invalid input is [ErrInvalidMeta] (or
// [ErrInvalidID], [ErrNoResource], [ErrOtherOwner]) and writes nothing.
// It returns the thread as updated.
func (c Catalog) Update(ctx context.Context, threadID string, u Update) (Thread, error) {
	if err := errors.Join(CheckThreadID(threadID), CheckIDs("", u.ResourceID), u.check()); err != nil {
		return Thread{}, fmt.Errorf("thread: update %s: %w", storage.Quote(threadID), err)
	}
	owner, err := c.claim(ctx, threadID, u.ResourceID)
	if err != nil {
		return Thread{}, fmt.Errorf("thread: update %s: %w", storage.Quote(threadID), err)
	}
	if err := addToIndex(ctx, c.Store, owner, threadID); err != nil {
		return Thread{}, fmt.Errorf("thread: update %s: %w", storage.Quote(threadID), err)
	}
	if err := c.writeMeta(ctx, threadID, u); err != nil {
		return Thread{}, fmt.Errorf("thread: update %s: %w", storage.Quote(threadID), err)
	}
	return c.Get(ctx, threadID)
}

// check refuses a title or metadata Update does not store.
func (u Update) check() error {
	if u.Title != nil {
		if err := checkText("title", *u.Title, MaxTitleLen); err != nil {
			return err
		}
	}
	if len(u.Set) > MaxMetadataKeys {
		return fmt.Errorf("%w: %d metadata entries, more than %d", ErrInvalidMeta, len(u.Set), MaxMetadataKeys)
	}
	for _, k := range slices.Sorted(maps.Keys(u.Set)) {
		if err := errors.Join(checkKey(k), checkText("metadata value of "+storage.Quote(k), u.Set[k], MaxMetadataValueLen)); err != nil {
			return err
		}
	}
	for _, k := range u.Unset {
		if err := checkKey(k); err != nil {
			return err
		}
	}
	return nil
}

// checkKey refuses a metadata key that is empty, too long, or not one
// line of valid UTF-8.
func checkKey(k string) error {
	if k == "" {
		return fmt.Errorf("%w: empty metadata key", ErrInvalidMeta)
	}
	return checkText("metadata key", k, MaxMetadataKeyLen)
}

// checkText refuses a text over max bytes, not valid UTF-8, or holding a
// control character (a line break included).
func checkText(what, s string, max int) error {
	switch {
	case len(s) > max:
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalidMeta, what, len(s), max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidMeta, what)
	case strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("%w: %s holds a control character", ErrInvalidMeta, what)
	}
	return nil
}

// claim returns the thread's resource, giving it resourceID when it has
// none.
func (c Catalog) claim(ctx context.Context, threadID, resourceID string) (string, error) {
	owner, err := Owner(ctx, c.Store, threadID)
	switch {
	case err != nil:
		return "", err
	case owner == "" && resourceID == "":
		return "", fmt.Errorf("%w: give Update.ResourceID", ErrNoResource)
	case owner == "":
		return resourceID, ClaimOwner(ctx, c.Store, threadID, resourceID)
	case resourceID != "" && resourceID != owner:
		return "", ErrOtherOwner
	}
	return owner, nil
}

// writeMeta applies u to the thread's metadata record with
// compare-and-swap, reading it again after each conflict.
func (c Catalog) writeMeta(ctx context.Context, threadID string, u Update) error {
	key := storage.ThreadKey(threadID, MetaName)
	for attempt := range maxMetaAttempts {
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return err
		}
		m, version, err := c.readMeta(ctx, threadID)
		if err != nil {
			return err
		}
		if err := m.apply(u); err != nil {
			return err
		}
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = c.Store.Put(ctx, key, data, version)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write metadata: %w", err)
		}
		return nil
	}
	return fmt.Errorf("write metadata: %d conflicts: %w", maxMetaAttempts, storage.ErrConflict)
}

// apply changes m as u says; more than MaxMetadataKeys entries is
// ErrInvalidMeta.
func (m *metaRecord) apply(u Update) error {
	if u.Title != nil {
		m.Title = *u.Title
	}
	if m.Metadata == nil {
		m.Metadata = map[string]string{}
	}
	maps.Copy(m.Metadata, u.Set)
	for _, k := range u.Unset {
		delete(m.Metadata, k)
	}
	if len(m.Metadata) > MaxMetadataKeys {
		return fmt.Errorf("%w: %d metadata entries, more than %d", ErrInvalidMeta, len(m.Metadata), MaxMetadataKeys)
	}
	m.UpdatedAt = time.Now().UTC()
	return nil
}

// readMeta returns a thread's metadata record and its version
// (storage.NoVersion when it has none).
func (c Catalog) readMeta(ctx context.Context, threadID string) (metaRecord, int64, error) {
	it, err := c.Store.Get(ctx, storage.ThreadKey(threadID, MetaName))
	if errors.Is(err, storage.ErrNotFound) {
		return metaRecord{}, storage.NoVersion, nil
	}
	if err != nil {
		return metaRecord{}, 0, fmt.Errorf("read metadata: %w", err)
	}
	m, err := decodeMeta(it.Value)
	return m, it.Version, err
}

// decodeMeta decodes a metadata record.
func decodeMeta(data []byte) (metaRecord, error) {
	var m metaRecord
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("read metadata: malformed record: %w", err)
	}
	return m, nil
}

// Get returns a thread: its head, title and metadata. A thread with
// neither a head nor metadata gives an error that is
// storage.ErrNotFound. It reads three records in one round trip on a
// storage.MultiGetter, plus, for a thread stored before titles were
// kept, its first segment.
func (c Catalog) Get(ctx context.Context, threadID string) (Thread, error) {
	if err := CheckThreadID(threadID); err != nil {
		return Thread{}, fmt.Errorf("thread: get: %w", err)
	}
	found, err := c.read(ctx, []string{threadID})
	if err != nil {
		return Thread{}, fmt.Errorf("thread: get %s: %w", storage.Quote(threadID), err)
	}
	t, ok := found[threadID]
	if !ok {
		return Thread{}, fmt.Errorf("thread: get %s: %w", storage.Quote(threadID), storage.ErrNotFound)
	}
	if err := c.deriveTitles(ctx, []*entry{t}); err != nil {
		return Thread{}, fmt.Errorf("thread: get %s: %w", storage.Quote(threadID), err)
	}
	return t.Thread, nil
}

// entry is a thread as read for Get and List: the Thread, the resource
// that owns it, and its head's data when the title is still to derive.
type entry struct {
	Thread
	owner string
	head  []byte
}

// read reads the head, metadata and owner records of the threads ids, in
// one GetMany, and returns those that have a head or metadata.
func (c Catalog) read(ctx context.Context, ids []string) (map[string]*entry, error) {
	byKey, err := c.records(ctx, ids, HeadName, MetaName, OwnerName)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*entry, len(ids))
	for _, id := range ids {
		head, meta, owner := byKey[storage.ThreadKey(id, HeadName)], byKey[storage.ThreadKey(id, MetaName)], byKey[storage.ThreadKey(id, OwnerName)]
		if head == nil && meta == nil {
			continue
		}
		e, err := newEntry(id, head, meta, owner)
		if err != nil {
			return nil, fmt.Errorf("thread %s: %w", storage.Quote(id), err)
		}
		out[id] = e
	}
	return out, nil
}

// records reads the records of the threads ids with the given names, in
// one GetMany, and returns the values found by key.
func (c Catalog) records(ctx context.Context, ids []string, names ...string) (map[string][]byte, error) {
	keys := make([]string, 0, len(names)*len(ids))
	for _, id := range ids {
		for _, n := range names {
			keys = append(keys, storage.ThreadKey(id, n))
		}
	}
	items, err := storage.GetMany(ctx, c.Store, keys)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string][]byte, len(items))
	for _, it := range items {
		byKey[it.Key] = it.Value
	}
	return byKey, nil
}

// newEntry builds a thread's entry from its records (nil when absent).
func newEntry(id string, head, meta, owner []byte) (*entry, error) {
	e := &entry{Thread: Thread{Info: Info{ThreadID: id}}}
	if head != nil {
		info, err := ReadInfo(head)
		if err != nil {
			return nil, err
		}
		e.Info, e.Info.ThreadID, e.head = info, id, head
	}
	if err := e.setMeta(meta); err != nil {
		return nil, err
	}
	return e, e.setOwner(owner)
}

// setMeta sets the title and metadata of a metadata record (nil: none);
// a thread with no head takes the record's time as its last.
func (e *entry) setMeta(meta []byte) error {
	if meta == nil {
		return nil
	}
	m, err := decodeMeta(meta)
	if err != nil {
		return err
	}
	e.Title, e.TitleSet = m.Title, m.Title != ""
	if len(m.Metadata) > 0 {
		e.Metadata = m.Metadata
	}
	if e.head == nil {
		e.UpdatedAt = m.UpdatedAt
	}
	return nil
}

// setOwner sets the resource a thread belongs to: its head's, else the
// one its owner record (nil: none) names.
func (e *entry) setOwner(owner []byte) error {
	e.owner = e.ResourceID
	if e.owner != "" || owner == nil {
		return nil
	}
	var o ownerRecord
	if err := json.Unmarshal(owner, &o); err != nil {
		return fmt.Errorf("read owner: malformed record: %w", err)
	}
	e.owner, e.ResourceID = o.ResourceID, o.ResourceID
	return nil
}

// deriveTitles gives each untitled thread the title its head records,
// else the one derived from its first stored user message.
func (c Catalog) deriveTitles(ctx context.Context, es []*entry) error {
	for _, e := range es {
		if e.TitleSet || e.head == nil {
			continue
		}
		title, err := c.storedTitle(ctx, e.ThreadID, e.head)
		if err != nil {
			return err
		}
		e.Title = title
	}
	return nil
}

// storedTitle returns the title of a thread with head data head: the
// one the head records; for a head written before titles were, the one
// derived from the thread's first user message if it is still stored.
func (c Catalog) storedTitle(ctx context.Context, threadID string, head []byte) (string, error) {
	version, err := probeVersion(head)
	if err != nil {
		return "", err
	}
	if version < Version {
		cp, err := decodeLegacy(head)
		if err != nil {
			return "", err
		}
		return firstRequestTitle(cp.Messages), nil
	}
	var h headRecord
	if err := json.Unmarshal(head, &h); err != nil {
		return "", fmt.Errorf("malformed head: %w", err)
	}
	if h.Title != "" || h.Messages == 0 || h.Retained > 0 {
		return h.Title, nil
	}
	return c.firstSegmentTitle(ctx, threadID)
}

// firstSegmentTitle returns the title derived from the thread's first
// segment, which holds its first request, or "" when it is gone.
func (c Catalog) firstSegmentTitle(ctx context.Context, threadID string) (string, error) {
	keys, err := c.Store.List(ctx, storage.ThreadPrefix(threadID)+segPrefix+"0000000000.")
	if err != nil || len(keys) == 0 {
		return "", err
	}
	slices.Sort(keys)
	it, err := c.Store.Get(ctx, keys[0])
	if errors.Is(err, storage.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var s segmentRecord
	if json.Unmarshal(it.Value, &s) != nil || s.First != 0 {
		return "", nil
	}
	return firstRequestTitle(s.Messages), nil
}

// ListQuery selects and pages the threads of a resource for
// [Catalog.List]. The zero value returns the first DefaultListLimit
// threads.
type ListQuery struct {
	// Metadata, when set, keeps the threads whose metadata has every one
	// of these entries, exactly.
	Metadata map[string]string
	// Limit is the most threads a page holds: DefaultListLimit when zero,
	// at most MaxListLimit.
	Limit int
	// Cursor is the Next of the page before; "" starts at the newest.
	Cursor string
}

// The page sizes of [Catalog.List].
const (
	DefaultListLimit = 20
	MaxListLimit     = 1000
)

// Page is one page of a resource's threads.
type Page struct {
	// Threads are newest first: by the time of their last write, then
	// by thread ID.
	Threads []Thread `json:"threads"`
	// Next is the cursor of the next page; "" when this is the last.
	Next string `json:"next,omitempty"`
}

// List returns a page of the threads of a resource, newest first, that
// match q's metadata. A thread of another resource never shows, whatever
// its ID. The cursor is a position in that order, not an offset: a
// thread written after the first page moves to the front and does not
// show again, and a thread not written meanwhile shows once, whatever is
// written or deleted between pages.
//
// It reads the resource's list of threads and, in one round trip on a
// storage.MultiGetter, the head, metadata and owner records of each
// thread on it: its cost grows with the resource's threads, not with
// the store. A thread on the list with neither a head nor metadata (one
// a run is creating, or one deleted) is left out. On a store never
// listed before, it first adds the threads stored by earlier builds to
// their resources' lists (see [Catalog.Reindex]), once.
func (c Catalog) List(ctx context.Context, resourceID string, q ListQuery) (Page, error) {
	if err := CheckResourceID(resourceID); err != nil {
		return Page{}, fmt.Errorf("thread: list: %w", err)
	}
	limit, after, err := q.page()
	if err != nil {
		return Page{}, fmt.Errorf("thread: list %s: %w", storage.Quote(resourceID), err)
	}
	if err := c.ensureIndexed(ctx); err != nil {
		return Page{}, err
	}
	es, err := c.matching(ctx, resourceID, q.Metadata, after)
	if err != nil {
		return Page{}, fmt.Errorf("thread: list %s: %w", storage.Quote(resourceID), err)
	}
	var p Page
	if len(es) > limit {
		es = es[:limit]
		last := es[limit-1]
		p.Next = cursor{At: last.UpdatedAt.UnixNano(), ID: last.ThreadID}.encode()
	}
	if err := c.deriveTitles(ctx, es); err != nil {
		return Page{}, fmt.Errorf("thread: list %s: %w", storage.Quote(resourceID), err)
	}
	p.Threads = make([]Thread, len(es))
	for i, e := range es {
		p.Threads[i] = e.Thread
	}
	return p, nil
}

// matching returns the threads on a resource's list that it owns, whose
// metadata has every entry of md, and that come after the cursor (nil:
// all), newest first.
func (c Catalog) matching(ctx context.Context, resourceID string, md map[string]string, after *cursor) ([]*entry, error) {
	ids, err := readIndex(ctx, c.Store, resourceID)
	if err != nil {
		return nil, err
	}
	found, err := c.read(ctx, ids)
	if err != nil {
		return nil, err
	}
	var es []*entry
	for _, id := range ids {
		e := found[id]
		if e != nil && e.owner == resourceID && storage.Matches(e.Metadata, md) && (after == nil || after.before(e)) {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, func(a, b *entry) int { return newestFirst(a.UpdatedAt, a.ThreadID, b.UpdatedAt, b.ThreadID) })
	return es, nil
}

// newestFirst orders threads by time, newest first, then by ID.
func newestFirst(at time.Time, id string, bt time.Time, bid string) int {
	return cmp.Or(bt.Compare(at), strings.Compare(id, bid))
}

// page returns q's page size and the position it starts after (nil for
// the first page).
func (q ListQuery) page() (int, *cursor, error) {
	limit, err := pageLimit(q.Limit, DefaultListLimit, MaxListLimit)
	if err != nil || q.Cursor == "" {
		return limit, nil, err
	}
	c, err := decodeCursor(q.Cursor)
	if err != nil {
		return 0, nil, err
	}
	return limit, &c, nil
}

// pageLimit returns the page size a query's limit asks for: def for
// zero; one not in 1 to max is ErrInvalidQuery.
func pageLimit(limit, def, max int) (int, error) {
	switch {
	case limit == 0:
		return def, nil
	case limit < 0 || limit > max:
		return 0, fmt.Errorf("%w: limit %d, want 1 to %d", ErrInvalidQuery, limit, max)
	}
	return limit, nil
}

// cursor is a position in a resource's threads, newest first: the last
// thread of a page. It is encoded as base64 of JSON, the ID escaped (see
// storage.Escape) so that any ID survives JSON.
type cursor struct {
	At int64  `json:"t"`
	ID string `json:"id"`
}

func (c cursor) encode() string {
	data, _ := json.Marshal(cursor{At: c.At, ID: storage.Escape(c.ID)})
	return base64.RawURLEncoding.EncodeToString(data)
}

func decodeCursor(s string) (cursor, error) {
	var c cursor
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(data, &c)
	}
	if err == nil {
		c.ID, err = storage.Unescape(c.ID)
	}
	if err != nil || c.ID == "" {
		return c, fmt.Errorf("%w: cursor %s", ErrInvalidQuery, storage.Quote(s))
	}
	return c, nil
}

// before reports whether the cursor's position comes before e's.
func (c *cursor) before(e *entry) bool {
	return newestFirst(time.Unix(0, c.At), c.ID, e.UpdatedAt, e.ThreadID) < 0
}
