package storage_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/memlayer/memlayer/storage"
)

// A read-modify-write with compare-and-swap: the second writer, holding a
// stale version, gets ErrConflict and must read again.
func ExampleNewMemoryStore() {
	ctx := context.Background()
	s := storage.NewMemoryStore()
	defer s.Close()

	key := storage.LayerKey("working-memory", "thread-1", "state")
	v1, err := s.Put(ctx, key, []byte(`{"plan":"draft"}`), storage.NoVersion)
	if err != nil {
		panic(err)
	}
	v2, err := s.Put(ctx, key, []byte(`{"plan":"final"}`), v1)
	if err != nil {
		panic(err)
	}
	_, err = s.Put(ctx, key, []byte(`{"plan":"stale"}`), v1)
	fmt.Println("stale write conflicts:", errors.Is(err, storage.ErrConflict))

	it, err := s.Get(ctx, key)
	if err != nil {
		panic(err)
	}
	// Versions are opaque: compare them for equality only.
	fmt.Printf("%s, is the latest version: %v\n", it.Value, it.Version == v2)

	keys, err := s.List(ctx, storage.LayerPrefix("working-memory", "thread-1"))
	if err != nil {
		panic(err)
	}
	fmt.Println(keys)
	// Output:
	// stale write conflicts: true
	// {"plan":"final"}, is the latest version: true
	// [layers/working-memory/thread-1/state]
}

// Every key part is escaped, so an ID cannot climb into another scope.
func ExampleLayerKey() {
	fmt.Println(storage.LayerKey("working-memory", "thread-1", "state"))
	fmt.Println(storage.LayerKey("working-memory", "../thread-2", "state"))
	fmt.Println(storage.ThreadKey("a/b", "checkpoint"))
	// Output:
	// layers/working-memory/thread-1/state
	// layers/working-memory/..%2Fthread-2/state
	// threads/a%2Fb/checkpoint
}

func ExampleUnescape() {
	part, err := storage.Unescape("..%2Fthread-2")
	fmt.Printf("%q %v\n", part, err)
	_, err = storage.Unescape("%2f")
	fmt.Println(errors.Is(err, storage.ErrInvalidKey))
	// Output:
	// "../thread-2" <nil>
	// true
}
