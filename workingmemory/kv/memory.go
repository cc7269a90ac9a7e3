package kv

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memlayer/memlayer/storage"
)

// Scope is one scope of a key-value memory: fast, typed, in-process
// memory for code and tools (not the model's scratchpad). Scopes form a
// tree: reads fall back from a scope to its parent, and up to the root;
// writes and removals touch only the scope itself.
//
// Values are serialised to JSON on Set (which checks that they can be, and
// bounds their size) and decoded on Get. For value types that hold no
// references (structs of strings and numbers, for instance) the value is
// also kept as is, and Get returns a copy of it without decoding.
//
// All methods are safe for concurrent use. One read-write lock guards a
// whole tree, so a read sees a consistent chain of scopes.
type Scope struct {
	tree   *tree
	id     string // unique in the tree: "<name>#<n>"
	n      int    // the n of the ID, which orders scopes of one name
	name   string
	path   string
	agent  string // the agent the scope belongs to
	parent *Scope

	// Guarded by tree.mu.
	entries  map[string]*entry
	children map[string]*Scope // by ID
	disposed bool
	dropped  int // the entries the disposal removed, for its change
	inflight map[string]*call
	// dirty, when non-nil, records the keys of this scope changed since
	// its last persist: a [Layer] bound to a store sets it on the
	// scope it persists (see Layer.Flush).
	dirty map[string]struct{}

	// Counts since the scope was made, for Layer.Metrics: reads that
	// started here and found the key in an ancestor, expired entries
	// removed from this scope, and entries set, removed or cleared in it
	// (merged into it, for a parent). A disposed scope's counts go to its
	// parent of the same agent, so its agent's totals never fall.
	fallbacks atomic.Int64
	expired   atomic.Int64
	writes    atomic.Int64
}

type tree struct {
	mu      sync.RWMutex
	cfg     Config
	entries int // all entries of the tree, expired ones included
	scopes  int
	seq     int               // the number of the last scope ID given
	byID    map[string]*Scope // the live scopes
	// clock identifies cfg.Now: the process's wall clock when Now is
	// time.Now, else a clock of this tree's own. In a persisted scope,
	// an expired entry is removed only by a tree of the clock that set
	// its expiry (see removable).
	clock string
}

// newScopeLocked makes a scope of t with a new ID and registers it. The
// tree's write lock must be held (or t not yet shared).
func (t *tree) newScopeLocked(name, agent string, parent *Scope) *Scope {
	id := name + "#" + strconv.Itoa(t.seq)
	m := &Scope{tree: t, id: id, n: t.seq, name: name, path: name, agent: agent, parent: parent, entries: map[string]*entry{}, children: map[string]*Scope{}}
	t.seq++
	if parent != nil {
		m.path = parent.path + "/" + name
		parent.children[id] = m
	}
	t.byID[id] = m
	return m
}

type entry struct {
	raw      []byte // the JSON encoding
	val      any    // the Go value, for reference-free types; nil otherwise
	typ      string // the Go type name of the value set
	meta     Meta
	created  time.Time
	updated  time.Time
	expires  time.Time // zero: never
	clock    string    // the clock that set expires (see tree.clock)
	accesses atomic.Int64
	lastSeen atomic.Int64 // unix nanos
}

type call struct {
	done chan struct{}
	err  error
}

// DefaultImportance is the importance of an entry set with a zero
// Meta.Importance.
const DefaultImportance = 0.5

// NoImportance, as Meta.Importance, sets an entry's importance to 0
// (zero means DefaultImportance).
const NoImportance = -1.0

// Meta is the metadata of an entry.
type Meta struct {
	// Importance ranks the entry, from 0 to 1. Zero means
	// DefaultImportance; NoImportance stores 0.
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

// Entry is an entry with its metadata, as returned by [Scope.Lookup] and
// [Scope.Entries].
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

// ChangeKind names what a [Change] reports.
type ChangeKind string

// The change kinds.
const (
	ChangeSet           ChangeKind = "set"
	ChangeRemoved       ChangeKind = "removed"
	ChangeCleared       ChangeKind = "cleared"
	ChangeScopeCreated  ChangeKind = "scope-created"
	ChangeScopeDisposed ChangeKind = "scope-disposed"
)

// Change is one change of a key-value memory.
type Change struct {
	Kind  ChangeKind
	Scope string // the path of the scope, "root/child"
	// ScopeID is the scope's ID ([Scope.ID]); ParentID its parent's
	// ("" for the root).
	ScopeID, ParentID string
	// AgentID is the agent the scope belongs to ([Scope.AgentID]).
	AgentID string
	Key     string // for set and removed
	// Update, for set, says the key already had an entry in the scope,
	// which the set replaced.
	Update bool
	// Type, for set, is the Go type name of the value ("string",
	// "main.Plan"; "json.RawMessage" for SetJSON).
	Type string
	// Count, for cleared and scope-disposed, is how many entries the
	// clear or the disposal removed from the scope.
	Count int
	Time  time.Time
}

// Stats describes what a scope and its descendants hold.
type Stats struct {
	Entries int       `json:"entries"`         // live (unexpired) entries
	Scopes  int       `json:"scopes"`          // the scope and its descendants
	Bytes   int       `json:"bytes"`           // keys plus serialised values
	Oldest  time.Time `json:"oldest,omitzero"` // the earliest last update of an entry
	Newest  time.Time `json:"newest,omitzero"` // the latest last update of an entry
}

// Config configures a key-value memory. The zero Config is valid.
type Config struct {
	// Name is the root scope's name. Empty means "root".
	Name string
	// AgentID is the agent the root scope belongs to (see
	// [Scope.AgentID]). Optional.
	AgentID string
	// MaxEntries bounds the entries of the whole tree (every scope).
	// Zero means 10,000; negative means no limit.
	MaxEntries int
	// MaxEntryBytes bounds one entry's serialised value. Zero means
	// 1 MiB; negative means no limit.
	MaxEntryBytes int
	// MaxScopes bounds the scopes of the tree, the root included. Zero
	// means 100; negative means no limit.
	MaxScopes int
	// MaxKeyBytes bounds a key's length. Zero means 256.
	MaxKeyBytes int
	// OnChange receives every change (set, remove, clear, scope
	// created, scope disposed). It is called synchronously, after
	// the change and outside the memory's lock, so it may read the
	// memory; it must be safe for concurrent use.
	OnChange func(Change)
	// Logger receives one debug record per change. Nil means
	// slog.Default() (which drops debug records unless configured).
	Logger *slog.Logger
	// Now is the clock used for expiry and timestamps. Nil means
	// time.Now. Reads hide an entry once Now passes its expiry. In a
	// scope a [Layer] persists, shared with other processes whose clocks
	// may disagree, an expired entry is removed (by Purge, the entry
	// limit or a persist) only by a memory of the clock that set it: with
	// a nil Now, any memory of this process; with Now set, this memory
	// alone. Others keep it stored until that clock, or a write of its
	// key, Remove or Clear, removes it.
	Now func() time.Time
	// Redact masks personal data in an entry's value (its JSON) as the
	// memory writes it out: persisted by a [Layer], and in
	// [Scope.Snapshot] and a Layer's checkpoint snapshot. The memory
	// itself keeps the value as it was set, so a run can still use it;
	// what a later run loads is masked. A value Redact turns into
	// something that is not JSON is written as a JSON string. Keys,
	// metadata and timestamps are written as they are. Nil writes values
	// as they are; a Layer then uses its env's redaction
	// (layer.Env.Redact, which agentloop sets from its redact.Policy).
	Redact func(value string) string
}

// Defaults of a memory.
const (
	DefaultMaxEntries    = 10000
	DefaultMaxEntryBytes = 1 << 20
	DefaultMaxScopes     = 100
	DefaultMaxKeyBytes   = 256
)

// New returns an empty key-value memory: the root scope of a new tree.
func New(cfg Config) *Scope {
	cfg.Name = cmp.Or(cfg.Name, "root")
	cfg.MaxEntries = cmp.Or(cfg.MaxEntries, DefaultMaxEntries)
	cfg.MaxEntryBytes = cmp.Or(cfg.MaxEntryBytes, DefaultMaxEntryBytes)
	cfg.MaxScopes = cmp.Or(cfg.MaxScopes, DefaultMaxScopes)
	if cfg.MaxKeyBytes <= 0 {
		cfg.MaxKeyBytes = DefaultMaxKeyBytes
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	clock := wallClock()
	if cfg.Now == nil {
		cfg.Now = time.Now
	} else {
		clock = newClockID()
	}
	t := &tree{cfg: cfg, scopes: 1, byID: map[string]*Scope{}, clock: clock}
	return t.newScopeLocked(cfg.Name, cfg.AgentID, nil)
}

// Name returns the scope's name.
func (mem *Scope) Name() string { return mem.name }

// ID returns the scope's ID, unique in its tree ("<name>#<n>"): two
// scopes of one name have different IDs. [Scope.Scope] finds a scope by
// its ID.
func (mem *Scope) ID() string { return mem.id }

// AgentID returns the ID of the agent the scope belongs to: Config.AgentID
// for the root, the parent's for a [Scope.Child], the one given to
// [Scope.ChildFor]. (A [Layer] sets it to the run's execution ID.)
func (mem *Scope) AgentID() string { return mem.agent }

// IsDisposed reports whether the scope was disposed of ([Scope.Dispose],
// or a Restore of an ancestor that replaced it).
func (mem *Scope) IsDisposed() bool {
	mem.tree.mu.RLock()
	defer mem.tree.mu.RUnlock()
	return mem.disposed
}

// Scope returns the live scope of mem's tree that has the given ID (any
// scope of the tree, not only mem's descendants).
func (mem *Scope) Scope(id string) (*Scope, bool) {
	mem.tree.mu.RLock()
	defer mem.tree.mu.RUnlock()
	s, ok := mem.tree.byID[id]
	return s, ok
}

// Path returns the scope's path from the root, names joined by '/'.
func (mem *Scope) Path() string { return mem.path }

// Parent returns the parent scope, or nil for the root.
func (mem *Scope) Parent() *Scope { return mem.parent }

func (mem *Scope) checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	case len(key) > mem.tree.cfg.MaxKeyBytes:
		return fmt.Errorf("%w: key of %d bytes, the limit is %d", ErrInvalidKey, len(key), mem.tree.cfg.MaxKeyBytes)
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
func (mem *Scope) checkScopeName(name string) error {
	if err := mem.checkKey(name); err != nil {
		return fmt.Errorf("scope name: %w", err)
	}
	if strings.Contains(name, "/") {
		return fmt.Errorf("%w: scope name %s contains '/'", ErrInvalidKey, storage.Quote(name))
	}
	return nil
}

func (mem *Scope) disposedErr() error {
	return fmt.Errorf("%w: %s", ErrDisposed, mem.path)
}

// withLock runs fn under the tree's write lock and returns its error, or
// fails with ErrDisposed without running it when mem was disposed of.
func (mem *Scope) withLock(fn func() error) error {
	mem.tree.mu.Lock()
	defer mem.tree.mu.Unlock()
	if mem.disposed {
		return mem.disposedErr()
	}
	return fn()
}

// withRLock runs fn under the tree's read lock, or fails with ErrDisposed
// without running it when mem was disposed of.
func (mem *Scope) withRLock(fn func()) error {
	mem.tree.mu.RLock()
	defer mem.tree.mu.RUnlock()
	if mem.disposed {
		return mem.disposedErr()
	}
	fn()
	return nil
}

// walkLocked calls fn for mem and each of its descendants, children
// before their parent. The tree's lock must be held.
func (mem *Scope) walkLocked(fn func(s *Scope)) {
	for _, c := range mem.children {
		c.walkLocked(fn)
	}
	fn(mem)
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

// Set stores v under key in mem's scope, replacing any local entry (and its
// metadata).
func Set[T any](mem *Scope, key string, v T) error {
	return SetWith(mem, key, v, Meta{})
}

// SetWith stores v under key in mem's scope with metadata.
func SetWith[T any](mem *Scope, key string, v T, m Meta) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: key %s: %w", ErrInvalidValue, storage.Quote(key), err)
	}
	var cached any
	t := reflect.TypeFor[T]()
	if isRefFree(t) {
		cached = v
	}
	return mem.set(key, raw, cached, t.String(), m)
}

// SetJSON stores raw JSON under key with metadata.
func (mem *Scope) SetJSON(key string, raw json.RawMessage, m Meta) error {
	if !json.Valid(raw) {
		return fmt.Errorf("%w: key %s: not valid JSON", ErrInvalidValue, storage.Quote(key))
	}
	return mem.set(key, slices.Clone(raw), nil, "json.RawMessage", m)
}

func (mem *Scope) set(key string, raw []byte, cached any, typ string, m Meta) error {
	if err := mem.checkKey(key); err != nil {
		return err
	}
	cfg := &mem.tree.cfg
	if cfg.MaxEntryBytes > 0 && len(raw) > cfg.MaxEntryBytes {
		return fmt.Errorf("%w: entry size: key %s is %d bytes, the limit is %d", ErrLimit, storage.Quote(key), len(raw), cfg.MaxEntryBytes)
	}
	imp, err := importance(m.Importance)
	if err != nil {
		return fmt.Errorf("%w: key %s: %w", ErrInvalidValue, storage.Quote(key), err)
	}
	m.Importance = imp
	now := cfg.Now()
	e := &entry{raw: raw, val: cached, typ: typ, meta: m, created: now, updated: now}
	e.meta.Tags = slices.Clone(m.Tags)
	e.meta.TTL = 0
	e.expires = m.expiry(now)
	e.meta.ExpiresAt = e.expires
	if !e.expires.IsZero() {
		e.clock = mem.tree.clock
	}
	update, err := mem.put(key, e, now)
	if err != nil {
		return err
	}
	mem.emit(Change{Kind: ChangeSet, Key: key, Update: update, Type: typ}, now)
	return nil
}

// importance returns the importance stored for the one a Meta gives:
// DefaultImportance for zero, 0 for NoImportance, an error outside 0..1.
func importance(imp float64) (float64, error) {
	switch {
	case imp == 0:
		return DefaultImportance, nil
	case imp == NoImportance:
		return 0, nil
	case !(imp >= 0 && imp <= 1): // NaN too
		return 0, fmt.Errorf("importance %v is outside 0..1 (NoImportance sets 0)", imp)
	}
	return imp, nil
}

// expiry returns when an entry set at now with m expires: after m.TTL,
// else at m.ExpiresAt (zero: never).
func (m Meta) expiry(now time.Time) time.Time {
	switch {
	case m.TTL > 0:
		return now.Add(m.TTL)
	case !m.ExpiresAt.IsZero():
		return m.ExpiresAt
	}
	return time.Time{}
}

// put stores e under key in mem's scope, keeping the creation time of an
// entry it replaces, and reports whether it replaced one. A new key over
// MaxEntries first purges expired entries, then fails with ErrLimit.
func (mem *Scope) put(key string, e *entry, now time.Time) (exists bool, err error) {
	t := mem.tree
	err = mem.withLock(func() error {
		old, ok := mem.entries[key]
		if m := t.cfg.MaxEntries; !ok && m > 0 && t.entries >= m {
			mem.root().purgeLocked(now)
			if t.entries >= m {
				return fmt.Errorf("%w: entries: the memory holds %d, the limit is %d", ErrLimit, t.entries, m)
			}
		}
		if ok {
			e.created = old.created
		} else {
			t.entries++
		}
		exists = ok
		mem.entries[key] = e
		mem.markLocked(key)
		return nil
	})
	return exists, err
}

func (mem *Scope) root() *Scope {
	for mem.parent != nil {
		mem = mem.parent
	}
	return mem
}

// purgeLocked removes expired entries from mem and its descendants (see
// removable).
func (mem *Scope) purgeLocked(now time.Time) (n int) {
	mem.walkLocked(func(s *Scope) {
		for k, e := range s.entries {
			if s.removable(e, now) {
				delete(s.entries, k)
				s.tree.entries--
				s.expired.Add(1)
				n++
			}
		}
	})
	return n
}

// Purge removes the expired entries of mem and its descendants and
// returns how many it removed. Expired entries are invisible to reads
// anyway; Purge frees their memory (Set purges by itself when the entry
// limit is reached).
func (mem *Scope) Purge() (n int) {
	_ = mem.withLock(func() error { // a disposed scope holds nothing
		n = mem.purgeLocked(mem.tree.cfg.Now())
		return nil
	})
	return n
}

func (e *entry) expired(now time.Time) bool {
	return !e.expires.IsZero() && !now.Before(e.expires)
}

// removable reports whether mem may drop e as expired. Reads hide an
// expired entry on every clock; but in a scope a [Layer] persists, whose
// entries other processes share, only the clock that set the expiry may
// remove it: a process whose clock is ahead would otherwise delete
// everyone's live entries when it writes the scope back. An entry stored
// without its clock (before this rule) is removed only by a write of its
// key, Remove or Clear.
func (mem *Scope) removable(e *entry, now time.Time) bool {
	return e.expired(now) && (mem.dirty == nil || e.clock == mem.tree.clock)
}

// wallClock is the clock ID of time.Now in this process.
var wallClock = sync.OnceValue(newClockID)

// newClockID returns a random clock ID.
func newClockID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

// emit completes e with mem's scope and the time, and reports it to
// Config.OnChange and the debug log.
func (mem *Scope) emit(e Change, now time.Time) {
	switch e.Kind {
	case ChangeSet, ChangeRemoved:
		mem.writes.Add(1)
	case ChangeCleared:
		mem.writes.Add(int64(e.Count))
	}
	cfg := &mem.tree.cfg
	if cfg.OnChange == nil && !cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	e.Scope, e.ScopeID, e.AgentID, e.Time = mem.path, mem.id, mem.agent, now
	if mem.parent != nil {
		e.ParentID = mem.parent.id
	}
	if cfg.OnChange != nil {
		cfg.OnChange(e)
	}
	if cfg.Logger.Enabled(context.Background(), slog.LevelDebug) {
		cfg.Logger.LogAttrs(context.Background(), slog.LevelDebug, "kv: "+string(e.Kind),
			slog.String("scope", mem.path), slog.String("scope_id", mem.id), slog.String("agent", mem.agent),
			slog.String("key", e.Key), slog.Bool("update", e.Update), slog.String("type", e.Type), slog.Int("count", e.Count))
	}
}

// find returns the live entry for key: mem's own when local, else the
// first on the way to the root. The tree's read lock must be held.
func (mem *Scope) find(key string, local bool, now time.Time) (*entry, *Scope) {
	for s := mem; s != nil; s = s.parent {
		if e, ok := s.entries[key]; ok && !e.expired(now) {
			return e, s
		}
		if local {
			break
		}
	}
	return nil, nil
}

// lookup is peek, counting the access: every Get's path.
func (mem *Scope) lookup(key string, local bool) (*entry, *Scope, error) {
	now := mem.tree.cfg.Now()
	e, s, err := mem.peek(key, local, now)
	if e != nil {
		e.accesses.Add(1)
		e.lastSeen.Store(now.UnixNano())
		if s != mem {
			mem.fallbacks.Add(1)
		}
	}
	return e, s, err
}

// Get returns the value of key, looked up in mem's scope, then its
// parent's, up to the root. ok is false when no scope holds it (or it
// expired); err reports a disposed scope or a value that does not decode
// into T.
func Get[T any](mem *Scope, key string) (T, bool, error) { return get[T](mem, key, false) }

// GetLocal is [Get] without the parent fallback.
func GetLocal[T any](mem *Scope, key string) (T, bool, error) { return get[T](mem, key, true) }

// get is Get, or GetLocal when local. A value kept as is (see [Scope])
// is returned without decoding.
func get[T any](mem *Scope, key string, local bool) (v T, ok bool, err error) {
	e, _, err := mem.lookup(key, local)
	if err != nil || e == nil {
		return v, false, err
	}
	if c, hit := e.val.(T); hit {
		return c, true, nil
	}
	return decodeRaw[T](key, e.raw)
}

// decodeRaw is apart from get so that its variable, whose address escapes
// into json.Unmarshal, is not allocated on get's fast path.
func decodeRaw[T any](key string, raw []byte) (v T, ok bool, err error) {
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("%w: key %s does not decode into %T: %w", ErrInvalidValue, storage.Quote(key), v, err)
	}
	return v, true, nil
}

// GetOrSet returns the value of key (with parent fallback) or, when no
// scope holds it, calls factory and stores its result in mem's scope. The
// factory runs at most once per key and scope even when many goroutines
// ask at once: the others wait for it and get its value (or its error,
// in which case nothing is stored).
func GetOrSet[T any](mem *Scope, key string, factory func() (T, error)) (T, error) {
	for {
		v, ok, err := Get[T](mem, key)
		if err != nil || ok {
			return v, err
		}
		own, busy, err := mem.claim(key)
		switch {
		case err != nil:
			return v, err
		case own != nil:
			return runFactory(mem, key, own, factory)
		case busy != nil:
			<-busy.done
			if busy.err != nil {
				return v, busy.err
			}
		}
		// Set meanwhile, or set by the call we waited for: look again.
	}
}

// claim registers a GetOrSet call for key in mem's scope and returns it
// as own, unless another goroutine's call is in flight (returned as busy,
// to wait for) or the key was set meanwhile (both nil).
func (mem *Scope) claim(key string) (own, busy *call, err error) {
	err = mem.withLock(func() error {
		if e, _ := mem.find(key, false, mem.tree.cfg.Now()); e != nil {
			return nil
		}
		if busy = mem.inflight[key]; busy != nil {
			return nil
		}
		own = &call{done: make(chan struct{})}
		if mem.inflight == nil {
			mem.inflight = map[string]*call{}
		}
		mem.inflight[key] = own
		return nil
	})
	return own, busy, err
}

// runFactory runs a GetOrSet factory as the call c and releases the
// goroutines waiting on it, even if the factory panics (they then get an
// error and the panic goes on in this goroutine).
func runFactory[T any](mem *Scope, key string, c *call, factory func() (T, error)) (v T, err error) {
	finished := false
	defer func() {
		if !finished {
			err = fmt.Errorf("kv: GetOrSet %s: the factory panicked", storage.Quote(key))
		}
		mem.unclaim(key)
		c.err = err
		close(c.done)
	}()
	v, err = factory()
	if err == nil {
		err = Set(mem, key, v)
	}
	finished = true
	return v, err
}

// unclaim ends the GetOrSet call for key in mem's scope.
func (mem *Scope) unclaim(key string) {
	mem.tree.mu.Lock()
	defer mem.tree.mu.Unlock()
	delete(mem.inflight, key)
}

// Lookup returns the entry of key with its metadata (with parent
// fallback).
func (mem *Scope) Lookup(key string) (Entry, bool, error) {
	e, s, err := mem.lookup(key, false)
	if err != nil || e == nil {
		return Entry{}, false, err
	}
	return e.export(key, s.path), true, nil
}

func (e *entry) export(key, scope string) Entry {
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

// Contains reports whether key is visible from mem (with parent fallback).
func (mem *Scope) Contains(key string) bool {
	e, _, _ := mem.peek(key, false, mem.tree.cfg.Now())
	return e != nil
}

// ContainsLocal reports whether mem's own scope holds key.
func (mem *Scope) ContainsLocal(key string) bool {
	e, _, _ := mem.peek(key, true, mem.tree.cfg.Now())
	return e != nil
}

// peek is find under the tree's read lock: lookup without counting an
// access.
func (mem *Scope) peek(key string, local bool, now time.Time) (e *entry, s *Scope, err error) {
	err = mem.withRLock(func() { e, s = mem.find(key, local, now) })
	return e, s, err
}

// Remove deletes key from mem's own scope (a parent's entry of the same
// key stays, and becomes visible again). It reports whether there was
// one.
func (mem *Scope) Remove(key string) (ok bool, err error) {
	err = mem.withLock(func() error {
		if _, ok = mem.entries[key]; ok {
			delete(mem.entries, key)
			mem.tree.entries--
			mem.markLocked(key)
		}
		return nil
	})
	if ok {
		mem.emit(Change{Kind: ChangeRemoved, Key: key}, mem.tree.cfg.Now())
	}
	return ok, err
}

// Clear removes every entry of mem's own scope (child scopes keep
// theirs) and returns how many it removed (expired ones not counted).
func (mem *Scope) Clear() (int, error) {
	t := mem.tree
	now := t.cfg.Now()
	n := 0
	err := mem.withLock(func() error {
		t.entries -= len(mem.entries)
		for k, e := range mem.entries {
			mem.markLocked(k)
			if !e.expired(now) {
				n++
			}
		}
		clear(mem.entries)
		return nil
	})
	if err != nil {
		return 0, err
	}
	mem.emit(Change{Kind: ChangeCleared, Count: n}, t.cfg.Now())
	return n, nil
}

// Entries returns every entry visible from mem, a local entry hiding a
// parent's of the same key, sorted by key.
func (mem *Scope) Entries() ([]Entry, error) { return mem.entriesOf(false) }

// LocalEntries returns the entries of mem's own scope, sorted by key.
func (mem *Scope) LocalEntries() ([]Entry, error) { return mem.entriesOf(true) }

func (mem *Scope) entriesOf(local bool) ([]Entry, error) {
	var out []Entry
	err := mem.visible(local, func(k string, e *entry, s *Scope) { out = append(out, e.export(k, s.path)) })
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Key, b.Key) })
	return out, err
}

// visible calls fn, under the tree's read lock, for every live entry
// visible from mem (only mem's own when local), a local entry hiding a
// parent's of the same key.
func (mem *Scope) visible(local bool, fn func(key string, e *entry, s *Scope)) error {
	now := mem.tree.cfg.Now()
	return mem.withRLock(func() {
		seen := map[string]bool{}
		for s := mem; s != nil; s = s.parent {
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
	})
}

// Keys returns the keys visible from mem (with parent fallback), sorted.
func (mem *Scope) Keys() ([]string, error) {
	keys := []string{}
	if err := mem.visible(false, func(k string, _ *entry, _ *Scope) { keys = append(keys, k) }); err != nil {
		return nil, err
	}
	slices.Sort(keys)
	return keys, nil
}

// Count returns how many keys are visible from mem (with parent
// fallback).
func (mem *Scope) Count() (int, error) {
	n := 0
	err := mem.visible(false, func(string, *entry, *Scope) { n++ })
	return n, err
}

// LocalCount returns how many live entries mem's own scope holds.
func (mem *Scope) LocalCount() (int, error) {
	n := 0
	err := mem.visible(true, func(string, *entry, *Scope) { n++ })
	return n, err
}

// Child creates a new child scope of mem, named name, belonging to mem's
// agent, and emits ChangeScopeCreated. Every call makes a new, isolated
// scope with its own ID, even for a name in use: two parallel tasks
// given one name never share entries. Keep the returned scope, or find
// it again by its ID with [Scope.Scope]. Names follow the key rules and
// may not contain '/'.
func (mem *Scope) Child(name string) (*Scope, error) {
	return mem.ChildFor(name, mem.agent)
}

// ChildFor is [Scope.Child] for a scope belonging to another agent (a
// child agent): agentID is what [Scope.AgentID] and the scope's changes
// report.
func (mem *Scope) ChildFor(name, agentID string) (*Scope, error) {
	if err := mem.checkScopeName(name); err != nil {
		return nil, err
	}
	t := mem.tree
	var c *Scope
	err := mem.withLock(func() error {
		if t.cfg.MaxScopes > 0 && t.scopes >= t.cfg.MaxScopes {
			return fmt.Errorf("%w: scopes: the memory has %d, the limit is %d", ErrLimit, t.scopes, t.cfg.MaxScopes)
		}
		t.scopes++
		c = t.newScopeLocked(name, agentID, mem)
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.emit(Change{Kind: ChangeScopeCreated}, t.cfg.Now())
	return c, nil
}

// Children returns mem's live child scopes, by name, then in the order
// they were created.
func (mem *Scope) Children() []*Scope {
	mem.tree.mu.RLock()
	defer mem.tree.mu.RUnlock()
	return mem.childrenLocked()
}

// childrenLocked is Children under the tree's lock (read or write).
func (mem *Scope) childrenLocked() []*Scope {
	cs := slices.Collect(maps.Values(mem.children))
	slices.SortFunc(cs, func(a, b *Scope) int {
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(a.n, b.n))
	})
	return cs
}

// Scopes returns the paths of mem and its live descendants, sorted.
func (mem *Scope) Scopes() []string {
	var out []string
	_ = mem.withRLock(func() { // a disposed scope has none
		mem.walkLocked(func(s *Scope) { out = append(out, s.path) })
	})
	slices.Sort(out)
	return out
}

// MergeToParent copies mem's entries (with their metadata) into its
// parent's scope. With overwrite, they replace the parent's entries of
// the same keys; without, the parent's are kept. It returns how many
// entries it copied (one ChangeSet each, on the parent). It fails on the
// root and when the parent would exceed the entry limit (then nothing is
// copied).
func (mem *Scope) MergeToParent(overwrite bool) (int, error) {
	t, p := mem.tree, mem.parent
	now := t.cfg.Now()
	var sets []Change // the parent's changes, one per key merged
	err := mem.withLock(func() error {
		if p == nil {
			return fmt.Errorf("%w: %s is the root and has no parent", ErrInvalidKey, mem.path)
		}
		var added int
		sets, added = mem.mergeSetsLocked(overwrite, now)
		if t.cfg.MaxEntries > 0 && t.entries+added > t.cfg.MaxEntries {
			return fmt.Errorf("%w: entries: merging %d entries into %s would exceed %d", ErrLimit, added, p.path, t.cfg.MaxEntries)
		}
		for _, ev := range sets {
			e := mem.entries[ev.Key]
			p.entries[ev.Key] = &entry{raw: e.raw, val: e.val, typ: e.typ, meta: e.meta, created: e.created, updated: now, expires: e.expires, clock: e.clock}
			p.markLocked(ev.Key)
		}
		t.entries += added
		return nil
	})
	if err != nil {
		return 0, err
	}
	slices.SortFunc(sets, func(a, b Change) int { return strings.Compare(a.Key, b.Key) })
	for _, ev := range sets {
		p.emit(ev, now)
	}
	return len(sets), nil
}

// mergeSetsLocked lists what MergeToParent copies: the parent's changes,
// one per live entry of mem the parent lacks or (with overwrite) holds,
// and how many of them are new to the parent. The tree's lock must be
// held.
func (mem *Scope) mergeSetsLocked(overwrite bool, now time.Time) (sets []Change, added int) {
	for k, e := range mem.entries {
		if e.expired(now) {
			continue
		}
		_, exists := mem.parent.entries[k]
		if exists && !overwrite {
			continue
		}
		if !exists {
			added++
		}
		sets = append(sets, Change{Kind: ChangeSet, Key: k, Update: exists, Type: e.typ})
	}
	return sets, added
}

// Dispose clears mem's entries, disposes its descendants and detaches it
// from its parent. Later use of mem (or of its descendants) fails with
// [ErrDisposed]. Disposing the root empties the whole tree. Dispose is
// idempotent.
func (mem *Scope) Dispose() error {
	var gone []*Scope
	_ = mem.withLock(func() error { // disposed already: nothing to do
		gone = mem.disposeLocked()
		return nil
	})
	now := mem.tree.cfg.Now()
	for _, s := range gone {
		s.emit(Change{Kind: ChangeScopeDisposed, Count: s.dropped}, now)
	}
	return nil
}

// disposeLocked marks mem and its descendants disposed, empties them so
// that handles still held on them fail cleanly, takes them out of the
// tree's counts and detaches mem from its parent. It returns the scopes
// it disposed, children before their parent. The tree's write lock must
// be held.
func (mem *Scope) disposeLocked() (gone []*Scope) {
	t := mem.tree
	mem.walkLocked(func(s *Scope) {
		t.entries -= len(s.entries)
		t.scopes--
		s.dropped = len(s.entries)
		s.entries, s.children, s.disposed = nil, nil, true
		delete(t.byID, s.id)
		gone = append(gone, s)
	})
	if p := mem.parent; p != nil {
		delete(p.children, mem.id)
		for _, s := range gone {
			if s.agent == p.agent {
				p.fallbacks.Add(s.fallbacks.Load())
				p.expired.Add(s.expired.Load())
				p.writes.Add(s.writes.Load())
			}
		}
	}
	return gone
}

// counts sums the fallback, expiry and write counts of mem and of its
// descendants that belong to mem's agent.
func (mem *Scope) counts() (fallbacks, expired, writes int64) {
	mem.tree.mu.RLock()
	defer mem.tree.mu.RUnlock()
	var walk func(s *Scope)
	walk = func(s *Scope) {
		fallbacks += s.fallbacks.Load()
		expired += s.expired.Load()
		writes += s.writes.Load()
		for _, c := range s.children {
			if c.agent == mem.agent {
				walk(c)
			}
		}
	}
	walk(mem)
	return fallbacks, expired, writes
}

// Stats returns what mem and its descendants hold (expired entries not
// counted).
func (mem *Scope) Stats() (st Stats, err error) {
	now := mem.tree.cfg.Now()
	err = mem.withRLock(func() {
		mem.walkLocked(func(s *Scope) {
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
		})
	})
	return st, err
}

// SnapshotVersion is the format version of [Scope.Snapshot].
const SnapshotVersion = 1

type snapshot struct {
	Version int `json:"version"`
	scopeSnapshot
}

type scopeSnapshot struct {
	Name     string                   `json:"name"`
	Entries  map[string]entrySnapshot `json:"entries,omitempty"`
	Children []scopeSnapshot          `json:"children,omitempty"`
}

type entrySnapshot struct {
	Value       json.RawMessage `json:"value"`
	Meta        Meta            `json:"meta,omitzero"`
	CreatedAt   time.Time       `json:"createdAt"`
	UpdatedAt   time.Time       `json:"updatedAt"`
	AccessCount int64           `json:"accessCount,omitempty"`
	// Clock identifies the clock that set the expiry (see
	// Scope.removable); empty in snapshots of older versions.
	Clock string `json:"clock,omitempty"`
}

// Snapshot returns mem and its descendants (entries with metadata, and
// scopes) as versioned JSON, for [Scope.Restore]. Expired entries are left
// out.
func (mem *Scope) Snapshot() (json.RawMessage, error) { return mem.marshal(true) }

// marshal encodes mem, and with children its descendants, in the
// Snapshot format.
func (mem *Scope) marshal(children bool) (json.RawMessage, error) {
	now := mem.tree.cfg.Now()
	var root scopeSnapshot
	if err := mem.withRLock(func() { root = mem.scopeSnapshotLocked(now, children, false) }); err != nil {
		return nil, err
	}
	root.mask(mem.tree.cfg.Redact)
	return encodeSnapshot(root)
}

// mask passes the values of s and its descendants through redact (nil:
// none), outside the tree's lock. A value that comes out as something
// other than JSON is written as a JSON string.
func (s *scopeSnapshot) mask(redact func(string) string) {
	if redact == nil {
		return
	}
	for k, e := range s.Entries {
		in := string(e.Value)
		out := redact(in)
		if out == in {
			continue
		}
		if !json.Valid([]byte(out)) {
			b, _ := json.Marshal(out) // a string always encodes
			out = string(b)
		}
		e.Value = json.RawMessage(out)
		s.Entries[k] = e
	}
	for i := range s.Children {
		s.Children[i].mask(redact)
	}
}

// encodeSnapshot encodes a snapshot whose root scope is root.
func encodeSnapshot(root scopeSnapshot) ([]byte, error) {
	b, err := json.Marshal(snapshot{Version: SnapshotVersion, scopeSnapshot: root})
	if err != nil {
		return nil, fmt.Errorf("kv: snapshot: %w", err)
	}
	return b, nil
}

// scopeSnapshotLocked returns mem's live entries, and with children its
// descendants'. To persist, it keeps the expired entries mem may not
// remove (see removable). The tree's lock must be held (read or write).
func (mem *Scope) scopeSnapshotLocked(now time.Time, children, persist bool) scopeSnapshot {
	// An empty Entries is left out of the JSON, as nil is.
	out := scopeSnapshot{Name: mem.name, Entries: make(map[string]entrySnapshot, len(mem.entries))}
	for k, e := range mem.entries {
		if persist && mem.removable(e, now) || !persist && e.expired(now) {
			continue
		}
		out.Entries[k] = entrySnapshot{Value: e.raw, Meta: e.meta, CreatedAt: e.created, UpdatedAt: e.updated, AccessCount: e.accesses.Load(), Clock: e.clock}
	}
	if children {
		for _, c := range mem.childrenLocked() {
			out.Children = append(out.Children, c.scopeSnapshotLocked(now, true, persist))
		}
	}
	return out
}

// Restore replaces mem's entries and descendants with those of a
// snapshot taken by [Scope.Snapshot] (of any scope: the snapshot's root
// becomes mem). It checks the whole snapshot (format, keys, values,
// limits) before changing anything; on error mem is unchanged.
func (mem *Scope) Restore(data json.RawMessage) error { return mem.restore(data, false) }

// restore is Restore; with keepChildren, mem's child scopes are kept and
// only its own entries replaced (the snapshot must have no children). It
// checks the snapshot and the tree's limits, then swaps the contents in
// under the tree's lock.
func (mem *Scope) restore(data json.RawMessage, keepChildren bool) error {
	snap, entries, scopes, err := mem.parseSnapshot(data)
	if err != nil {
		return err
	}
	if keepChildren && len(snap.Children) > 0 {
		return fmt.Errorf("%w: snapshot: a layer snapshot holds one scope, this one has children", ErrInvalidValue)
	}
	t := mem.tree
	return mem.withLock(func() error {
		curEntries, curScopes := mem.sizeLocked(!keepChildren)
		newEntries, newScopes := t.entries-curEntries+entries, t.scopes-curScopes+scopes
		if err := t.cfg.checkTotals(newEntries, newScopes); err != nil {
			return err
		}
		if !keepChildren {
			for _, c := range mem.children {
				c.disposeLocked()
			}
		}
		mem.markReplacedLocked(snap.Entries)
		mem.fillLocked(snap.scopeSnapshot)
		// The totals counted before, not what disposeLocked subtracted.
		t.entries, t.scopes = newEntries, newScopes
		return nil
	})
}

// markReplacedLocked records as changes to persist every key mem holds
// now and every key of entries, which replace them. The tree's lock must
// be held.
func (mem *Scope) markReplacedLocked(entries map[string]entrySnapshot) {
	for k := range mem.entries {
		mem.markLocked(k)
	}
	for k := range entries {
		mem.markLocked(k)
	}
}

// sizeLocked counts the entries and scopes of mem, and with children of
// its descendants too: what a restore replaces, to compute the tree's
// totals after it. The tree's lock must be held.
func (mem *Scope) sizeLocked(children bool) (entries, scopes int) {
	if !children {
		return len(mem.entries), 1
	}
	mem.walkLocked(func(s *Scope) {
		entries += len(s.entries)
		scopes++
	})
	return entries, scopes
}

// checkTotals reports ErrLimit when a tree of the given totals would
// exceed MaxEntries or MaxScopes.
func (cfg Config) checkTotals(entries, scopes int) error {
	if cfg.MaxEntries > 0 && entries > cfg.MaxEntries {
		return fmt.Errorf("%w: entries: restoring would hold %d, the limit is %d", ErrLimit, entries, cfg.MaxEntries)
	}
	if cfg.MaxScopes > 0 && scopes > cfg.MaxScopes {
		return fmt.Errorf("%w: scopes: restoring would make %d, the limit is %d", ErrLimit, scopes, cfg.MaxScopes)
	}
	return nil
}

// fillLocked replaces mem's entries with the snapshot's and adds child
// scopes built from the snapshot's (restore disposed of the old ones, or
// keeps them when the snapshot has none). The tree's lock must be held.
func (mem *Scope) fillLocked(snap scopeSnapshot) {
	mem.entries = make(map[string]*entry, len(snap.Entries))
	for k, e := range snap.Entries {
		mem.entries[k] = e.toEntry()
	}
	for _, cs := range snap.Children {
		mem.tree.newScopeLocked(cs.Name, mem.agent, mem).fillLocked(cs)
	}
}

// toEntry makes a live entry from a snapshot's.
func (e entrySnapshot) toEntry() *entry {
	ne := &entry{raw: slices.Clone([]byte(e.Value)), meta: e.Meta, created: e.CreatedAt, updated: e.UpdatedAt, expires: e.Meta.ExpiresAt, clock: e.Clock}
	ne.accesses.Store(e.AccessCount)
	return ne
}

// parseSnapshot decodes a snapshot and checks all of it (format, keys,
// values, entry sizes) against mem's rules. It returns the number of
// entries and scopes it holds.
func (mem *Scope) parseSnapshot(data []byte) (snap snapshot, entries, scopes int, err error) {
	if err := json.Unmarshal(data, &snap); err != nil {
		return snap, 0, 0, fmt.Errorf("%w: snapshot: %w", ErrInvalidValue, err)
	}
	if snap.Version > SnapshotVersion {
		return snap, 0, 0, fmt.Errorf("%w: %w: snapshot version %d, this build reads up to %d", ErrInvalidValue, ErrVersion, snap.Version, SnapshotVersion)
	}
	if snap.Version < 1 {
		return snap, 0, 0, fmt.Errorf("%w: snapshot version %d, this build reads up to %d", ErrInvalidValue, snap.Version, SnapshotVersion)
	}
	if err := mem.checkScope(snap.scopeSnapshot, true, &entries, &scopes); err != nil {
		return snap, 0, 0, err
	}
	return snap, entries, scopes, nil
}

// checkScope checks a scope of a snapshot (its name, unless it is the
// root, and its entries) and its children, and counts the entries and
// scopes it holds into entries and scopes.
func (mem *Scope) checkScope(s scopeSnapshot, root bool, entries, scopes *int) error {
	*scopes++
	if !root {
		if err := mem.checkScopeName(s.Name); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	for k, e := range s.Entries {
		if err := mem.checkEntry(k, e); err != nil {
			return err
		}
		*entries++
	}
	for _, c := range s.Children {
		if err := mem.checkScope(c, false, entries, scopes); err != nil {
			return err
		}
	}
	return nil
}

// checkEntry checks an entry of a snapshot: its key, that its value is
// JSON, and its size.
func (mem *Scope) checkEntry(k string, e entrySnapshot) error {
	if err := mem.checkKey(k); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if !json.Valid(e.Value) {
		return fmt.Errorf("%w: snapshot: key %s: value is not valid JSON", ErrInvalidValue, storage.Quote(k))
	}
	if m := mem.tree.cfg.MaxEntryBytes; m > 0 && len(e.Value) > m {
		return fmt.Errorf("%w: entry size: snapshot key %s is %d bytes, the limit is %d", ErrLimit, storage.Quote(k), len(e.Value), m)
	}
	return nil
}

// markLocked records a change of key for the next persist, when mem
// tracks its changes. The tree's write lock must be held.
func (mem *Scope) markLocked(key string) {
	if mem.dirty != nil {
		mem.dirty[key] = struct{}{}
	}
}

// takeChanges returns the keys of mem's scope changed since the last call
// (and forgets them) with a snapshot of the scope's own entries taken at
// the same instant. changed is empty when there is nothing to persist.
func (mem *Scope) takeChanges() (changed map[string]struct{}, snap []byte, err error) {
	now := mem.tree.cfg.Now()
	var own scopeSnapshot
	err = mem.withLock(func() error {
		if len(mem.dirty) > 0 {
			changed, mem.dirty = mem.dirty, map[string]struct{}{}
			own = mem.scopeSnapshotLocked(now, false, true)
		}
		return nil
	})
	if err != nil || len(changed) == 0 {
		return nil, nil, err
	}
	own.mask(mem.tree.cfg.Redact)
	if snap, err = encodeSnapshot(own); err != nil {
		mem.keepChanges(changed)
		return nil, nil, err
	}
	return changed, snap, nil
}

// keepChanges gives back keys takeChanges returned, after a persist that
// failed: they are persisted next time.
func (mem *Scope) keepChanges(changed map[string]struct{}) {
	mem.tree.mu.Lock()
	defer mem.tree.mu.Unlock()
	if mem.dirty != nil {
		for k := range changed {
			mem.dirty[k] = struct{}{}
		}
	}
}

// adopt takes another writer's stored state (a snapshot of one scope,
// already parsed) into mem's own scope, except for the keys mem changed
// and has not persisted yet: those keep mem's value (or absence).
func (mem *Scope) adopt(stored scopeSnapshot) {
	t := mem.tree
	_ = mem.withLock(func() error { // a disposed scope takes nothing
		for k := range mem.entries {
			if _, mine := mem.dirty[k]; mine {
				continue
			}
			if _, ok := stored.Entries[k]; !ok {
				delete(mem.entries, k)
				t.entries--
			}
		}
		for k, e := range stored.Entries {
			if _, mine := mem.dirty[k]; mine {
				continue
			}
			if _, ok := mem.entries[k]; !ok {
				t.entries++
			}
			mem.entries[k] = e.toEntry()
		}
		return nil
	})
}
