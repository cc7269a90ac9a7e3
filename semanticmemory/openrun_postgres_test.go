package semanticmemory

import (
	"os"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres/pgtest"
)

// postgresOpenRun is BenchmarkOpenRun's PostgreSQL backend when
// MEMLAYER_POSTGRES_URL names a server (.ci/with-postgres starts one):
// a fresh schema per benchmark, dropped at its end (pgtest.Open).
func postgresOpenRun() []openRunBackend {
	u := os.Getenv(pgtest.EnvURL)
	if u == "" {
		return nil
	}
	return []openRunBackend{{"postgres", func(b testing.TB, n int) storage.Store { return pgtest.Open(b, u, "bench_openrun_sem") }}}
}
