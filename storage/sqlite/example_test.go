package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "memlayer-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "memory.db")
	ctx := context.Background()

	s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		panic(err)
	}
	key := storage.LayerKey("working-memory", "thread-1", "state")
	v, err := s.Put(ctx, key, []byte(`{"plan":"draft"}`), storage.NoVersion)
	if err != nil {
		panic(err)
	}
	v2, err := s.Put(ctx, key, []byte(`{"plan":"final"}`), v)
	if err != nil {
		panic(err)
	}
	s.Close()

	// A later process opens the same file and finds the state.
	s, err = sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	it, err := s.Get(ctx, key)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s, same version: %v\n", it.Value, it.Version == v2)
	_, err = s.Put(ctx, key, []byte(`{"plan":"stale"}`), v)
	fmt.Println("stale write conflicts:", errors.Is(err, storage.ErrConflict))
	// Output:
	// {"plan":"final"}, same version: true
	// stale write conflicts: true
}

// Opening something that is not a database fails with ErrCorrupt and
// leaves the file alone.
func ExampleOpen_corrupt() {
	f, err := os.CreateTemp("", "memlayer-example-*.db")
	if err != nil {
		panic(err)
	}
	defer os.Remove(f.Name())
	f.WriteString("definitely not an SQLite file, but long enough to have a header of its own")
	f.Close()

	_, err = sqlite.Open(context.Background(), sqlite.Config{Path: f.Name()})
	fmt.Println(errors.Is(err, sqlite.ErrCorrupt))
	// Output: true
}
