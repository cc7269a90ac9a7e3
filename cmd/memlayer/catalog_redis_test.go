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

// redisNamespace returns the URL of the test Redis server
// ($MEMLAYER_REDIS_URL; the test skips without one, and fails on CI)
// and a store in a namespace of its own, named after prefix, whose keys
// are deleted when the test ends.
func redisNamespace(t *testing.T, prefix string) (url, ns string, st storage.Store) {
	t.Helper()
	url = os.Getenv("MEMLAYER_REDIS_URL")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MEMLAYER_REDIS_URL is not set")
		}
		t.Skip("MEMLAYER_REDIS_URL is not set")
	}
	ns = fmt.Sprintf("%s-%d:", prefix, time.Now().UnixNano())
	rs, err := redis.New(redis.Config{URL: url, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := rs.List(ctx, "")
		for _, k := range keys {
			_ = rs.Delete(ctx, k, storage.AnyVersion)
		}
		rs.Close()
	})
	return url, ns, rs
}

// TestThreadsCommandRedis: the checks of TestThreadsCommand (a
// resource's threads paged and filtered by metadata, titles set and
// derived, messages paged, delete, and the exit status of each mistake)
// through memlayer -store REDIS_URL -namespace NS.
func TestThreadsCommandRedis(t *testing.T) {
	u, ns, st := redisNamespace(t, "threadscmd")
	t.Setenv("MEMLAYER_STORE", "")
	checkThreadsCommand(t, st, "-store", u, "-namespace", ns)
}
