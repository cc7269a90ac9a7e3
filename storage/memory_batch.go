package storage

import (
	"context"
	"fmt"
)

// WriteBatch implements [Batcher]: it checks every write under the
// store's lock before applying any.
func (m *Memory) WriteBatch(ctx context.Context, writes []Write) ([]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: write batch: %w", err)
	}
	if err := CheckBatch(writes); err != nil {
		return nil, fmt.Errorf("storage: write batch: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("storage: write batch: %w", ErrClosed)
	}
	versions := make([]int64, len(writes))
	for i, w := range writes {
		cur, ok := m.items[w.Key]
		switch {
		case w.IfVersion == AnyVersion:
		case w.Delete && !ok:
			return nil, fmt.Errorf("storage: write batch: delete %s: %w", Quote(w.Key), ErrNotFound)
		case cur.version != w.IfVersion:
			return nil, fmt.Errorf("storage: write batch: %s: have version %d, want %d: %w", Quote(w.Key), cur.version, w.IfVersion, ErrConflict)
		}
		if !w.Delete {
			versions[i] = cur.version + 1
			if !ok {
				versions[i] = FirstVersion()
			}
		}
	}
	for i, w := range writes {
		if w.Delete {
			delete(m.items, w.Key)
		} else {
			m.items[w.Key] = memItem{value: append([]byte(nil), w.Value...), version: versions[i]}
		}
	}
	return versions, nil
}

var _ Batcher = (*Memory)(nil)
