package allstores_test

import (
	"os"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest/allstores"
)

// TestBackends: the memory and SQLite stores are always there, Redis and
// PostgreSQL when their variables are set, and each opens a working
// store.
func TestBackends(t *testing.T) {
	want := []string{"memory", "sqlite"}
	if os.Getenv("MEMLAYER_REDIS_URL") != "" {
		want = append(want, "redis")
	}
	if os.Getenv("MEMLAYER_POSTGRES_URL") != "" {
		want = append(want, "postgres")
	}
	got := allstores.Backends("allstores-test")
	if len(got) != len(want) {
		t.Fatalf("%d backends, want %v", len(got), want)
	}
	for i, be := range got {
		if be.Name != want[i] {
			t.Errorf("backend %d is %s, want %s", i, be.Name, want[i])
		}
		st := be.Open(t, i)
		key := storage.LayerKey("allstores", storage.ThreadScope("t"), "k")
		if _, err := st.Put(t.Context(), key, []byte("v"), storage.NoVersion); err != nil {
			t.Fatalf("%s: Put: %v", be.Name, err)
		}
		if it, err := st.Get(t.Context(), key); err != nil || string(it.Value) != "v" {
			t.Errorf("%s: Get = %q, %v", be.Name, it.Value, err)
		}
	}
}
