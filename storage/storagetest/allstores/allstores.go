// Package allstores opens every backend of the module for a benchmark
// that compares them: the in-memory store, SQLite, Redis when
// MEMLAYER_REDIS_URL names a server, and PostgreSQL when
// MEMLAYER_POSTGRES_URL does. The open-a-run benchmarks of the layers
// use it, so that each measures the same stores.
package allstores

import (
	"context"
	"strings"

	"github.com/memlayer/memlayer/storage/postgres/pgtest"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// Backends returns the backends of a benchmark named name: the stores
// storagetest.Backends opens (memory, SQLite and, with a server, Redis,
// under a namespace that starts with name), then PostgreSQL, in a schema
// whose name starts with name ('-' becoming '_'), when a server is set.
func Backends(name string) []storagetest.Backend {
	sq := func(path string) (storagetest.Closer, error) {
		return sqlite.Open(context.Background(), sqlite.Config{Path: path})
	}
	rd := func(url, ns string) (storagetest.Closer, error) {
		return redis.New(redis.Config{URL: url, Namespace: ns})
	}
	backends := storagetest.Backends(name, sq, rd)
	if open := pgtest.Opener(strings.ReplaceAll(name, "-", "_")); open != nil {
		backends = append(backends, storagetest.Backend{Name: "postgres", Open: open})
	}
	return backends
}
