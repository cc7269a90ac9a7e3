package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
)

// Open a store on the database of MEMLAYER_POSTGRES_URL, write a key
// once and update it with compare-and-swap. It needs a server, so it is
// compiled, not run, by go test; TestExample runs it.
func Example() {
	url := os.Getenv("MEMLAYER_POSTGRES_URL")
	ctx := context.Background()
	st, err := postgres.Open(ctx, postgres.Config{URL: url, Schema: "memlayer_example"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	key := storage.LayerKey("notes", storage.ResourceScope("user-1"), "state")
	defer st.Delete(ctx, key, storage.AnyVersion)
	st.Delete(ctx, key, storage.AnyVersion)

	v1, err := st.Put(ctx, key, []byte("v1"), storage.NoVersion)
	fmt.Println("created:", err == nil)
	v2, _ := st.Put(ctx, key, []byte("v2"), v1)
	_, err = st.Put(ctx, key, []byte("lost"), v1) // v1 is stale now
	fmt.Println("stale write:", errors.Is(err, storage.ErrConflict))
	it, _ := st.Get(ctx, key)
	fmt.Println("value:", string(it.Value), "current:", it.Version == v2)
}
