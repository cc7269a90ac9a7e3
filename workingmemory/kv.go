package workingmemory

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memlayer/memlayer/storage"
)

// KV is a scoped key-value memory: fast, typed, in-process memory for code
// and tools (not the model's scratchpad). A KV is one scope of a tree:
// reads fall back from the scope to its parent, and up to the root; writes
// and removals touch only the scope itself.
//
// Values are serialised to JSON on Set (which checks that they can be, and
// bounds their size) and decoded on Get. For value types that hold no
// references (structs of strings and numbers, for instance) the value is
// also kept as is, and Get returns a copy of it without decoding.
//
// All methods are safe for concurrent use. One read-write lock guards a
// whole tree, so a read sees a consistent chain of scopes.
type KV struct {
	tree   *kvTree
	name   string
	path   string
	parent *KV

	// Guarded by tree.mu.
	entries  map[string]*kvEntry
	children map[string]*KV
	disposed bool
	inflight map[string]*kvCall
	// dirty, when non-nil, records the keys of this scope changed since
	// its last persist: a [KVLayer] bound to a store sets it on the
	// scope it persists (see KVLayer.Flush).
	dirty map[string]struct{}
}

type kvTree struct {
	mu      sync.RWMutex
	cfg     KVConfig
	entries int // all entries of the tree, expired ones included
	scopes  int
}

type kvEntry struct {
	raw      []byte // the JSON encoding
	val      any    // the Go value, for reference-free types; nil otherwise
	meta     Meta
	created  time.Time
	updated  time.Time
	expires  time.Time // zero: never
	accesses atomic.Int64
	lastSeen atomic.Int64 // unix nanos
}

type kvCall struct {
	done chan struct{}
	err  error
}

// Meta is the metadata of an entry.
type Meta struct {
	// Importance ranks the entry, from 0 to 1.
	Importance float64 `json:"importance,omitempty"`
	// Tags label the entry.
	Tags []string `json:"tags,omitempty"`
	// Type is the kind of memory ("fact", "plan", "cache", ...); free
	// form.
	Type string `json:"type,omitempty"`
	// TTL, when positive, makes the entry expire that long after Set.
	TTL time.Duration `json:"-"`
	// ExpiresAt, when set, is when the entry expires. TTL wins over it.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
}

// Entry is an entry with its metadata, as returned by [KV.Lookup] and
// [KV.Entries].
type Entry struct {
	Key         string          `json:"key"`
	Value       json.RawMessage `json:"value"`
	Scope       string          `json:"scope"` // the path of the scope holding it
	Importance  float64         `json:"importance,omitempty"`
	Tags        []string        `json:"tags,omitempty"`
	Type        string          `json:"type,omitempty"`
	ExpiresAt   time.Time       `json:"expiresAt,omitzero"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
	LastAccess  time.Time       `json:"lastAccess,omitzero"`
	AccessCount int64           `json:"accessCount"`
}

// KVEventKind names what a [KVEvent] reports.
type KVEventKind string

// The event kinds.
const (
	EventSet           KVEventKind = "set"
	EventRemoved       KVEventKind = "removed"
	EventCleared       KVEventKind = "cleared"
	EventScopeCreated  KVEventKind = "scope-created"
	EventScopeDisposed KVEventKind = "scope-disposed"
)

// KVEvent is one change of a key-value memory.
type KVEvent struct {
	Kind  KVEventKind
	Scope string // the path of the scope, "root/child"
	Key   string // for set and removed
	Time  time.Time
}

// KVStats describes what a scope and its descendants hold.
type KVStats struct {
	Entries int       `json:"entries"`         // live (unexpired) entries
	Scopes  int       `json:"scopes"`          // the scope and its descendants
	Bytes   int       `json:"bytes"`           // keys plus serialised values
	Oldest  time.Time `json:"oldest,omitzero"` // the earliest last update of an entry
	Newest  time.Time `json:"newest,omitzero"` // the latest last update of an entry
}

// KV defaults.
const (
	DefaultKVMaxEntries    = 10000
	DefaultKVMaxEntryBytes = 1 << 20
	DefaultKVMaxScopes     = 100
	DefaultKVMaxKeyBytes   = 256
)

// NewKV returns an empty key-value memory: the root scope of a new tree.
func NewKV(cfg KVConfig) *KV {
	if cfg.Name == "" {
		cfg.Name = "root"
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultKVMaxEntries
	}
	if cfg.MaxEntryBytes == 0 {
		cfg.MaxEntryBytes = DefaultKVMaxEntryBytes
	}
	if cfg.MaxScopes == 0 {
		cfg.MaxScopes = DefaultKVMaxScopes
	}
	if cfg.MaxKeyBytes <= 0 {
		cfg.MaxKeyBytes = DefaultKVMaxKeyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	t := &kvTree{cfg: cfg, scopes: 1}
	return &KV{tree: t, name: cfg.Name, path: cfg.Name, entries: map[string]*kvEntry{}, children: map[string]*KV{}}
}

// Name returns the scope's name.
func (kv *KV) Name() string { return kv.name }

// Path returns the scope's path from the root, names joined by '/'.
func (kv *KV) Path() string { return kv.path }

// Parent returns the parent scope, or nil for the root.
func (kv *KV) Parent() *KV { return kv.parent }

func (kv *KV) checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(key) > kv.tree.cfg.MaxKeyBytes:
		return fmt.Errorf("%w: key of %d bytes, the limit is %d", ErrInvalidKey, len(key), kv.tree.cfg.MaxKeyBytes)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key %s is not valid UTF-8", ErrInvalidKey, storage.Quote(key))
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: key %s holds control character %U", ErrInvalidKey, storage.Quote(key), r)
		}
	}
	return nil
}

// checkScopeName checks a child scope's name: the key rules, and no '/'
// (the path separator).
func (kv *KV) checkScopeName(name string) error {
	if err := kv.checkKey(name); err != nil {
		return fmt.Errorf("scope name: %w", err)
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("%w: scope name %s contains '/'", ErrInvalidKey, storage.Quote(name))
	}
	return nil
}

func (kv *KV) disposedErr() error {
	return fmt.Errorf("%w: %s", ErrDisposed, kv.path)
}

// refFree caches, per type, whether values of the type hold no
// references (pointers, maps, slices, interfaces, channels, funcs), so
// that a copy of one shares nothing with the original.
var refFree sync.Map // reflect.Type → bool

func isRefFree(t reflect.Type) bool {
	if v, ok := refFree.Load(t); ok {
		return v.(bool)
	}
	r := refFreeType(t, 0)
	refFree.Store(t, r)
	return r
}

func refFreeType(t reflect.Type, depth int) bool {
	if depth > 16 {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	case reflect.Array:
		return refFreeType(t.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if !refFreeType(t.Field(i).Type, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// Set stores v under key in kv's scope, replacing any local entry (and its
// metadata).
func Set[T any](kv *KV, key string, v T) error {
	return SetWith(kv, key, v, Meta{})
}

// SetWith stores v under key in kv's scope with metadata.
func SetWith[T any](kv *KV, key string, v T, m Meta) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: key %s: %w", ErrInvalidValue, storage.Quote(key), err)
	}
	var cached any
	if isRefFree(reflect.TypeFor[T]()) {
		cached = v
	}
	return kv.set(key, raw, cached, m)
}

// SetJSON stores raw JSON under key with metadata.
func (kv *KV) SetJSON(key string, raw json.RawMessage, m Meta) error {
	if !json.Valid(raw) {
		return fmt.Errorf("%w: key %s: not valid JSON", ErrInvalidValue, storage.Quote(key))
	}
	return kv.set(key, slices.Clone(raw), nil, m)
}

func (kv *KV) set(key string, raw []byte, cached any, m Meta) error {
	if err := kv.checkKey(key); err != nil {
		return err
	}
	cfg := &kv.tree.cfg
	if cfg.MaxEntryBytes > 0 && len(raw) > cfg.MaxEntryBytes {
		return fmt.Errorf("%w: entry size: key %s is %d bytes, the limit is %d", ErrLimit, storage.Quote(key), len(raw), cfg.MaxEntryBytes)
	}
	if m.Importance < 0 || m.Importance > 1 || m.Importance != m.Importance {
		return fmt.Errorf("%w: key %s: importance %v is outside 0..1", ErrInvalidValue, storage.Quote(key), m.Importance)
	}
	now := cfg.Now()
	e := &kvEntry{raw: raw, val: cached, meta: m, created: now, updated: now}
	e.meta.Tags = slices.Clone(m.Tags)
	e.meta.TTL = 0
	switch {
	case m.TTL > 0:
		e.expires = now.Add(m.TTL)
	case !m.ExpiresAt.IsZero():
		e.expires = m.ExpiresAt
	}
	e.meta.ExpiresAt = e.expires
	t := kv.tree
	t.mu.Lock()
	if kv.disposed {
		t.mu.Unlock()
		return kv.disposedErr()
	}
	old, exists := kv.entries[key]
	if !exists && cfg.MaxEntries > 0 && t.entries >= cfg.MaxEntries {
		kv.root().purgeLocked(now)
		if t.entries >= cfg.MaxEntries {
			t.mu.Unlock()
			return fmt.Errorf("%w: entries: the memory holds %d, the limit is %d", ErrLimit, t.entries, cfg.MaxEntries)
		}
	}
	if exists {
		e.created = old.created
	} else {
		t.entries++
	}
	kv.entries[key] = e
	kv.markLocked(key)
	t.mu.Unlock()
	kv.emit(EventSet, key, now)
	return nil
}

func (kv *KV) root() *KV {
	for kv.parent != nil {
		kv = kv.parent
	}
	return kv
}

// purgeLocked removes expired entries from kv and its descendants.
func (kv *KV) purgeLocked(now time.Time) int {
	n := 0
	for k, e := range kv.entries {
		if e.expired(now) {
			delete(kv.entries, k)
			kv.tree.entries--
			n++
		}
	}
	for _, c := range kv.children {
		n += c.purgeLocked(now)
	}
	return n
}

// Purge removes the expired entries of kv and its descendants and
// returns how many it removed. Expired entries are invisible to reads
// anyway; Purge frees their memory (Set purges by itself when the entry
// limit is reached).
func (kv *KV) Purge() int {
	kv.tree.mu.Lock()
	defer kv.tree.mu.Unlock()
	if kv.disposed {
		return 0
	}
	return kv.purgeLocked(kv.tree.cfg.Now())
}

func (e *kvEntry) expired(now time.Time) bool {
	return !e.expires.IsZero() && !now.Before(e.expires)
}

func (kv *KV) emit(kind KVEventKind, key string, now time.Time) {
	cfg := &kv.tree.cfg
	if cfg.Observer != nil {
		cfg.Observer(KVEvent{Kind: kind, Scope: kv.path, Key: key, Time: now})
	}
	if cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		cfg.Logger.LogAttrs(context.Background(), slog.LevelDebug, "workingmemory: kv "+string(kind),
			slog.String("scope", kv.path), slog.String("key", key))
	}
}

// find returns the live entry for key: kv's own when local, else the
// first on the way to the root. The tree's read lock must be held.
func (kv *KV) find(key string, local bool, now time.Time) (*kvEntry, *KV) {
	for s := kv; s != nil; s = s.parent {
		if e, ok := s.entries[key]; ok && !e.expired(now) {
			return e, s
		}
		if local {
			break
		}
	}
	return nil, nil
}

func (kv *KV) lookup(key string, local bool) (*kvEntry, *KV, error) {
	now := kv.tree.cfg.Now()
	kv.tree.mu.RLock()
	if kv.disposed {
		kv.tree.mu.RUnlock()
		return nil, nil, kv.disposedErr()
	}
	e, s := kv.find(key, local, now)
	kv.tree.mu.RUnlock()
	if e != nil {
		e.accesses.Add(1)
		e.lastSeen.Store(now.UnixNano())
	}
	return e, s, nil
}

// Get returns the value of key, looked up in kv's scope, then its
// parent's, up to the root. ok is false when no scope holds it (or it
// expired); err reports a disposed scope or a value that does not decode
// into T.
func Get[T any](kv *KV, key string) (v T, ok bool, err error) {
	e, _, err := kv.lookup(key, false)
	if err != nil || e == nil {
		return v, false, err
	}
	return decodeEntry[T](key, e)
}

// GetLocal is [Get] without the parent fallback.
func GetLocal[T any](kv *KV, key string) (v T, ok bool, err error) {
	e, _, err := kv.lookup(key, true)
	if err != nil || e == nil {
		return v, false, err
	}
	return decodeEntry[T](key, e)
}

func decodeEntry[T any](key string, e *kvEntry) (T, bool, error) {
	if c, hit := e.val.(T); hit {
		return c, true, nil
	}
	return decodeRaw[T](key, e.raw)
}

// decodeRaw is apart from decodeEntry so that its variable, whose address
// escapes into json.Unmarshal, is not allocated on decodeEntry's fast path.
func decodeRaw[T any](key string, raw []byte) (v T, ok bool, err error) {
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("%w: key %s does not decode into %T: %w", ErrInvalidValue, storage.Quote(key), v, err)
	}
	return v, true, nil
}

// GetOrSet returns the value of key (with parent fallback) or, when no
// scope holds it, calls factory and stores its result in kv's scope. The
// factory runs at most once per key and scope even when many goroutines
// ask at once: the others wait for it and get its value (or its error,
// in which case nothing is stored).
func GetOrSet[T any](kv *KV, key string, factory func() (T, error)) (T, error) {
	for {
		v, ok, err := Get[T](kv, key)
		if err != nil || ok {
			return v, err
		}
		t := kv.tree
		t.mu.Lock()
		if kv.disposed {
			t.mu.Unlock()
			return v, kv.disposedErr()
		}
		if e, _ := kv.find(key, false, t.cfg.Now()); e != nil {
			t.mu.Unlock()
			continue // set meanwhile
		}
		if c, busy := kv.inflight[key]; busy {
			t.mu.Unlock()
			<-c.done
			if c.err != nil {
				return v, c.err
			}
			continue
		}
		c := &kvCall{done: make(chan struct{})}
		if kv.inflight == nil {
			kv.inflight = map[string]*kvCall{}
		}
		kv.inflight[key] = c
		t.mu.Unlock()

		return runFactory(kv, key, c, factory)
	}
}

// runFactory runs a GetOrSet factory as the call c and releases the
// goroutines waiting on it, even if the factory panics (they then get an
// error and the panic goes on in this goroutine).
func runFactory[T any](kv *KV, key string, c *kvCall, factory func() (T, error)) (v T, err error) {
	finished := false
	defer func() {
		if !finished {
			err = fmt.Errorf("workingmemory: GetOrSet %s: the factory panicked", storage.Quote(key))
		}
		t := kv.tree
		t.mu.Lock()
		delete(kv.inflight, key)
		t.mu.Unlock()
		c.err = err
		close(c.done)
	}()
	v, err = factory()
	if err == nil {
		err = Set(kv, key, v)
	}
	finished = true
	return v, err
}

// Lookup returns the entry of key with its metadata (with parent
// fallback).
func (kv *KV) Lookup(key string) (Entry, bool, error) {
	e, s, err := kv.lookup(key, false)
	if err != nil || e == nil {
		return Entry{}, false, err
	}
	return e.entry(key, s.path), true, nil
}

func (e *kvEntry) entry(key, scope string) Entry {
	out := Entry{
		Key: key, Value: slices.Clone(e.raw), Scope: scope,
		Importance: e.meta.Importance, Tags: slices.Clone(e.meta.Tags), Type: e.meta.Type,
		ExpiresAt: e.expires, CreatedAt: e.created, UpdatedAt: e.updated,
		AccessCount: e.accesses.Load(),
	}
	if n := e.lastSeen.Load(); n != 0 {
		out.LastAccess = time.Unix(0, n)
	}
	return out
}

// Contains reports whether key is visible from kv (with parent fallback).
func (kv *KV) Contains(key string) bool {
	e, _, _ := kv.peek(key, false)
	return e != nil
}

// ContainsLocal reports whether kv's own scope holds key.
func (kv *KV) ContainsLocal(key string) bool {
	e, _, _ := kv.peek(key, true)
	return e != nil
}

// peek is lookup without counting an access.
func (kv *KV) peek(key string, local bool) (*kvEntry, *KV, error) {
	now := kv.tree.cfg.Now()
	kv.tree.mu.RLock()
	defer kv.tree.mu.RUnlock()
	if kv.disposed {
		return nil, nil, kv.disposedErr()
	}
	e, s := kv.find(key, local, now)
	return e, s, nil
}

// Remove deletes key from kv's own scope (a parent's entry of the same
// key stays, and becomes visible again). It reports whether there was
// one.
func (kv *KV) Remove(key string) (bool, error) {
	t := kv.tree
	t.mu.Lock()
	if kv.disposed {
		t.mu.Unlock()
		return false, kv.disposedErr()
	}
	_, ok := kv.entries[key]
	if ok {
		delete(kv.entries, key)
		t.entries--
		kv.markLocked(key)
	}
	t.mu.Unlock()
	if ok {
		kv.emit(EventRemoved, key, t.cfg.Now())
	}
	return ok, nil
}

// Clear removes every entry of kv's own scope; child scopes keep theirs.
func (kv *KV) Clear() error {
	t := kv.tree
	t.mu.Lock()
	if kv.disposed {
		t.mu.Unlock()
		return kv.disposedErr()
	}
	t.entries -= len(kv.entries)
	for k := range kv.entries {
		kv.markLocked(k)
	}
	clear(kv.entries)
	t.mu.Unlock()
	kv.emit(EventCleared, "", t.cfg.Now())
	return nil
}

// Entries returns every entry visible from kv, a local entry hiding a
// parent's of the same key, sorted by key.
func (kv *KV) Entries() ([]Entry, error) { return kv.entriesOf(false) }

// LocalEntries returns the entries of kv's own scope, sorted by key.
func (kv *KV) LocalEntries() ([]Entry, error) { return kv.entriesOf(true) }

func (kv *KV) entriesOf(local bool) ([]Entry, error) {
	var out []Entry
	err := kv.visible(local, func(k string, e *kvEntry, s *KV) { out = append(out, e.entry(k, s.path)) })
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	return out, err
}

// visible calls fn, under the tree's read lock, for every live entry
// visible from kv (only kv's own when local), a local entry hiding a
// parent's of the same key.
func (kv *KV) visible(local bool, fn func(key string, e *kvEntry, s *KV)) error {
	now := kv.tree.cfg.Now()
	kv.tree.mu.RLock()
	defer kv.tree.mu.RUnlock()
	if kv.disposed {
		return kv.disposedErr()
	}
	seen := map[string]bool{}
	for s := kv; s != nil; s = s.parent {
		for k, e := range s.entries {
			if seen[k] || e.expired(now) {
				continue
			}
			seen[k] = true
			fn(k, e, s)
		}
		if local {
			break
		}
	}
	return nil
}

// Keys returns the keys visible from kv (with parent fallback), sorted.
func (kv *KV) Keys() ([]string, error) {
	keys := []string{}
	if err := kv.visible(false, func(k string, _ *kvEntry, _ *KV) { keys = append(keys, k) }); err != nil {
		return nil, err
	}
	slices.Sort(keys)
	return keys, nil
}

// Count returns how many keys are visible from kv (with parent
// fallback).
func (kv *KV) Count() (int, error) {
	n := 0
	err := kv.visible(false, func(string, *kvEntry, *KV) { n++ })
	return n, err
}

// Child returns kv's child scope of that name, creating it (and emitting
// EventScopeCreated) when there is none. Names follow the key rules and
// may not contain '/'.
func (kv *KV) Child(name string) (*KV, error) {
	if err := kv.checkScopeName(name); err != nil {
		return nil, err
	}
	t := kv.tree
	t.mu.Lock()
	if kv.disposed {
		t.mu.Unlock()
		return nil, kv.disposedErr()
	}
	if c, ok := kv.children[name]; ok {
		t.mu.Unlock()
		return c, nil
	}
	if t.cfg.MaxScopes > 0 && t.scopes >= t.cfg.MaxScopes {
		t.mu.Unlock()
		return nil, fmt.Errorf("%w: scopes: the memory has %d, the limit is %d", ErrLimit, t.scopes, t.cfg.MaxScopes)
	}
	c := &KV{tree: t, name: name, path: kv.path + "/" + name, parent: kv, entries: map[string]*kvEntry{}, children: map[string]*KV{}}
	kv.children[name] = c
	t.scopes++
	t.mu.Unlock()
	c.emit(EventScopeCreated, "", t.cfg.Now())
	return c, nil
}

// Scopes returns the paths of kv and its live descendants, sorted.
func (kv *KV) Scopes() []string {
	kv.tree.mu.RLock()
	defer kv.tree.mu.RUnlock()
	if kv.disposed {
		return nil
	}
	var out []string
	var walk func(s *KV)
	walk = func(s *KV) {
		out = append(out, s.path)
		for _, c := range s.children {
			walk(c)
		}
	}
	walk(kv)
	slices.Sort(out)
	return out
}

// MergeToParent copies kv's entries (with their metadata) into its
// parent's scope. With overwrite, they replace the parent's entries of
// the same keys; without, the parent's are kept. It fails on the root
// and when the parent would exceed the entry limit (then nothing is
// copied).
func (kv *KV) MergeToParent(overwrite bool) error {
	t := kv.tree
	t.mu.Lock()
	if kv.disposed {
		t.mu.Unlock()
		return kv.disposedErr()
	}
	p := kv.parent
	if p == nil {
		t.mu.Unlock()
		return fmt.Errorf("%w: %s is the root and has no parent", ErrInvalidKey, kv.path)
	}
	now := t.cfg.Now()
	var keys []string
	added := 0
	for k, e := range kv.entries {
		if e.expired(now) {
			continue
		}
		_, exists := p.entries[k]
		if exists && !overwrite {
			continue
		}
		if !exists {
			added++
		}
		keys = append(keys, k)
	}
	if t.cfg.MaxEntries > 0 && t.entries+added > t.cfg.MaxEntries {
		t.mu.Unlock()
		return fmt.Errorf("%w: entries: merging %d entries into %s would exceed %d", ErrLimit, added, p.path, t.cfg.MaxEntries)
	}
	for _, k := range keys {
		e := kv.entries[k]
		ne := &kvEntry{raw: e.raw, val: e.val, meta: e.meta, created: e.created, updated: now, expires: e.expires}
		p.entries[k] = ne
		p.markLocked(k)
	}
	t.entries += added
	t.mu.Unlock()
	slices.Sort(keys)
	for _, k := range keys {
		p.emit(EventSet, k, now)
	}
	return nil
}

// Dispose clears kv's entries, disposes its descendants and detaches it
// from its parent. Later use of kv (or of its descendants) fails with
// [ErrDisposed]. Disposing the root empties the whole tree. Dispose is
// idempotent.
func (kv *KV) Dispose() error {
	t := kv.tree
	t.mu.Lock()
	if kv.disposed {
		t.mu.Unlock()
		return nil
	}
	var gone []*KV
	var walk func(s *KV)
	walk = func(s *KV) {
		for _, c := range s.children {
			walk(c)
		}
		t.entries -= len(s.entries)
		s.entries = nil
		s.children = nil
		s.disposed = true
		t.scopes--
		gone = append(gone, s)
	}
	walk(kv)
	if kv.parent != nil {
		delete(kv.parent.children, kv.name)
	}
	t.mu.Unlock()
	now := t.cfg.Now()
	for _, s := range gone {
		s.emit(EventScopeDisposed, "", now)
	}
	return nil
}

// Stats returns what kv and its descendants hold (expired entries not
// counted).
func (kv *KV) Stats() (KVStats, error) {
	now := kv.tree.cfg.Now()
	kv.tree.mu.RLock()
	defer kv.tree.mu.RUnlock()
	if kv.disposed {
		return KVStats{}, kv.disposedErr()
	}
	var st KVStats
	var walk func(s *KV)
	walk = func(s *KV) {
		st.Scopes++
		for k, e := range s.entries {
			if e.expired(now) {
				continue
			}
			st.Entries++
			st.Bytes += len(k) + len(e.raw)
			if st.Oldest.IsZero() || e.updated.Before(st.Oldest) {
				st.Oldest = e.updated
			}
			if e.updated.After(st.Newest) {
				st.Newest = e.updated
			}
		}
		for _, c := range s.children {
			walk(c)
		}
	}
	walk(kv)
	return st, nil
}

// KVSnapshotVersion is the format version of [KV.Snapshot].
const KVSnapshotVersion = 1

type kvSnapshot struct {
	Version int `json:"version"`
	kvScopeSnapshot
}

type kvScopeSnapshot struct {
	Name     string                     `json:"name"`
	Entries  map[string]kvEntrySnapshot `json:"entries,omitempty"`
	Children []kvScopeSnapshot          `json:"children,omitempty"`
}

type kvEntrySnapshot struct {
	Value       json.RawMessage `json:"value"`
	Meta        Meta            `json:"meta,omitzero"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
	AccessCount int64           `json:"accessCount,omitempty"`
}

// Snapshot returns kv and its descendants (entries with metadata, and
// scopes) as versioned JSON, for [KV.Restore]. Expired entries are left
// out.
func (kv *KV) Snapshot() (json.RawMessage, error) { return kv.snapshot(true) }

func (kv *KV) snapshot(children bool) (json.RawMessage, error) {
	now := kv.tree.cfg.Now()
	kv.tree.mu.RLock()
	if kv.disposed {
		kv.tree.mu.RUnlock()
		return nil, kv.disposedErr()
	}
	root := kv.scopeSnapshotLocked(now, children)
	kv.tree.mu.RUnlock()
	b, err := json.Marshal(kvSnapshot{Version: KVSnapshotVersion, kvScopeSnapshot: root})
	if err != nil {
		return nil, fmt.Errorf("workingmemory: kv snapshot: %w", err)
	}
	return b, nil
}

// scopeSnapshotLocked returns kv's live entries, and with children its
// descendants'. The tree's lock must be held (read or write).
func (kv *KV) scopeSnapshotLocked(now time.Time, children bool) kvScopeSnapshot {
	out := kvScopeSnapshot{Name: kv.name}
	for k, e := range kv.entries {
		if e.expired(now) {
			continue
		}
		if out.Entries == nil {
			out.Entries = map[string]kvEntrySnapshot{}
		}
		out.Entries[k] = kvEntrySnapshot{Value: e.raw, Meta: e.meta, CreatedAt: e.created, UpdatedAt: e.updated, AccessCount: e.accesses.Load()}
	}
	if children {
		for _, name := range slices.Sorted(maps.Keys(kv.children)) {
			out.Children = append(out.Children, kv.children[name].scopeSnapshotLocked(now, true))
		}
	}
	return out
}

// Restore replaces kv's entries and descendants with those of a
// snapshot taken by [KV.Snapshot] (of any scope: the snapshot's root
// becomes kv). It checks the whole snapshot (format, keys, values,
// limits) before changing anything; on error kv is unchanged.
func (kv *KV) Restore(data json.RawMessage) error { return kv.restore(data, false) }

// restore is Restore; with keepChildren, kv's child scopes are kept and
// only its own entries replaced (the snapshot must have no children).
func (kv *KV) restore(data json.RawMessage, keepChildren bool) error {
	snap, entries, scopes, err := kv.parseSnapshot(data)
	if err != nil {
		return err
	}
	if keepChildren && len(snap.Children) > 0 {
		return fmt.Errorf("%w: kv snapshot: a layer snapshot holds one scope, this one has children", ErrInvalidValue)
	}
	t := kv.tree
	t.mu.Lock()
	if kv.disposed {
		t.mu.Unlock()
		return kv.disposedErr()
	}
	// What kv's subtree holds now, to compute the tree totals after.
	curEntries, curScopes := 0, 0
	var count func(s *KV)
	count = func(s *KV) {
		curScopes++
		curEntries += len(s.entries)
		if keepChildren {
			return
		}
		for _, c := range s.children {
			count(c)
		}
	}
	count(kv)
	newEntries, newScopes := t.entries-curEntries+entries, t.scopes-curScopes+scopes
	cfg := t.cfg
	if cfg.MaxEntries > 0 && newEntries > cfg.MaxEntries {
		t.mu.Unlock()
		return fmt.Errorf("%w: entries: restoring would hold %d, the limit is %d", ErrLimit, newEntries, cfg.MaxEntries)
	}
	if cfg.MaxScopes > 0 && newScopes > cfg.MaxScopes {
		t.mu.Unlock()
		return fmt.Errorf("%w: scopes: restoring would make %d, the limit is %d", ErrLimit, newScopes, cfg.MaxScopes)
	}
	var detach func(s *KV)
	detach = func(s *KV) {
		for _, c := range s.children {
			detach(c)
			c.disposed = true
			c.entries, c.children = nil, nil
		}
	}
	if !keepChildren {
		detach(kv)
	}
	// Every key kv held or now holds is a change to persist.
	for k := range kv.entries {
		kv.markLocked(k)
	}
	for k := range snap.Entries {
		kv.markLocked(k)
	}
	var build func(s *KV, snap kvScopeSnapshot)
	build = func(s *KV, snap kvScopeSnapshot) {
		s.entries = make(map[string]*kvEntry, len(snap.Entries))
		if s != kv || !keepChildren {
			s.children = map[string]*KV{}
		}
		for k, e := range snap.Entries {
			s.entries[k] = e.toEntry()
		}
		for _, cs := range snap.Children {
			c := &KV{tree: t, name: cs.Name, path: s.path + "/" + cs.Name, parent: s}
			build(c, cs)
			s.children[cs.Name] = c
		}
	}
	build(kv, snap.kvScopeSnapshot)
	t.entries, t.scopes = newEntries, newScopes
	t.mu.Unlock()
	return nil
}

func (e kvEntrySnapshot) toEntry() *kvEntry {
	ne := &kvEntry{raw: slices.Clone([]byte(e.Value)), meta: e.Meta, created: e.CreatedAt, updated: e.UpdatedAt, expires: e.Meta.ExpiresAt}
	ne.accesses.Store(e.AccessCount)
	return ne
}

// parseSnapshot decodes a snapshot and checks all of it (format, keys,
// values, entry sizes) against kv's rules. It returns the number of
// entries and scopes it holds.
func (kv *KV) parseSnapshot(data []byte) (snap kvSnapshot, entries, scopes int, err error) {
	if err := json.Unmarshal(data, &snap); err != nil {
		return snap, 0, 0, fmt.Errorf("%w: kv snapshot: %w", ErrInvalidValue, err)
	}
	if snap.Version < 1 || snap.Version > KVSnapshotVersion {
		return snap, 0, 0, fmt.Errorf("%w: kv snapshot version %d, this build reads up to %d", ErrInvalidValue, snap.Version, KVSnapshotVersion)
	}
	var check func(s kvScopeSnapshot, root bool) error
	check = func(s kvScopeSnapshot, root bool) error {
		scopes++
		if !root {
			if err := kv.checkScopeName(s.Name); err != nil {
				return fmt.Errorf("kv snapshot: %w", err)
			}
		}
		names := map[string]bool{}
		for k, e := range s.Entries {
			if err := kv.checkKey(k); err != nil {
				return fmt.Errorf("kv snapshot: %w", err)
			}
			if !json.Valid(e.Value) {
				return fmt.Errorf("%w: kv snapshot: key %s: value is not valid JSON", ErrInvalidValue, storage.Quote(k))
			}
			if m := kv.tree.cfg.MaxEntryBytes; m > 0 && len(e.Value) > m {
				return fmt.Errorf("%w: entry size: kv snapshot key %s is %d bytes, the limit is %d", ErrLimit, storage.Quote(k), len(e.Value), m)
			}
			entries++
		}
		for _, c := range s.Children {
			if names[c.Name] {
				return fmt.Errorf("%w: kv snapshot: scope %q appears twice", ErrInvalidValue, c.Name)
			}
			names[c.Name] = true
			if err := check(c, false); err != nil {
				return err
			}
		}
		return nil
	}
	if err := check(snap.kvScopeSnapshot, true); err != nil {
		return snap, 0, 0, err
	}
	return snap, entries, scopes, nil
}

// markLocked records a change of key for the next persist, when kv
// tracks its changes. The tree's write lock must be held.
func (kv *KV) markLocked(key string) {
	if kv.dirty != nil {
		kv.dirty[key] = struct{}{}
	}
}

// takeChanges returns the keys of kv's scope changed since the last call
// (and forgets them) with a snapshot of the scope's own entries taken at
// the same instant. changed is empty when there is nothing to persist.
func (kv *KV) takeChanges() (changed map[string]struct{}, snap []byte, err error) {
	t := kv.tree
	now := t.cfg.Now()
	t.mu.Lock()
	if kv.disposed {
		t.mu.Unlock()
		return nil, nil, kv.disposedErr()
	}
	if len(kv.dirty) == 0 {
		t.mu.Unlock()
		return nil, nil, nil
	}
	changed, kv.dirty = kv.dirty, map[string]struct{}{}
	own := kv.scopeSnapshotLocked(now, false)
	t.mu.Unlock()
	b, err := json.Marshal(kvSnapshot{Version: KVSnapshotVersion, kvScopeSnapshot: own})
	if err != nil {
		kv.keepChanges(changed)
		return nil, nil, fmt.Errorf("workingmemory: kv snapshot: %w", err)
	}
	return changed, b, nil
}

// keepChanges gives back keys takeChanges returned, after a persist that
// failed: they are persisted next time.
func (kv *KV) keepChanges(changed map[string]struct{}) {
	kv.tree.mu.Lock()
	defer kv.tree.mu.Unlock()
	if kv.dirty != nil {
		for k := range changed {
			kv.dirty[k] = struct{}{}
		}
	}
}

// adopt takes another writer's stored state (a snapshot of one scope,
// already parsed) into kv's own scope, except for the keys kv changed
// and has not persisted yet: those keep kv's value (or absence).
func (kv *KV) adopt(stored kvScopeSnapshot) {
	t := kv.tree
	t.mu.Lock()
	defer t.mu.Unlock()
	if kv.disposed {
		return
	}
	for k := range kv.entries {
		if _, mine := kv.dirty[k]; mine {
			continue
		}
		if _, ok := stored.Entries[k]; !ok {
			delete(kv.entries, k)
			t.entries--
		}
	}
	for k, e := range stored.Entries {
		if _, mine := kv.dirty[k]; mine {
			continue
		}
		if _, ok := kv.entries[k]; !ok {
			t.entries++
		}
		kv.entries[k] = e.toEntry()
	}
}
