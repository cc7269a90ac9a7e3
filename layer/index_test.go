package layer_test

import (
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// plainStore hides every optional interface of the store it wraps.
type plainStore struct{ storage.Store }

func TestIndexOf(t *testing.T) {
	mem := storage.NewMemoryStore()
	if idx, ok := layer.IndexOf(mem); !ok || idx != storage.Searcher(mem) {
		t.Fatalf("IndexOf(Memory) = %v, %v; want the store itself", idx, ok)
	}
	if idx, ok := layer.IndexOf(plainStore{mem}); ok || idx != nil {
		t.Fatalf("IndexOf(a plain Store) = %v, %v; want nil, false", idx, ok)
	}
	if idx, ok := layer.IndexOf(nil); ok || idx != nil {
		t.Fatalf("IndexOf(nil) = %v, %v; want nil, false", idx, ok)
	}
}
