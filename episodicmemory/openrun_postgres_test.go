package episodicmemory

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
	"github.com/memlayer/memlayer/storage/postgres/pgtest"
)

// postgresOpenRun is BenchmarkOpenRun's PostgreSQL backend when
// MEMLAYER_POSTGRES_URL names a server (.ci/with-postgres starts one):
// a fresh schema per benchmark, dropped at its end.
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
	}{{"postgres", func(b *testing.B, n int) storage.Store {
		schema := fmt.Sprintf("bench_openrun_ep_%d_%d", n, time.Now().UnixNano())
		s, err := postgres.Open(context.Background(), postgres.Config{URL: u, Schema: schema})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if _, err := s.Pool().Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
				b.Error(err)
			}
			s.Close()
		})
		return s
	}}}
}
