package postgres

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/storage"
)

// GetMany implements [storage.MultiGetter] with one SELECT, which reads
// one snapshot: the keys go in as one text array, each found through the
// primary key's index.
func (s *Store) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	if err := s.begin(ctx, "get many", "", false); err != nil {
		return nil, err
	}
	if err := storage.CheckKeys(keys); err != nil {
		return nil, fmt.Errorf("storage/postgres: get many: %w", err)
	}
	if len(keys) == 0 {
		return []storage.Item{}, nil
	}
	found, err := s.getMany(ctx, keys)
	if err != nil {
		return nil, s.wrap(ctx, "get many", keys[0], err, false)
	}
	return storage.InKeyOrder(keys, found), nil
}

func (s *Store) getMany(ctx context.Context, keys []string) (map[string]storage.Item, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, value, version FROM `+s.kv+` WHERE key = ANY($1::text[])`, keys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make(map[string]storage.Item, len(keys))
	for rows.Next() {
		var it storage.Item
		if err := rows.Scan(&it.Key, &it.Value, &it.Version); err != nil {
			return nil, err
		}
		if it.Value == nil {
			it.Value = []byte{}
		}
		found[it.Key] = it
	}
	return found, rows.Err()
}

var _ storage.MultiGetter = (*Store)(nil)
