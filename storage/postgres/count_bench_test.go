package postgres_test

import (
	"context"
	"sync/atomic"

	"github.com/memlayer/memlayer/storage"
)

// countingStore counts the calls a store gets: reads, and writes by the
// commits they cost (a batch is one commit however many writes it holds).
type countingStore struct {
	storage.Store
	gets, lists, puts, deletes, batches, batched atomic.Int64
}

// counted wraps st; the result is a storage.Batcher when st is one.
func counted(st storage.Store) (storage.Store, *countingStore) {
	c := &countingStore{Store: st}
	if b, ok := st.(storage.Batcher); ok {
		return countingBatcher{c, b}, c
	}
	return c, c
}

func (c *countingStore) Get(ctx context.Context, key string) (storage.Item, error) {
	c.gets.Add(1)
	return c.Store.Get(ctx, key)
}

func (c *countingStore) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	c.puts.Add(1)
	return c.Store.Put(ctx, key, value, ifVersion)
}

func (c *countingStore) Delete(ctx context.Context, key string, ifVersion int64) error {
	c.deletes.Add(1)
	return c.Store.Delete(ctx, key, ifVersion)
}

func (c *countingStore) List(ctx context.Context, prefix string) ([]string, error) {
	c.lists.Add(1)
	return c.Store.List(ctx, prefix)
}

// roundTrips is the calls counted: each is at least one round trip.
func (c *countingStore) roundTrips() int64 {
	return c.gets.Load() + c.lists.Load() + c.puts.Load() + c.deletes.Load() + c.batches.Load()
}

// commits is the writes that commit on their own plus the batches.
func (c *countingStore) commits() int64 {
	return c.puts.Load() + c.deletes.Load() + c.batches.Load()
}

type countingBatcher struct {
	*countingStore
	b storage.Batcher
}

func (c countingBatcher) WriteBatch(ctx context.Context, writes []storage.Write) ([]int64, error) {
	c.batches.Add(1)
	c.batched.Add(int64(len(writes)))
	return c.b.WriteBatch(ctx, writes)
}
