package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
)

// TestThreadsCommandRedis: the checks of TestThreadsCommand (a
// resource's threads paged and filtered by metadata, titles set and
// derived, messages paged, delete, and the exit status of each mistake)
// through memlayer -store REDIS_URL -namespace NS.
func TestThreadsCommandRedis(t *testing.T) {
	u := os.Getenv("MEMLAYER_REDIS_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MEMLAYER_REDIS_URL is not set")
		}
		t.Skip("MEMLAYER_REDIS_URL is not set")
	}
	ns := fmt.Sprintf("threadscmd-%d:", time.Now().UnixNano())
	st, err := redis.New(redis.Config{URL: u, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx := context.Background()
		keys, _ := st.List(ctx, "")
		for _, k := range keys {
			_ = st.Delete(ctx, k, storage.AnyVersion)
		}
		st.Close()
	}()
	t.Setenv("MEMLAYER_STORE", "")
	checkThreadsCommand(t, st, "-store", u, "-namespace", ns)
}
