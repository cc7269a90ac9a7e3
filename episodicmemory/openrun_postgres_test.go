package episodicmemory

import (
	"os"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres/pgtest"
)

// postgresOpenRun is BenchmarkOpenRun's PostgreSQL backend when
// MEMLAYER_POSTGRES_URL names a server (.ci/with-postgres starts one):
// a fresh schema per benchmark, dropped at its end (pgtest.Open).
func postgresOpenRun() []struct {
	name string
	open func(b *testing.B, n int) storage.Store
} {
	u := os.Getenv(pgtest.EnvURL)
	if u == "" {
		return nil
	}
	return []struct {
		name string
		open func(b *testing.B, n int) storage.Store
	}{{"postgres", func(b *testing.B, n int) storage.Store { return pgtest.Open(b, u, "bench_openrun_ep") }}}
}
