package agentloop

import (
	"context"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

// manyCounting counts the GetMany calls that reach it.
type manyCounting struct {
	*storage.MemoryStore
	calls int
}

func (s *manyCounting) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	s.calls++
	return s.MemoryStore.GetMany(ctx, keys)
}

// TestLayerStoreForwardsCapabilities checks that the store the layers get
// keeps the optional capabilities of the configured one: a wrapper that
// hid storage.MultiGetter would make every layer read its records one
// round trip each.
func TestLayerStoreForwardsCapabilities(t *testing.T) {
	ctx := context.Background()
	tel, err := newTelemetry(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	inner := &manyCounting{MemoryStore: storage.NewMemoryStore()}
	for _, k := range []string{"layers/a/1", "layers/a/2"} {
		if _, err := inner.Put(ctx, k, []byte(k), storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	s := tel.store(inner, nil)
	if _, ok := s.(storage.Searcher); !ok {
		t.Error("the layers' store hides storage.Searcher")
	}
	if _, ok := s.(storage.MultiGetter); !ok {
		t.Fatal("the layers' store hides storage.MultiGetter")
	}
	items, err := storage.GetMany(ctx, s, []string{"layers/a/1", "layers/a/missing", "layers/a/2"})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || string(items[0].Value) != "layers/a/1" || string(items[1].Value) != "layers/a/2" {
		t.Errorf("GetMany = %+v, want the two stored records in key order", items)
	}
	if inner.calls != 1 {
		t.Errorf("the store's GetMany was called %d times, want 1", inner.calls)
	}
}
