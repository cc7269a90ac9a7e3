package redis_test

import (
	"strconv"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// BenchmarkRedisPut2KB is a compare-and-swap write of a 2 KB value (one
// round trip running the Lua script).
func BenchmarkRedisPut2KB(b *testing.B) { benchPut(b, newStore(b, redis.Config{})) }

// BenchmarkRedisClusterPut2KB is the same on the three-master cluster the
// tests start (the client routes the script to the key's master).
func BenchmarkRedisClusterPut2KB(b *testing.B) {
	url := clusterURL(b)
	benchPut(b, newClusterStore(b, url, namespace(b)))
}

func benchPut(b *testing.B, s *redis.Store) {
	ctx := b.Context()
	key := storage.LayerKey("working-memory", "thread-1", "state")
	value := make([]byte, 2048)
	version := storage.NoVersion
	b.ReportAllocs()
	for b.Loop() {
		v, err := s.Put(ctx, key, value, version)
		if err != nil {
			b.Fatal(err)
		}
		version = v
	}
}

// BenchmarkRedisGet reads a 2 KB value (one HMGET).
func BenchmarkRedisGet(b *testing.B) { benchGet(b, newStore(b, redis.Config{})) }

// BenchmarkRedisClusterGet is the same on the three-master cluster.
func BenchmarkRedisClusterGet(b *testing.B) {
	url := clusterURL(b)
	benchGet(b, newClusterStore(b, url, namespace(b)))
}

func benchGet(b *testing.B, s *redis.Store) {
	ctx := b.Context()
	key := storage.LayerKey("working-memory", "thread-1", "state")
	if _, err := s.Put(ctx, key, make([]byte, 2048), storage.AnyVersion); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, key); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedisList lists one scope of 20 keys in a namespace of 1,000.
func BenchmarkRedisList(b *testing.B) {
	s := newStore(b, redis.Config{})
	ctx := b.Context()
	for i := range 1000 {
		key := storage.LayerKey("kv", "scope-"+strconv.Itoa(i/20), "k"+strconv.Itoa(i))
		if _, err := s.Put(ctx, key, []byte("v"), storage.AnyVersion); err != nil {
			b.Fatal(err)
		}
	}
	prefix := storage.LayerPrefix("kv", "scope-7")
	b.ReportAllocs()
	for b.Loop() {
		keys, err := s.List(ctx, prefix)
		if err != nil || len(keys) != 20 {
			b.Fatalf("List = %d keys, %v", len(keys), err)
		}
	}
}

// BenchmarkRedisSearch100k is a three-term text query for the top 10
// over 100,000 documents of one user (the inverted index in Redis, BM25
// computed in the process over the query terms' postings).
func BenchmarkRedisSearch100k(b *testing.B) {
	storagetest.BenchmarkSearch(b, newStore(b, redis.Config{}))
}

// BenchmarkRedisIndex is the cost of indexing a document, in batches of
// 100 (one Lua script each).
func BenchmarkRedisIndex(b *testing.B) {
	storagetest.BenchmarkIndex(b, newStore(b, redis.Config{}))
}
