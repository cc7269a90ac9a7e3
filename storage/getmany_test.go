package storage_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// plainStore hides every capability of the store it holds.
type plainStore struct{ storage.Store }

func (p plainStore) Close() error { return p.Store.(*storage.MemoryStore).Close() }

// TestGetManyWithoutTheCapability runs the MultiGetter checks on
// storage.GetMany over a store that has only Get.
func TestGetManyWithoutTheCapability(t *testing.T) {
	storagetest.RunGetMany(t, func(t *testing.T) storage.Store {
		return fallback{plainStore{storage.NewMemoryStore()}}
	})
}

// fallback is a MultiGetter through storage.GetMany's per-key path.
type fallback struct{ plainStore }

func (f fallback) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	if _, ok := storage.Store(f.plainStore).(storage.MultiGetter); ok {
		panic("plainStore must not be a MultiGetter")
	}
	return storage.GetMany(ctx, f.plainStore, keys)
}

func TestGetManyUsesTheCapability(t *testing.T) {
	ctx := context.Background()
	m := storage.NewMemoryStore()
	if _, err := m.Put(ctx, "a", []byte("1"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	c := &countingGets{Store: m}
	items, err := storage.GetMany(ctx, c, []string{"b", "a"})
	if err != nil || len(items) != 1 || items[0].Key != "a" || c.gets != 2 {
		t.Fatalf("GetMany over Get = %v, %v after %d Gets; want item a after 2 Gets", items, err, c.gets)
	}
	mc := &countingMany{countingGets: countingGets{Store: m}, m: m}
	items, err = storage.GetMany(ctx, mc, []string{"b", "a"})
	if err != nil || len(items) != 1 || string(items[0].Value) != "1" || mc.gets != 0 || mc.many != 1 {
		t.Fatalf("GetMany over GetMany = %v, %v after %d Gets and %d GetManys; want item a after one GetMany", items, err, mc.gets, mc.many)
	}
	if _, err := storage.GetMany(ctx, c, []string{"a", "a"}); !errors.Is(err, storage.ErrInvalidKey) || c.gets != 2 {
		t.Errorf("GetMany(a, a) = %v after %d more Gets; want ErrInvalidKey before any", err, c.gets-2)
	}
	got := storage.InKeyOrder([]string{"x", "y", "z"}, map[string]storage.Item{"z": {Key: "z"}, "x": {Key: "x"}})
	if !slices.EqualFunc(got, []string{"x", "z"}, func(it storage.Item, k string) bool { return it.Key == k }) {
		t.Error("InKeyOrder does not keep the order of keys")
	}
}

type countingGets struct {
	storage.Store
	gets int
}

func (c *countingGets) Get(ctx context.Context, key string) (storage.Item, error) {
	c.gets++
	return c.Store.Get(ctx, key)
}

type countingMany struct {
	countingGets
	m    *storage.MemoryStore
	many int
}

func (c *countingMany) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	c.many++
	return c.m.GetMany(ctx, keys)
}
