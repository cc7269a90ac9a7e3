package redis

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/memlayer/memlayer/storage"
)

// GetMany implements [storage.MultiGetter]: one HMGET per key, as Get
// sends, all in one pipeline. On one server that is one round trip. On a
// cluster, go-redis sends each node the commands of its slots, to all
// nodes at once, so the wait is one round trip however many slots the
// keys span (on a cluster the keys of one thread, or of one layer's
// scope, share a slot). The items are each as of its own read: the
// pipeline is not a transaction.
func (s *Store) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	if err := s.begin(ctx, "get many", "", false); err != nil {
		return nil, err
	}
	if err := storage.CheckKeys(keys); err != nil {
		return nil, fmt.Errorf("storage/redis: get many: %w", err)
	}
	if len(keys) == 0 {
		return []storage.Item{}, nil
	}
	cmds, err := s.hmgetAll(ctx, keys)
	if err != nil {
		return nil, s.wrap(ctx, "get many", keys[0], err)
	}
	items := make([]storage.Item, 0, len(keys))
	for i, k := range keys {
		it, ok, err := item(k, cmds[i].Val())
		if err != nil {
			return nil, fmt.Errorf("storage/redis: get many: %s: %w", storage.Quote(k), err)
		}
		if ok {
			items = append(items, it)
		}
	}
	return items, nil
}

// hmgetAll sends HMGET key v n for every key in one pipeline.
func (s *Store) hmgetAll(ctx context.Context, keys []string) ([]*goredis.SliceCmd, error) {
	cmds := make([]*goredis.SliceCmd, len(keys))
	_, err := s.client.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HMGet(ctx, s.rkey(k), "v", "n")
		}
		return nil
	})
	return cmds, err
}

var _ storage.MultiGetter = (*Store)(nil)
