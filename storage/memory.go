package storage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// MemoryStore is the in-process [Store]: a map guarded by a read-write mutex.
// It is the default when no store is configured. Its zero value is not
// usable; call [NewMemoryStore]. Like every backend it creates keys at
// [FirstVersion], so versions do not repeat across deletes nor across
// stores (a process restarted with a new MemoryStore).
type MemoryStore struct {
	mu     sync.RWMutex
	items  map[string]memItem
	closed bool
	index  MemoryIndex
}

type memItem struct {
	value   []byte
	version int64
}

// NewMemoryStore returns an empty in-memory store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{items: make(map[string]memItem)}
}

// Get implements [Store].
func (m *MemoryStore) Get(ctx context.Context, key string) (Item, error) {
	if err := ctx.Err(); err != nil {
		return Item{}, fmt.Errorf("storage: get %s: %w", Quote(key), err)
	}
	m.mu.RLock()
	it, ok := m.items[key]
	closed := m.closed
	m.mu.RUnlock()
	if closed {
		return Item{}, fmt.Errorf("storage: get %s: %w", Quote(key), ErrClosed)
	}
	if !ok {
		return Item{}, fmt.Errorf("storage: get %s: %w", Quote(key), ErrNotFound)
	}
	return Item{Key: key, Value: append([]byte(nil), it.value...), Version: it.version}, nil
}

// Put implements [Store].
func (m *MemoryStore) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("storage: put %s: %w", Quote(key), err)
	}
	if err := ValidateKey(key); err != nil {
		return 0, err
	}
	v := append([]byte(nil), value...)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, fmt.Errorf("storage: put %s: %w", Quote(key), ErrClosed)
	}
	next, err := m.batchCheck(Write{Key: key, IfVersion: ifVersion})
	if err != nil {
		return 0, fmt.Errorf("storage: put %w", err)
	}
	m.items[key] = memItem{value: v, version: next}
	return next, nil
}

// Delete implements [Store].
func (m *MemoryStore) Delete(ctx context.Context, key string, ifVersion int64) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("storage: delete %s: %w", Quote(key), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("storage: delete %s: %w", Quote(key), ErrClosed)
	}
	cur, ok := m.items[key]
	if ifVersion != AnyVersion {
		if !ok {
			return fmt.Errorf("storage: delete %s: %w", Quote(key), ErrNotFound)
		}
		if cur.version != ifVersion {
			return fmt.Errorf("storage: delete %s: have version %d, want %d: %w", Quote(key), cur.version, ifVersion, ErrConflict)
		}
	}
	delete(m.items, key)
	return nil
}

// List implements [Store]. The read lock is held for the whole scan so the
// listing is a consistent view of one moment.
func (m *MemoryStore) List(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: list %s: %w", Quote(prefix), err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("storage: list %s: %w", Quote(prefix), ErrClosed)
	}
	keys := make([]string, 0)
	for k := range m.items {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// Close releases the store's contents; later calls fail with [ErrClosed].
func (m *MemoryStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.items = nil
	return m.index.Close()
}

// Index implements [Searcher] with a [MemoryIndex].
func (m *MemoryStore) Index(ctx context.Context, collection string, docs ...Document) error {
	return m.index.Index(ctx, collection, docs...)
}

// Unindex implements [Searcher].
func (m *MemoryStore) Unindex(ctx context.Context, collection string, ids ...string) error {
	return m.index.Unindex(ctx, collection, ids...)
}

// Search implements [Searcher].
func (m *MemoryStore) Search(ctx context.Context, collection string, q Query) ([]Hit, error) {
	return m.index.Search(ctx, collection, q)
}

// Collections implements [Searcher].
func (m *MemoryStore) Collections(ctx context.Context, prefix string) ([]string, error) {
	return m.index.Collections(ctx, prefix)
}

// Drop implements [Searcher].
func (m *MemoryStore) Drop(ctx context.Context, collection string) error {
	return m.index.Drop(ctx, collection)
}

// Interface guards.
var (
	_ Store    = (*MemoryStore)(nil)
	_ Searcher = (*MemoryStore)(nil)
	_ Searcher = (*MemoryIndex)(nil)
)
