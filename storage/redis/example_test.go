package redis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
)

// This example needs a running server, so it is compiled but not run.
func ExampleNew() {
	s, err := redis.New(redis.Config{
		URL:       "redis://127.0.0.1:6379/0",
		Namespace: "myapp:",
		// Thread checkpoints expire a day after their last write.
		TTL: redis.PrefixTTL(24*time.Hour, "threads/"),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Ping(ctx); errors.Is(err, redis.ErrUnavailable) {
		log.Fatal("redis is down: ", err)
	}

	key := storage.LayerKey("working-memory", "customer-42", "state")
	v, err := s.Put(ctx, key, []byte(`{"plan":"draft"}`), storage.NoVersion)
	switch {
	case errors.Is(err, storage.ErrConflict):
		fmt.Println("another process created it first: read, merge and retry")
	case err != nil:
		log.Fatal(err)
	default:
		fmt.Println("created at version", v)
	}
}

func ExamplePrefixTTL() {
	ttl := redis.PrefixTTL(time.Hour, "threads/")
	fmt.Println(ttl(storage.ThreadKey("t1", "checkpoint")))
	fmt.Println(ttl(storage.LayerKey("working-memory", "r1", "state")))
	// Output:
	// 1h0m0s
	// 0s
}

// A Redis Cluster is named by a redis+cluster:// URL listing seed nodes.
// This example needs a running cluster, so it is compiled but not run.
func ExampleNew_cluster() {
	s, err := redis.New(redis.Config{
		URL:       "redis+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000?dial_timeout=2s",
		Namespace: "myapp:",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	// A thread's keys share one slot: this checkpoint is stored as
	// "myapp:threads/{t1}/checkpoint".
	_, err = s.Put(context.Background(), storage.ThreadKey("t1", "checkpoint"), []byte("{}"), storage.AnyVersion)
	if errors.Is(err, redis.ErrUnavailable) {
		log.Fatal("cluster unreachable: ", err)
	}
	fmt.Println("cluster:", s.Cluster())
}
