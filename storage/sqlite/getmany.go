package sqlite

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/memlayer/memlayer/storage"
)

// getManySQL reads the rows of the keys of a JSON array, each through the
// primary key's index.
const getManySQL = `SELECT key, value, version FROM ` + table + ` WHERE key IN (SELECT value FROM json_each(?))`

// GetMany implements [storage.MultiGetter] with one SELECT, which reads
// one snapshot of the database: the keys go in as one JSON array.
func (s *Store) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	if err := s.begin(ctx, "get many", "", false); err != nil {
		return nil, err
	}
	if err := storage.CheckKeys(keys); err != nil {
		return nil, fmt.Errorf("storage/sqlite: get many: %w", err)
	}
	if len(keys) == 0 {
		return []storage.Item{}, nil
	}
	arg, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("storage/sqlite: get many: %w", err)
	}
	var found map[string]storage.Item
	err = s.retry(ctx, func() error {
		var err error
		found, err = s.getMany(ctx, string(arg), len(keys))
		return err
	})
	if err != nil {
		return nil, s.wrap(ctx, "get many", keys[0], err)
	}
	return storage.InKeyOrder(keys, found), nil
}

func (s *Store) getMany(ctx context.Context, arg string, n int) (map[string]storage.Item, error) {
	rows, err := s.query(ctx, getManySQL, arg)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make(map[string]storage.Item, n)
	for rows.Next() {
		var it storage.Item
		if err := rows.Scan(&it.Key, &it.Value, &it.Version); err != nil {
			return nil, err
		}
		found[it.Key] = it
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return found, rows.Close()
}

var _ storage.MultiGetter = (*Store)(nil)
