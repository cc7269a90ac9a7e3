package storage

import (
	"context"
	"fmt"
)

// GetMany implements [MultiGetter]: it reads every key under one hold of
// the store's read lock, so the items are of one moment.
func (m *MemoryStore) GetMany(ctx context.Context, keys []string) ([]Item, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: get many: %w", err)
	}
	if err := CheckKeys(keys); err != nil {
		return nil, fmt.Errorf("storage: get many: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("storage: get many: %w", ErrClosed)
	}
	items := make([]Item, 0, len(keys))
	for _, k := range keys {
		if it, ok := m.items[k]; ok {
			items = append(items, Item{Key: k, Value: append([]byte(nil), it.value...), Version: it.version})
		}
	}
	return items, nil
}

var _ MultiGetter = (*MemoryStore)(nil)
