package storage

import (
	"context"
	"fmt"
)

// WriteBatch implements [Batcher]: it checks every write under the
// store's lock before applying any.
func (m *MemoryStore) WriteBatch(ctx context.Context, writes []Write) ([]int64, error) {
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
		v, err := m.batchCheck(w)
		if err != nil {
			return nil, fmt.Errorf("storage: write batch: %w", err)
		}
		versions[i] = v
	}
	m.apply(writes, versions)
	return versions, nil
}

// apply makes the checked writes, each at its version. m.mu is held.
func (m *MemoryStore) apply(writes []Write, versions []int64) {
	for i, w := range writes {
		if w.Delete {
			delete(m.items, w.Key)
		} else {
			m.items[w.Key] = memItem{value: append([]byte(nil), w.Value...), version: versions[i]}
		}
	}
}

// batchCheck checks w's version against the stored one and returns the
// version a Put gives the key (0 for a Delete). Put checks its write
// with it too. m.mu is held.
func (m *MemoryStore) batchCheck(w Write) (int64, error) {
	cur, ok := m.items[w.Key]
	switch {
	case w.Delete && !ok && w.IfVersion != AnyVersion:
		return 0, fmt.Errorf("delete %s: %w", Quote(w.Key), ErrNotFound)
	case w.IfVersion != AnyVersion && cur.version != w.IfVersion:
		return 0, fmt.Errorf("%s: have version %d, want %d: %w", Quote(w.Key), cur.version, w.IfVersion, ErrConflict)
	case w.Delete:
		return 0, nil
	case !ok:
		return FirstVersion(), nil
	}
	return cur.version + 1, nil
}

var _ Batcher = (*MemoryStore)(nil)
