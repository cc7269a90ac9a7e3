package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/storage"
)

// Inspector lists, reads and erases what agents stored, working from the
// store alone: it needs no layers and no model. Everything it finds comes
// from the key layout of package storage (storage.ThreadKey,
// storage.LayerKey): a thread's head names its resource, and a layer's
// records are keyed by the scope key they belong to.
//
// Per-user data is what a thread of the resource stored (its head,
// segments, summaries and layer snapshots) and every layer record whose
// scope key is the resource ID, one of its thread IDs, or a sub-agent
// thread of one (ID "<thread>/child-…"), quarantined copies included.
// Global-scope state (scope key "__global__") is shared by every user
// and is not per-user: [Inspector.EraseResource] leaves it, and so must
// whatever a layer writes there. Execution-scoped state is keyed by an
// execution ID the store does not tie to a resource; it is meant to be
// temporary (give it a TTL on Redis) and is not erased either.
//
// Erase while no run of the resource is active: a run that is still
// going may write records after the erase read the keys.
type Inspector struct {
	// Store holds the threads and layer state.
	Store storage.Store
}

// ThreadInfo is a stored thread's head, without its messages.
type ThreadInfo struct {
	ThreadID   string    `json:"thread_id"`
	ResourceID string    `json:"resource_id,omitempty"`
	Agent      string    `json:"agent,omitempty"`
	Steps      int       `json:"steps"`
	Messages   int       `json:"messages"`
	Usage      Usage     `json:"usage"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Version is the version of the stored checkpoint format (1 to 4).
	Version int `json:"version"`
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
// thread ID. It reads every head under "threads/": its cost grows with
// the number of threads.
func (in Inspector) Threads(ctx context.Context, q ThreadQuery) ([]ThreadInfo, error) {
	ids, err := in.threadIDs(ctx)
	if err != nil {
		return nil, err
	}
	var out []ThreadInfo
	for _, id := range ids {
		it, err := in.Store.Get(ctx, storage.ThreadKey(id, CheckpointName))
		if errors.Is(err, storage.ErrNotFound) {
			continue // deleted while listing
		}
		if err != nil {
			return nil, fmt.Errorf("agentloop: list threads: %w", err)
		}
		info, err := headInfo(it.Value)
		if err != nil {
			return nil, fmt.Errorf("agentloop: list threads: thread %s: %w", storage.Quote(id), err)
		}
		info.ThreadID = id
		if q.ResourceID == "" || info.ResourceID == q.ResourceID {
			out = append(out, info)
		}
	}
	slices.SortStableFunc(out, func(a, b ThreadInfo) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ThreadID, b.ThreadID)
	})
	out = out[min(max(q.Offset, 0), len(out)):]
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// threadIDs returns the ID of every thread that has a head.
func (in Inspector) threadIDs(ctx context.Context) ([]string, error) {
	keys, err := in.Store.List(ctx, "threads/")
	if err != nil {
		return nil, fmt.Errorf("agentloop: list threads: %w", err)
	}
	var ids []string
	for _, k := range keys {
		esc, name, ok := strings.Cut(strings.TrimPrefix(k, "threads/"), "/")
		if !ok || name != storage.Escape(CheckpointName) {
			continue
		}
		id, err := storage.Unescape(esc)
		if err != nil {
			continue // not a key this package wrote
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// headInfo decodes a head of any version.
func headInfo(data []byte) (ThreadInfo, error) {
	var probe struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return ThreadInfo{}, fmt.Errorf("malformed head: %w", err)
	}
	if probe.Version < CheckpointVersion {
		c, _, err := decodeCheckpoint(data)
		if err != nil {
			return ThreadInfo{}, err
		}
		return ThreadInfo{ThreadID: c.ThreadID, ResourceID: c.ResourceID, Agent: c.Agent, Steps: c.Steps,
			Messages: len(c.Messages), Usage: c.Usage, UpdatedAt: c.UpdatedAt, Version: probe.Version}, nil
	}
	var h headRecord
	if err := json.Unmarshal(data, &h); err != nil {
		return ThreadInfo{}, fmt.Errorf("malformed head: %w", err)
	}
	return ThreadInfo{ThreadID: h.ThreadID, ResourceID: h.ResourceID, Agent: h.Agent, Steps: h.Steps,
		Messages: h.Messages, Usage: h.Usage, UpdatedAt: h.UpdatedAt, Version: h.Version}, nil
}

// Thread reads a stored thread: its checkpoint metadata, its summary, its
// layer snapshots and every retained message (Messages from message
// First, as [Agent.Transcript] returns them). A thread never stored gives
// an error that is storage.ErrNotFound.
func (in Inspector) Thread(ctx context.Context, threadID string) (*Checkpoint, error) {
	l, err := loadThread(ctx, in.Store, threadID, true)
	if err == nil && l == nil {
		err = storage.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("%w: thread %s: %w", ErrCheckpoint, storage.Quote(threadID), err)
	}
	return l.ckpt, nil
}

// LayerState returns every record a layer stored for a scope key (the
// thread ID, the resource ID, "__global__" or an execution ID), sorted by
// key: its state and, under names starting with storage.QuarantinePrefix,
// quarantined copies. A scope with no records gives none and no error.
func (in Inspector) LayerState(ctx context.Context, layerID, scopeKey string) ([]storage.Item, error) {
	keys, err := in.Store.List(ctx, storage.LayerPrefix(layerID, scopeKey))
	if err != nil {
		return nil, fmt.Errorf("agentloop: layer %s scope %s: %w", storage.Quote(layerID), storage.Quote(scopeKey), err)
	}
	items := make([]storage.Item, 0, len(keys))
	for _, k := range keys {
		it, err := in.Store.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("agentloop: layer %s scope %s: %w", storage.Quote(layerID), storage.Quote(scopeKey), err)
		}
		items = append(items, it)
	}
	return items, nil
}

// LayerKey is a layer record's key split into its parts.
type LayerKey struct {
	LayerID  string `json:"layer_id"`
	ScopeKey string `json:"scope_key"`
	Name     string `json:"name"`
}

// ParseLayerKey splits a key built by storage.LayerKey; ok is false for
// any other key.
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
	k.ScopeKey, err2 = storage.Unescape(parts[1])
	k.Name, err3 = storage.Unescape(parts[2])
	if err1 != nil || err2 != nil || err3 != nil {
		return LayerKey{}, false
	}
	return k, true
}

// Erased reports what a delete or an erase removed.
type Erased struct {
	// Threads are the IDs of the threads deleted.
	Threads []string `json:"threads"`
	// Counts is how many records of each kind were deleted: "thread.head",
	// "thread.segment", "thread.summary", "thread.snapshot", "thread.audit"
	// (the thread's audit turns), "thread.other",
	// "layer.<layer ID>" for a layer's state and "quarantine.<layer ID>"
	// for its quarantined copies.
	Counts map[string]int `json:"counts"`
	// Keys are the deleted keys, in the order they were deleted.
	Keys []string `json:"keys"`
}

func (e *Erased) add(kind, key string) {
	if e.Counts == nil {
		e.Counts = map[string]int{}
	}
	e.Counts[kind]++
	e.Keys = append(e.Keys, key)
}

// Purger is implemented by stores that can remove deleted bytes from
// their files (storage/sqlite: the write-ahead log is checkpointed and
// truncated; freed pages are zeroed as they are freed). The erase calls
// it after deleting.
type Purger interface {
	Purge(ctx context.Context) error
}

// DeleteThread deletes a thread: every record under its
// storage.ThreadPrefix (head, segments, summaries, layer snapshots) and
// every layer record whose scope key is the thread ID or one of its
// sub-agent threads (thread-scoped state, quarantined copies). Its head
// goes last, so an interrupted delete can be run again. Deleting a thread
// never stored removes nothing and is no error.
func (in Inspector) DeleteThread(ctx context.Context, threadID string) (*Erased, error) {
	e := &Erased{}
	if err := in.erase(ctx, e, []string{threadID}, nil); err != nil {
		return e, fmt.Errorf("agentloop: delete thread %s: %w", storage.Quote(threadID), err)
	}
	return e, nil
}

// EraseResource deletes everything stored for one resource (one user):
// every thread whose head names it, with all its records, and every layer
// record whose scope key is the resource ID, one of those thread IDs or
// one of their sub-agent threads, on any backend. It reports what it
// removed; on a store that is a [Purger] it then purges, so that on
// SQLite the erased bytes stay neither in the file's free pages nor in
// its write-ahead log. Global-scope state is not per-user and is kept
// (see [Inspector]). An error leaves part erased: run it again.
func (in Inspector) EraseResource(ctx context.Context, resourceID string) (*Erased, error) {
	if resourceID == "" {
		return nil, fmt.Errorf("%w: erase: empty resource ID", ErrInvalidConfig)
	}
	ids, err := in.resourceThreads(ctx, resourceID)
	if err != nil {
		return nil, err
	}
	e := &Erased{}
	if err := in.erase(ctx, e, ids, []string{resourceID}); err != nil {
		return e, fmt.Errorf("agentloop: erase resource %s: %w", storage.Quote(resourceID), err)
	}
	return e, nil
}

// record is a key to erase and its kind (see Erased.Counts).
type record struct{ kind, key string }

// records returns the keys of the layer records of the scopes (the
// threads, their sub-agents, the extra scope keys), then each thread's
// records with its head last, and the threads that have a head.
func (in Inspector) records(ctx context.Context, threads, scopes []string) ([]record, []string, error) {
	mine := func(scope string) bool {
		if slices.Contains(scopes, scope) {
			return true
		}
		for _, t := range threads {
			if scope == t || strings.HasPrefix(scope, t+"/child-") {
				return true
			}
		}
		return false
	}
	keys, err := in.Store.List(ctx, "layers/")
	if err != nil {
		return nil, nil, fmt.Errorf("list layer records: %w", err)
	}
	var recs []record
	for _, k := range keys {
		lk, ok := ParseLayerKey(k)
		if !ok || !mine(lk.ScopeKey) {
			continue
		}
		kind := "layer." + lk.LayerID
		if strings.HasPrefix(lk.Name, storage.QuarantinePrefix) {
			kind = "quarantine." + lk.LayerID
		}
		recs = append(recs, record{kind, k})
	}
	var found []string
	for _, id := range threads {
		prefix := storage.ThreadPrefix(id)
		keys, err := in.Store.List(ctx, prefix)
		if err != nil {
			return nil, nil, fmt.Errorf("list thread %s: %w", storage.Quote(id), err)
		}
		head := storage.ThreadKey(id, CheckpointName)
		for _, k := range keys {
			if k == head {
				continue
			}
			kind := "thread.other"
			switch name := strings.TrimPrefix(k, prefix); {
			case strings.HasPrefix(name, segPrefix):
				kind = "thread.segment"
			case strings.HasPrefix(name, sumPrefix):
				kind = "thread.summary"
			case strings.HasPrefix(name, layerPrefix):
				kind = "thread.snapshot"
			case name == audit.Name || strings.HasPrefix(name, audit.Name+"."):
				kind = "thread.audit"
			}
			recs = append(recs, record{kind, k})
		}
		if slices.Contains(keys, head) {
			recs = append(recs, record{"thread.head", head})
			found = append(found, id)
		}
	}
	return recs, found, nil
}

// ResourceKeys returns the keys [Inspector.EraseResource] would delete,
// in the order it would delete them: what is stored for the resource.
func (in Inspector) ResourceKeys(ctx context.Context, resourceID string) ([]string, error) {
	if resourceID == "" {
		return nil, fmt.Errorf("%w: empty resource ID", ErrInvalidConfig)
	}
	ids, err := in.resourceThreads(ctx, resourceID)
	if err != nil {
		return nil, err
	}
	recs, _, err := in.records(ctx, ids, []string{resourceID})
	if err != nil {
		return nil, fmt.Errorf("agentloop: resource %s: %w", storage.Quote(resourceID), err)
	}
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.key
	}
	return keys, nil
}

// resourceThreads returns the IDs of the resource's threads.
func (in Inspector) resourceThreads(ctx context.Context, resourceID string) ([]string, error) {
	threads, err := in.Threads(ctx, ThreadQuery{ResourceID: resourceID})
	if err != nil {
		return nil, fmt.Errorf("agentloop: resource %s: %w", storage.Quote(resourceID), err)
	}
	ids := make([]string, len(threads))
	for i, t := range threads {
		ids[i] = t.ThreadID
	}
	return ids, nil
}

// erase deletes the records of the threads and scopes, then purges.
func (in Inspector) erase(ctx context.Context, e *Erased, threads, scopes []string) error {
	recs, found, err := in.records(ctx, threads, scopes)
	if err != nil {
		return err
	}
	for _, r := range recs {
		err := in.Store.Delete(ctx, r.key, storage.AnyVersion)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", storage.Quote(r.key), err)
		}
		e.add(r.kind, r.key)
	}
	e.Threads = found
	if p, ok := in.Store.(Purger); ok && len(e.Keys) > 0 {
		if err := p.Purge(ctx); err != nil {
			return fmt.Errorf("purge: %w", err)
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
		return nil, fmt.Errorf("agentloop: list quarantined: %w", err)
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
		return "", fmt.Errorf("%w: restore: %s is not a quarantine key", ErrInvalidConfig, storage.Quote(qkey))
	}
	it, err := in.Store.Get(ctx, qkey)
	if err != nil {
		return "", fmt.Errorf("agentloop: restore %s: %w", storage.Quote(qkey), err)
	}
	target := storage.LayerKey(lk.LayerID, lk.ScopeKey, "state")
	ifVersion := storage.NoVersion
	if replace {
		ifVersion = storage.AnyVersion
	}
	if _, err := in.Store.Put(ctx, target, it.Value, ifVersion); err != nil {
		return "", fmt.Errorf("agentloop: restore %s to %s: %w", storage.Quote(qkey), storage.Quote(target), err)
	}
	if err := in.Store.Delete(ctx, qkey, it.Version); err != nil && !errors.Is(err, storage.ErrNotFound) {
		return target, fmt.Errorf("agentloop: restore %s: delete the copy: %w", storage.Quote(qkey), err)
	}
	return target, nil
}

// ThreadKeys returns the keys [Inspector.DeleteThread] would delete, in
// the order it would delete them: what is stored for the thread. A
// thread never stored gives none and no error.
func (in Inspector) ThreadKeys(ctx context.Context, threadID string) ([]string, error) {
	recs, _, err := in.records(ctx, []string{threadID}, nil)
	if err != nil {
		return nil, fmt.Errorf("agentloop: thread %s: %w", storage.Quote(threadID), err)
	}
	keys := make([]string, len(recs))
	for i, r := range recs {
		keys[i] = r.key
	}
	return keys, nil
}
