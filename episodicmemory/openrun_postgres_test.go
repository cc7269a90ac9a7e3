package episodicmemory

import (
	"os"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres/pgtest"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// withPostgres adds BenchmarkOpenRun's PostgreSQL backend to backends
// when MEMLAYER_POSTGRES_URL names a server (.ci/with-postgres starts
// one): a fresh schema per benchmark, dropped at its end (pgtest.Open).
func withPostgres(backends []storagetest.Backend) []storagetest.Backend {
	u := os.Getenv(pgtest.EnvURL)
	if u == "" {
		return backends
	}
	return append(backends, storagetest.Backend{Name: "postgres", Open: func(tb testing.TB, _ int) storage.Store { return pgtest.Open(tb, u, "bench_openrun_ep") }})
}
