package inspect

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// ErrInvalidKey means a key given to the Inspector is not one of the
// kind it needs.
var ErrInvalidKey = errors.New("inspect: invalid key")

// Inspector lists, reads and erases what agents stored, working from the
// store alone: it needs no layers and no model. Everything it finds comes
// from the key layout of package storage (storage.ThreadKey,
// storage.LayerKey): a thread's head (or, for a thread that has none,
// such as an audit written apart from a run, its owner record) names its
// resource, and a layer's records are keyed by a typed scope key
// (storage.ScopeKind) that says whose they are.
//
// Per-user data is what a thread of the resource stored (its head,
// segments, summaries, layer snapshots, audit, title and metadata), the
// resource's list of threads (thread.IndexName), and every layer record
// whose typed scope key is the resource's (storage.ResourceScope) or
// belongs to one of its threads: the thread's own (storage.ThreadScope),
// its resource scope when it ran without a resource
// (storage.AnonymousScope), and those of its child agents, whose keys
// name it as their root thread; quarantined copies included. The erase
// selects records by these typed keys only, never by a thread ID's prefix
// or by an ID equal across kinds, so erasing one user never touches
// another's records, whatever their IDs.
//
// Global-scope state (storage.GlobalScope) is shared by every user and is
// not per-user: [Inspector.EraseResource] leaves it, and so must
// whatever a layer writes there. Execution-scoped state is keyed by an
// execution ID the store does not tie to a resource; it is meant to be
// temporary (give it a TTL on Redis) and is not erased either.
//
// # Records stored before scope keys were typed
//
// Layer records of memlayer versions that keyed them by the bare ID move
// under typed keys as their layer loads them (see layer.MigrateLegacy).
// Until then the erase takes an untyped record when its key is the erased
// resource's ID, one of its thread IDs, or a child agent's thread ID of
// one (the generated form "<thread>/child-<n>-<12 hex digits>", at any
// depth) — unless the key is also another owner's ID: a thread of another
// resource or of none, a resource that owns other threads. Such a record
// may be either's, and is neither deleted nor lost: it is reported in
// [Erased].Ambiguous for the operator to decide.
//
// # Erase during runs
//
// An erase deletes a thread's head last, with compare-and-swap against
// the version it listed the thread's records by (a run that writes
// meanwhile makes it list again), and then sweeps every key a second
// time. See RELIABILITY.md ("Erase during runs") for what holds when a
// run of the resource is going.
type Inspector struct {
	// Store holds the threads and layer state.
	Store storage.Store
}

// ThreadQuery selects threads for [Inspector.Threads]. The zero value
// lists every thread.
type ThreadQuery struct {
	// ResourceID, when set, keeps the threads of that resource.
	ResourceID string
	// Offset skips that many threads of the newest-first list; Limit, when
	// positive, returns at most that many.
	Offset, Limit int
}

// Threads lists the stored threads, newest (by UpdatedAt) first, then by
// thread ID: every thread with a head, and every thread with records but
// no head (an audit written apart from a run, say), whose thread.Info
// has Version 0 and the resource of its owner record. It reads every
// head under "threads/": its cost grows with the number of threads.
func (in Inspector) Threads(ctx context.Context, q ThreadQuery) ([]thread.Info, error) {
	all, err := in.threads(ctx)
	if err != nil {
		return nil, err
	}
	var out []thread.Info
	for _, info := range all {
		if q.ResourceID == "" || info.ResourceID == q.ResourceID {
			out = append(out, info)
		}
	}
	slices.SortStableFunc(out, func(a, b thread.Info) int {
		return cmp.Or(b.UpdatedAt.Compare(a.UpdatedAt), strings.Compare(a.ThreadID, b.ThreadID))
	})
	out = out[min(max(q.Offset, 0), len(out)):]
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// threads reads every stored thread's head (or owner record), in no
// particular order.
func (in Inspector) threads(ctx context.Context) ([]thread.Info, error) {
	keys, err := in.Store.List(ctx, "threads/")
	if err != nil {
		return nil, fmt.Errorf("inspect: list threads: %w", err)
	}
	ids, names := threadNames(keys)
	var out []thread.Info
	for _, id := range ids {
		info, err := in.threadInfo(ctx, id, names[id])
		if err != nil {
			return nil, fmt.Errorf("inspect: list threads: %w", err)
		}
		out = append(out, info)
	}
	return out, nil
}

// threadNames returns the thread IDs of keys under "threads/", in the
// order first found, and the set of escaped record names each has. A
// key this package did not write is left out.
func threadNames(keys []string) ([]string, map[string]map[string]bool) {
	names := map[string]map[string]bool{}
	var ids []string
	for _, k := range keys {
		esc, name, ok := strings.Cut(strings.TrimPrefix(k, "threads/"), "/")
		id, err := storage.Unescape(esc)
		if !ok || err != nil {
			continue
		}
		if names[id] == nil {
			names[id] = map[string]bool{}
			ids = append(ids, id)
		}
		names[id][name] = true
	}
	return ids, names
}

// threadInfo reads thread id's head, when names has it, and its owner
// record, when names has it and the head names no resource. A head
// deleted while listing reads as none.
func (in Inspector) threadInfo(ctx context.Context, id string, names map[string]bool) (thread.Info, error) {
	info := thread.Info{ThreadID: id}
	if names[storage.Escape(thread.HeadName)] {
		var err error
		if info, err = in.headInfo(ctx, id); err != nil {
			return info, err
		}
	}
	if info.ResourceID == "" && names[storage.Escape(thread.OwnerName)] {
		owner, err := thread.ReadOwner(ctx, in.Store, id)
		if err != nil {
			return info, fmt.Errorf("thread %s: %w", storage.Quote(id), err)
		}
		info.ResourceID = owner
	}
	return info, nil
}

// headInfo reads what thread id's head says of it. A head deleted
// meanwhile says nothing.
func (in Inspector) headInfo(ctx context.Context, id string) (thread.Info, error) {
	info := thread.Info{ThreadID: id}
	it, err := in.Store.Get(ctx, storage.ThreadKey(id, thread.HeadName))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return info, nil // deleted while listing
	case err != nil:
		return info, err
	}
	if info, err = thread.ReadInfo(it.Value); err != nil {
		return info, fmt.Errorf("thread %s: %w", storage.Quote(id), err)
	}
	info.ThreadID = id
	return info, nil
}

// Thread reads a stored thread: its checkpoint metadata, its summary, its
// layer snapshots and every retained message (Messages from message
// First; see thread.LoadAll). A thread never stored gives an error that
// is storage.ErrNotFound.
func (in Inspector) Thread(ctx context.Context, threadID string) (*thread.Checkpoint, error) {
	return thread.LoadAll(ctx, in.Store, threadID)
}

// LayerState returns every record a layer stored for a scope key (a
// typed one such as storage.ThreadScope(id) or storage.ResourceScope(id),
// "thread:<id>" and "resource:<id>"; a bare ID reads the untyped records
// of earlier versions, see [LayerKey]), sorted by
// key: its state and, under names starting with storage.QuarantinePrefix,
// quarantined copies. A scope with no records gives none and no error.
func (in Inspector) LayerState(ctx context.Context, layerID, scopeKey string) ([]storage.Item, error) {
	keys, err := in.Store.List(ctx, storage.LayerPrefix(layerID, scopeKey))
	if err != nil {
		return nil, fmt.Errorf("inspect: layer %s scope %s: %w", storage.Quote(layerID), storage.Quote(scopeKey), err)
	}
	items := make([]storage.Item, 0, len(keys))
	for _, k := range keys {
		it, err := in.Store.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("inspect: layer %s scope %s: %w", storage.Quote(layerID), storage.Quote(scopeKey), err)
		}
		items = append(items, it)
	}
	return items, nil
}

// LayerKey is a layer record's key split into its parts.
type LayerKey struct {
	LayerID string `json:"layer_id"`
	// ScopeKey is the typed scope key (see storage.ScopeKind), or for a
	// record stored before scope keys were typed, the bare ID it was
	// stored under (then Legacy is true).
	ScopeKey string `json:"scope_key"`
	Name     string `json:"name"`
	// Legacy marks a record of the untyped layout (see
	// storage.LegacyLayerPrefix), which its layer moves under a typed key
	// when it next loads that scope.
	Legacy bool `json:"legacy,omitempty"`
}

// Key returns the key k was parsed from.
func (k LayerKey) Key() string { return k.keyOf(k.Name) }

// keyOf returns the key of another record of k's layer and scope.
func (k LayerKey) keyOf(name string) string {
	if k.Legacy {
		return storage.LegacyLayerPrefix(k.LayerID, k.ScopeKey) + storage.Escape(name)
	}
	return storage.LayerKey(k.LayerID, k.ScopeKey, name)
}

// ParseLayerKey splits a key built by storage.LayerKey (or one of the
// untyped layout, storage.LegacyLayerPrefix: then Legacy is set); ok is
// false for any other key.
func ParseLayerKey(key string) (k LayerKey, ok bool) {
	rest, found := strings.CutPrefix(key, "layers/")
	if !found {
		return k, false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) != 3 {
		return k, false
	}
	var err1, err2, err3 error
	k.LayerID, err1 = storage.Unescape(parts[0])
	k.Name, err3 = storage.Unescape(parts[2])
	if _, typed := storage.ParseScopeKey(parts[1]); typed {
		k.ScopeKey = parts[1]
	} else {
		k.ScopeKey, err2 = storage.Unescape(parts[1])
		k.Legacy = true
	}
	if errors.Join(err1, err2, err3) != nil {
		return LayerKey{}, false
	}
	return k, true
}

// Erased reports what a delete or an erase removed.
type Erased struct {
	// Threads are the IDs of the threads deleted.
	Threads []string `json:"threads"`
	// Counts is how many records of each kind were deleted: "thread.head",
	// "thread.owner", "thread.segment", "thread.summary",
	// "thread.snapshot", "thread.meta" (its title and metadata),
	// "thread.audit" (the thread's audit turns), "thread.other",
	// "resource.threads" (a resource's list of threads),
	// "layer.<layer ID>" for a layer's state,
	// "quarantine.<layer ID>" for its quarantined copies and
	// "index.<layer ID>" for its search collections.
	Counts map[string]int `json:"counts"`
	// Keys are the deleted keys and dropped collections, in the order
	// they were deleted.
	Keys []string `json:"keys"`
	// Ambiguous are the keys of layer records stored before scope keys
	// were typed whose key names the erased resource or thread and also
	// another owner (see [Inspector]): they were kept.
	Ambiguous []string `json:"ambiguous,omitempty"`
}

func (e *Erased) add(kind, key string) {
	if e.Counts == nil {
		e.Counts = map[string]int{}
	}
	e.Counts[kind]++
	e.Keys = append(e.Keys, key)
}

// DeleteThread deletes a thread: every record under its
// storage.ThreadPrefix (head, owner record, segments, summaries, layer
// snapshots, audit) and every layer record of its scopes: its own, its
// resource scope if it ran without a resource, and its child agents'
// (quarantined copies included). Its head goes last, so an interrupted
// delete can be run again. Then it takes the thread out of its
// resource's list of threads (see thread.IndexName); the resource's
// other threads, whatever their IDs, are untouched. Deleting a thread
// never stored removes nothing and is no error.
func (in Inspector) DeleteThread(ctx context.Context, threadID string) (*Erased, error) {
	if err := thread.CheckThreadID(threadID); err != nil {
		return nil, fmt.Errorf("inspect: delete thread: %w", err)
	}
	owner, err := thread.Owner(ctx, in.Store, threadID)
	if err != nil {
		return nil, fmt.Errorf("inspect: delete thread %s: %w", storage.Quote(threadID), err)
	}
	e := &Erased{}
	if err := in.erase(ctx, e, owned{threads: []string{threadID}}); err != nil {
		return e, fmt.Errorf("inspect: delete thread %s: %w", storage.Quote(threadID), err)
	}
	if owner != "" {
		if err := thread.Unindex(ctx, in.Store, owner, threadID); err != nil {
			return e, fmt.Errorf("inspect: delete thread %s: %w", storage.Quote(threadID), err)
		}
	}
	return e, nil
}

// EraseResource deletes everything stored for one resource (one user):
// every thread whose head (or owner record) names it, with all its
// records, and every layer record of the resource's scope, of those
// threads' scopes and of their child agents', and the resource's own
// records (its list of threads, under storage.ResourcePrefix), on any
// backend. It reports
// what it removed; on a store that is a storage.Purger it then purges, so that
// on SQLite the erased bytes stay neither in the file's free pages nor in
// its write-ahead log. Global-scope state is not per-user and is kept
// (see [Inspector]). An error leaves part erased: run it again.
func (in Inspector) EraseResource(ctx context.Context, resourceID string) (*Erased, error) {
	if err := thread.CheckResourceID(resourceID); err != nil {
		return nil, fmt.Errorf("inspect: erase: %w", err)
	}
	o, err := in.resourceOwned(ctx, resourceID)
	if err != nil {
		return nil, err
	}
	e := &Erased{}
	if err := in.erase(ctx, e, o); err != nil {
		return e, fmt.Errorf("inspect: erase resource %s: %w", storage.Quote(resourceID), err)
	}
	return e, nil
}

// owned is what a delete or an erase selects: the resource (empty for a
// thread's delete) and the threads.
type owned struct {
	resource string
	threads  []string
	// all is every stored thread, read when an untyped record must be
	// told apart (see ambiguous); nil until then.
	all []thread.Info
}

// record is a key to erase and its kind (see Erased.Counts).
type record struct{ kind, key string }

// layerRecords returns the keys of the layer records o selects, and the
// untyped ones that name o and another owner too.
func (in Inspector) layerRecords(ctx context.Context, o *owned) (recs []record, ambiguous []string, err error) {
	keys, err := in.Store.List(ctx, "layers/")
	if err != nil {
		return nil, nil, fmt.Errorf("list layer records: %w", err)
	}
	for _, k := range keys {
		lk, ok := ParseLayerKey(k)
		if !ok {
			continue
		}
		mine, amb, err := in.selects(ctx, o, lk)
		switch {
		case err != nil:
			return nil, nil, err
		case amb:
			ambiguous = append(ambiguous, k)
		case mine:
			recs = append(recs, record{lk.kind(), k})
		}
	}
	return recs, ambiguous, nil
}

// selects reports whether o selects the layer record of lk, and whether
// the record is an untyped one that names another owner too.
func (in Inspector) selects(ctx context.Context, o *owned, lk LayerKey) (mine, ambiguous bool, err error) {
	if !lk.Legacy {
		return o.typedMine(lk.ScopeKey), false, nil
	}
	mine, err = in.legacyMine(ctx, o, lk.ScopeKey)
	return mine, mine && o.ambiguous(lk.ScopeKey), err
}

// kind is what an erase counts the record of lk under:
// "quarantine.<layer ID>" for a quarantined copy, else
// "layer.<layer ID>".
func (lk LayerKey) kind() string {
	if strings.HasPrefix(lk.Name, storage.QuarantinePrefix) {
		return "quarantine." + lk.LayerID
	}
	return "layer." + lk.LayerID
}

// typedMine reports whether a typed scope key is o's: the resource's, or
// a thread's (its own, its resource scope without a resource, its child
// agents'), compared as whole IDs of the one kind.
func (o *owned) typedMine(scopeKey string) bool {
	p, ok := storage.ParseScopeKey(scopeKey)
	if !ok {
		return false
	}
	switch p.Kind {
	case storage.KindResource:
		return o.resource != "" && p.ID == o.resource
	case storage.KindThread, storage.KindAnonymous:
		return slices.Contains(o.threads, p.ID)
	}
	return false
}

// legacyMine reports whether an untyped scope key names o: the resource,
// a thread, or a child agent's generated thread ID of one that is not a
// thread of its own. It reads every thread first when it has to tell.
func (in Inspector) legacyMine(ctx context.Context, o *owned, scope string) (bool, error) {
	if (o.resource != "" && scope == o.resource) || slices.Contains(o.threads, scope) {
		return true, in.readAll(ctx, o)
	}
	for root, ok := legacyChildRoot(scope); ok; root, ok = legacyChildRoot(root) {
		if slices.Contains(o.threads, root) {
			if err := in.readAll(ctx, o); err != nil {
				return false, err
			}
			// A thread stored under that very name is someone's own.
			return !slices.ContainsFunc(o.all, func(t thread.Info) bool { return t.ThreadID == scope }), nil
		}
	}
	return false, nil
}

// readAll reads every stored thread into o.all, once.
func (in Inspector) readAll(ctx context.Context, o *owned) error {
	if o.all != nil {
		return nil
	}
	all, err := in.threads(ctx)
	if err != nil {
		return err
	}
	o.all = append(all, thread.Info{}) // non-nil even when empty
	return nil
}

// ambiguous reports whether an untyped scope key o selects also names
// another owner: a thread not in o (of another resource or of none), or
// a resource other than o's that owns threads.
func (o *owned) ambiguous(scope string) bool {
	for _, t := range o.all {
		if t.ThreadID == "" {
			continue
		}
		if t.ThreadID == scope && !slices.Contains(o.threads, scope) {
			return true
		}
		if t.ResourceID == scope && t.ResourceID != o.resource {
			return true
		}
	}
	return false
}

// legacyChildRoot returns the parent of a child agent's thread ID of the
// form memlayer generated before scope keys were typed,
// "<parent>/child-<depth>-<12 hex digits>".
func legacyChildRoot(id string) (string, bool) {
	i := strings.LastIndex(id, "/child-")
	if i <= 0 {
		return "", false
	}
	depth, suffix, ok := strings.Cut(id[i+len("/child-"):], "-")
	if !ok || depth == "" || len(suffix) != 12 || strings.Trim(depth, "0123456789") != "" ||
		strings.Trim(suffix, "0123456789abcdef") != "" {
		return "", false
	}
	return id[:i], true
}

// threadRecords returns the keys of a thread's records, its owner record
// and head last, and the version of its head (storage.NoVersion when it
// has none).
func (in Inspector) threadRecords(ctx context.Context, id string) ([]record, int64, error) {
	prefix := storage.ThreadPrefix(id)
	head := storage.ThreadKey(id, thread.HeadName)
	ownerKey := storage.ThreadKey(id, thread.OwnerName)
	version, err := in.version(ctx, head)
	if err != nil {
		return nil, 0, fmt.Errorf("read thread %s: %w", storage.Quote(id), err)
	}
	keys, err := in.Store.List(ctx, prefix)
	if err != nil {
		return nil, 0, fmt.Errorf("list thread %s: %w", storage.Quote(id), err)
	}
	return threadRecordList(keys, prefix, head, ownerKey, version != storage.NoVersion), version, nil
}

// threadRecordList returns the records of a thread's keys (under
// prefix) in the order an erase deletes them: the owner record (if
// listed) and the head (if the thread has one) last.
func threadRecordList(keys []string, prefix, head, ownerKey string, hasHead bool) []record {
	var recs []record
	for _, k := range keys {
		if k != head && k != ownerKey {
			recs = append(recs, record{threadRecordKind(strings.TrimPrefix(k, prefix)), k})
		}
	}
	if slices.Contains(keys, ownerKey) {
		recs = append(recs, record{"thread.owner", ownerKey})
	}
	if hasHead {
		recs = append(recs, record{"thread.head", head})
	}
	return recs
}

// version returns the version of the record under key,
// storage.NoVersion when there is none.
func (in Inspector) version(ctx context.Context, key string) (int64, error) {
	it, err := in.Store.Get(ctx, key)
	switch {
	case err == nil:
		return it.Version, nil
	case errors.Is(err, storage.ErrNotFound):
		return storage.NoVersion, nil
	}
	return 0, err
}

// threadRecordKind returns the kind an erase counts a thread's record
// under, by its name: "thread.<kind>" for the thread format's records,
// "thread.audit" for its audit turns, "thread.other" for the rest.
func threadRecordKind(name string) string {
	switch {
	case thread.Kind(name) != "":
		return "thread." + thread.Kind(name)
	case name == thread.MetaName:
		return "thread.meta"
	case name == audit.Name || strings.HasPrefix(name, audit.Name+"."):
		return "thread.audit"
	}
	return "thread.other"
}

// ResourceKeys returns the keys [Inspector.EraseResource] would delete,
// in the order it would delete them: what is stored for the resource.
func (in Inspector) ResourceKeys(ctx context.Context, resourceID string) ([]string, error) {
	if err := thread.CheckResourceID(resourceID); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	o, err := in.resourceOwned(ctx, resourceID)
	if err != nil {
		return nil, err
	}
	keys, err := in.ownedKeys(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("inspect: resource %s: %w", storage.Quote(resourceID), err)
	}
	return keys, nil
}

// ownedKeys returns the keys of o's layer records, then of each of its
// threads' records, in the order an erase deletes them.
func (in Inspector) ownedKeys(ctx context.Context, o owned) ([]string, error) {
	recs, _, err := in.layerRecords(ctx, &o)
	if err != nil {
		return nil, err
	}
	rrecs, err := in.resourceRecords(ctx, o.resource)
	if err != nil {
		return nil, err
	}
	recs = append(recs, rrecs...)
	for _, id := range o.threads {
		trecs, _, err := in.threadRecords(ctx, id)
		if err != nil {
			return nil, err
		}
		recs = append(recs, trecs...)
	}
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.key
	}
	return keys, nil
}

// resourceOwned returns what an erase of the resource selects.
func (in Inspector) resourceOwned(ctx context.Context, resourceID string) (owned, error) {
	all, err := in.threads(ctx)
	if err != nil {
		return owned{}, fmt.Errorf("inspect: resource %s: %w", storage.Quote(resourceID), err)
	}
	o := owned{resource: resourceID, all: append(all, thread.Info{})}
	for _, t := range all {
		if t.ResourceID == resourceID {
			o.threads = append(o.threads, t.ThreadID)
		}
	}
	slices.Sort(o.threads)
	return o, nil
}

// maxHeadAttempts bounds how often an erase lists a thread again because
// a run rewrote its head meanwhile.
const maxHeadAttempts = 20

// erase deletes the records o selects, then purges. It sweeps twice: the
// second sweep, after every head is gone, deletes what runs wrote while
// the first went on.
func (in Inspector) erase(ctx context.Context, e *Erased, o owned) error {
	s := &sweep{in: in, e: e, counted: map[string]bool{}}
	for range 2 {
		if err := s.once(ctx, &o); err != nil {
			return err
		}
	}
	e.Threads = s.found
	if p, ok := in.Store.(storage.Purger); ok && len(e.Keys) > 0 {
		if err := p.Purge(ctx); err != nil {
			return fmt.Errorf("purge: %w", err)
		}
	}
	return nil
}

// sweep is one erase in progress: it counts in e each record and
// collection it removes, once however many sweeps find it.
type sweep struct {
	in      Inspector
	e       *Erased
	counted map[string]bool // by key, collections as "index:<name>"
	found   []string        // the threads that had a head
}

// count adds what is named by key to e, under kind, unless mark says it
// was counted already.
func (s *sweep) count(mark, kind, key string) {
	if !s.counted[mark] {
		s.counted[mark] = true
		s.e.add(kind, key)
	}
}

// del deletes record r and counts it. A record already gone is not
// counted. A head is only counted: eraseThread deletes it, with its
// version.
func (s *sweep) del(ctx context.Context, r record) error {
	if r.kind != "thread.head" {
		err := s.in.Store.Delete(ctx, r.key, storage.AnyVersion)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", storage.Quote(r.key), err)
		}
	}
	s.count(r.key, r.kind, r.key)
	return nil
}

// layers deletes the layer records o selects and drops its scopes'
// search collections.
func (s *sweep) layers(ctx context.Context, o *owned) error {
	recs, ambiguous, err := s.in.layerRecords(ctx, o)
	if err != nil {
		return err
	}
	s.e.Ambiguous = ambiguous
	for _, r := range recs {
		if err := s.del(ctx, r); err != nil {
			return err
		}
	}
	return s.dropIndexes(ctx, o)
}

// once deletes, once, the layer records and collections o selects, the
// resource's own records and its threads.
func (s *sweep) once(ctx context.Context, o *owned) error {
	if err := s.layers(ctx, o); err != nil {
		return err
	}
	if err := s.resource(ctx, o.resource); err != nil {
		return err
	}
	return s.threads(ctx, o.threads)
}

// resource deletes the resource's own records (none for a thread's
// delete).
func (s *sweep) resource(ctx context.Context, resourceID string) error {
	recs, err := s.in.resourceRecords(ctx, resourceID)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := s.del(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// resourceRecords returns the records under storage.ResourcePrefix of a
// resource, each of kind "resource.<name>"; none for "".
func (in Inspector) resourceRecords(ctx context.Context, resourceID string) ([]record, error) {
	if resourceID == "" {
		return nil, nil
	}
	prefix := storage.ResourcePrefix(resourceID)
	keys, err := in.Store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list the records of resource %s: %w", storage.Quote(resourceID), err)
	}
	recs := make([]record, 0, len(keys))
	for _, k := range keys {
		name, err := storage.Unescape(strings.TrimPrefix(k, prefix))
		if err != nil {
			name = "other"
		}
		recs = append(recs, record{"resource." + name, k})
	}
	return recs, nil
}

// threads erases the threads ids and notes those that had a head.
func (s *sweep) threads(ctx context.Context, ids []string) error {
	for _, id := range ids {
		had, err := s.eraseThread(ctx, id)
		if err != nil {
			return err
		}
		if had && !slices.Contains(s.found, id) {
			s.found = append(s.found, id)
		}
	}
	return nil
}

// dropIndexes drops the search collections o's scopes own, on a store
// that is a storage.Searcher. A collection is named like a layer record
// (storage.IndexName), so it is selected by the same rule; collections
// never have an untyped scope key. Each counts as "index.<layer ID>".
func (s *sweep) dropIndexes(ctx context.Context, o *owned) error {
	x, ok := s.in.Store.(storage.Searcher)
	if !ok {
		return nil
	}
	cols, err := x.Collections(ctx, "layers/")
	if err != nil {
		return fmt.Errorf("list search collections: %w", err)
	}
	for _, c := range cols {
		lk, ok := o.collection(c)
		if !ok {
			continue
		}
		if err := x.Drop(ctx, c); err != nil {
			return fmt.Errorf("drop search collection %s: %w", storage.Quote(c), err)
		}
		s.count("index:"+c, "index."+lk.LayerID, c)
	}
	return nil
}

// collection returns the layer key that names the search collection c,
// and whether c indexes records of o's (typed keys only).
func (o *owned) collection(c string) (LayerKey, bool) {
	lk, ok := ParseLayerKey(c)
	return lk, ok && !lk.Legacy && o.typedMine(lk.ScopeKey)
}

// eraseThread deletes a thread's records, its head last with
// compare-and-swap against the version it listed them by: a run that
// rewrote the head meanwhile may name records the list missed, so it
// lists again. It reports whether the thread had a head.
func (s *sweep) eraseThread(ctx context.Context, id string) (bool, error) {
	had := false
	head := storage.ThreadKey(id, thread.HeadName)
	for range maxHeadAttempts {
		recs, version, err := s.in.threadRecords(ctx, id)
		if err != nil {
			return had, err
		}
		if err := s.delAllBut(ctx, recs, "thread.head"); err != nil {
			return had, err
		}
		if version == storage.NoVersion {
			return had, nil
		}
		had = true
		err = s.in.Store.Delete(ctx, head, version)
		switch {
		case err == nil:
			return had, s.del(ctx, record{"thread.head", head})
		case errors.Is(err, storage.ErrConflict), errors.Is(err, storage.ErrNotFound):
			continue // rewritten (or deleted) meanwhile: list again
		default:
			return had, fmt.Errorf("delete %s: %w", storage.Quote(head), err)
		}
	}
	return had, fmt.Errorf("thread %s: its head changed %d times during the erase: %w", storage.Quote(id), maxHeadAttempts, storage.ErrConflict)
}

// delAllBut deletes the records that are not of kind keep.
func (s *sweep) delAllBut(ctx context.Context, recs []record, keep string) error {
	for _, r := range recs {
		if r.kind == keep {
			continue
		}
		if err := s.del(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// Quarantined is a layer record set aside by storage.Quarantine.
type Quarantined struct {
	// Key is where the copy is stored.
	Key string `json:"key"`
	LayerKey
	// At is when it was set aside (from its name).
	At time.Time `json:"at"`
}

// Quarantined lists the quarantined records of every layer and scope,
// oldest first.
func (in Inspector) Quarantined(ctx context.Context) ([]Quarantined, error) {
	keys, err := in.Store.List(ctx, "layers/")
	if err != nil {
		return nil, fmt.Errorf("inspect: list quarantined: %w", err)
	}
	var out []Quarantined
	for _, k := range keys {
		lk, ok := ParseLayerKey(k)
		if !ok || !strings.HasPrefix(lk.Name, storage.QuarantinePrefix) {
			continue
		}
		q := Quarantined{Key: k, LayerKey: lk}
		var nanos int64
		if _, err := fmt.Sscan(strings.TrimPrefix(lk.Name, storage.QuarantinePrefix), &nanos); err == nil {
			q.At = time.Unix(0, nanos).UTC()
		}
		out = append(out, q)
	}
	slices.SortStableFunc(out, func(a, b Quarantined) int { return a.At.Compare(b.At) })
	return out, nil
}

// RestoreQuarantined puts a quarantined copy (a key from
// [Inspector.Quarantined]) back as its layer's state for its scope,
// storage.LayerKey(layerID, scopeKey, "state") — the record the
// scratchpad, the kv layer and entity memory quarantine — and deletes the
// copy. If the layer has written a new state since, the restore fails
// with an error that is storage.ErrConflict unless replace is true, in
// which case the new state is overwritten. Fix the copy's cause first (a
// layer quarantines again what it cannot read).
func (in Inspector) RestoreQuarantined(ctx context.Context, qkey string, replace bool) (string, error) {
	lk, ok := ParseLayerKey(qkey)
	if !ok || !strings.HasPrefix(lk.Name, storage.QuarantinePrefix) {
		return "", fmt.Errorf("%w: restore: %s is not a quarantine key", ErrInvalidKey, storage.Quote(qkey))
	}
	it, err := in.Store.Get(ctx, qkey)
	if err != nil {
		return "", fmt.Errorf("inspect: restore %s: %w", storage.Quote(qkey), err)
	}
	target := lk.keyOf("state")
	ifVersion := storage.NoVersion
	if replace {
		ifVersion = storage.AnyVersion
	}
	if _, err := in.Store.Put(ctx, target, it.Value, ifVersion); err != nil {
		return "", fmt.Errorf("inspect: restore %s to %s: %w", storage.Quote(qkey), storage.Quote(target), err)
	}
	if err := in.Store.Delete(ctx, qkey, it.Version); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return target, fmt.Errorf("inspect: restore %s: delete the copy: %w", storage.Quote(qkey), err)
	}
	return target, nil
}

// ThreadKeys returns the keys [Inspector.DeleteThread] would delete, in
// the order it would delete them: what is stored for the thread. A
// thread never stored gives none and no error.
func (in Inspector) ThreadKeys(ctx context.Context, threadID string) ([]string, error) {
	if err := thread.CheckThreadID(threadID); err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	keys, err := in.ownedKeys(ctx, owned{threads: []string{threadID}})
	if err != nil {
		return nil, fmt.Errorf("inspect: thread %s: %w", storage.Quote(threadID), err)
	}
	return keys, nil
}
