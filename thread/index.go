package thread

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// IndexName names a resource's list of its threads,
// storage.ResourceKey(resourceID, IndexName), which holds
// {"version": 1, "threads": ["<thread ID>", ...]}, each ID escaped as
// storage.Escape escapes a key part (so that an ID that is not UTF-8
// survives JSON), sorted. A
// [Writer] adds a thread to its resource's list on the first write of
// each run, and [Catalog.Update] when it gives a thread its owner. An
// erase of the resource deletes the list, and a thread's delete takes
// it out (package inspect).
const IndexName = "threads"

// IndexedKey marks a store whose threads written before the lists of
// threads were kept have been added to them (see [Catalog.Reindex]). It
// names no resource and holds only the time of the reindex, so an erase
// leaves it.
const IndexedKey = "resources/threads-indexed"

// IndexKey returns the key of a resource's list of threads.
func IndexKey(resourceID string) string { return storage.ResourceKey(resourceID, IndexName) }

// indexRecord is a resource's list of threads as stored.
type indexRecord struct {
	Version int      `json:"version"`
	Threads []string `json:"threads"`
}

// maxIndexAttempts bounds the compare-and-swap rounds of one change to a
// list of threads.
const maxIndexAttempts = 64

// readIndex returns the threads a resource's list names, in the order
// of their escaped IDs, leaving out an entry that is not one.
func readIndex(ctx context.Context, st storage.Store, resourceID string) ([]string, error) {
	escaped, _, err := readList(ctx, st, resourceID)
	ids := make([]string, 0, len(escaped))
	for _, e := range escaped {
		if id, err := storage.Unescape(e); err == nil {
			ids = append(ids, id)
		}
	}
	return ids, err
}

// readList returns the escaped thread IDs of a resource's list and the
// list's version (storage.NoVersion when it has none).
func readList(ctx context.Context, st storage.Store, resourceID string) ([]string, int64, error) {
	it, err := st.Get(ctx, IndexKey(resourceID))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, storage.NoVersion, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read the threads of resource %s: %w", storage.Quote(resourceID), err)
	}
	var rec indexRecord
	if err := json.Unmarshal(it.Value, &rec); err != nil {
		return nil, 0, fmt.Errorf("read the threads of resource %s: malformed record: %w", storage.Quote(resourceID), err)
	}
	return rec.Threads, it.Version, nil
}

// updateIndex applies change to a resource's list of escaped IDs with
// compare-and-swap, reading it again after each conflict. change returns
// the new list and whether it differs; an empty list is deleted.
func updateIndex(ctx context.Context, st storage.Store, resourceID string, change func([]string) ([]string, bool)) error {
	key := IndexKey(resourceID)
	for attempt := range maxIndexAttempts {
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return err
		}
		ids, version, err := readList(ctx, st, resourceID)
		if err != nil {
			return err
		}
		ids, changed := change(ids)
		if !changed {
			return nil
		}
		err = writeIndex(ctx, st, key, ids, version)
		if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
			continue // another writer changed the list: read it again
		}
		if err != nil {
			return fmt.Errorf("write the threads of resource %s: %w", storage.Quote(resourceID), err)
		}
		return nil
	}
	return fmt.Errorf("write the threads of resource %s: %d conflicts: %w", storage.Quote(resourceID), maxIndexAttempts, storage.ErrConflict)
}

// writeIndex writes the list ids under key if its version is still
// version; an empty list is deleted.
func writeIndex(ctx context.Context, st storage.Store, key string, ids []string, version int64) error {
	if len(ids) == 0 {
		return st.Delete(ctx, key, version)
	}
	data, err := json.Marshal(indexRecord{Version: 1, Threads: ids})
	if err != nil {
		return err
	}
	_, err = st.Put(ctx, key, data, version)
	return err
}

// addToIndex adds a thread to its resource's list, unless it is there.
// It costs one read, and one write the first time.
func addToIndex(ctx context.Context, st storage.Store, resourceID, threadID string) error {
	esc := storage.Escape(threadID)
	return updateIndex(ctx, st, resourceID, func(ids []string) ([]string, bool) {
		i, found := slices.BinarySearch(ids, esc)
		if found {
			return ids, false
		}
		return slices.Insert(ids, i, esc), true
	})
}

// Unindex takes a thread out of a resource's list of threads; a thread
// not in it is no error. Package inspect calls it once it has deleted
// the thread.
func Unindex(ctx context.Context, st storage.Store, resourceID, threadID string) error {
	esc := storage.Escape(threadID)
	return updateIndex(ctx, st, resourceID, func(ids []string) ([]string, bool) {
		i, found := slices.BinarySearch(ids, esc)
		if !found {
			return ids, false
		}
		return slices.Delete(ids, i, i+1), true
	})
}

// Reindex adds every stored thread that has an owner to its resource's
// list: the threads written before the lists were kept, or by a process
// of such a build since. It lists every key under "threads/" and reads
// each thread's head (and owner record): its cost grows with the store.
// [Catalog.List] runs it once, on a store never reindexed.
func (c Catalog) Reindex(ctx context.Context) error {
	keys, err := c.Store.List(ctx, "threads/")
	if err != nil {
		return fmt.Errorf("thread: reindex: %w", err)
	}
	for _, id := range threadIDs(keys) {
		owner, err := Owner(ctx, c.Store, id)
		if err != nil {
			return fmt.Errorf("thread: reindex: thread %s: %w", storage.Quote(id), err)
		}
		if owner == "" {
			continue
		}
		if err := addToIndex(ctx, c.Store, owner, id); err != nil {
			return fmt.Errorf("thread: reindex: %w", err)
		}
	}
	data, err := json.Marshal(map[string]time.Time{"at": time.Now().UTC()})
	if err != nil {
		return err
	}
	if _, err := c.Store.Put(ctx, IndexedKey, data, storage.AnyVersion); err != nil {
		return fmt.Errorf("thread: reindex: %w", err)
	}
	return nil
}

// threadIDs returns the thread IDs of keys under "threads/", each once,
// leaving out a key this package did not write.
func threadIDs(keys []string) []string {
	var ids []string
	seen := map[string]bool{}
	for _, k := range keys {
		esc, _, ok := strings.Cut(strings.TrimPrefix(k, "threads/"), "/")
		id, err := storage.Unescape(esc)
		if ok && err == nil && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}

// ensureIndexed runs Reindex on a store never reindexed.
func (c Catalog) ensureIndexed(ctx context.Context) error {
	_, err := c.Store.Get(ctx, IndexedKey)
	if errors.Is(err, storage.ErrNotFound) {
		return c.Reindex(ctx)
	}
	if err != nil {
		return fmt.Errorf("thread: %w", err)
	}
	return nil
}
