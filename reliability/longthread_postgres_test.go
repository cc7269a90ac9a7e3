package reliability

import (
	"context"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
)

// ltCountingBatcher is an ltCountingStore that forwards storage.Batcher,
// counting the bytes of each batch's puts.
type ltCountingBatcher struct {
	*ltCountingStore
	b storage.Batcher
}

func (s ltCountingBatcher) WriteBatch(ctx context.Context, writes []storage.Write) ([]int64, error) {
	for _, w := range writes {
		if !w.Delete {
			s.add(ltKind(w.Key), len(w.Key)+len(w.Value))
		}
	}
	return s.b.WriteBatch(ctx, writes)
}

// ltPostgres opens the long thread's store in a fresh schema of the
// suite's PostgreSQL server, or skips t when there is none.
func ltPostgres(t testing.TB) ltStore {
	spec, ok := postgresSpec(t)
	if !ok {
		t.Skip("postgres: no server (see postgres_test.go)")
	}
	st, err := postgres.Open(context.Background(), postgres.Config{URL: spec.URL, Schema: spec.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestLongThreadPostgres is TestLongThread on PostgreSQL, with the same
// bars; the overhead bar is logged, not asserted (see BENCHMARKS.md for
// the figures).
func TestLongThreadPostgres(t *testing.T) {
	r := runLongThreadOn(t, ltTurns(), false, ltPostgres(t))
	if heavy() {
		r.turn10 = ltTurn10(t, false, ltPostgres)
	}
	r.report(t, "quickstart-postgres")
	checkLongThread(t, r, false, false)
}

// TestLongThreadAllLayersPostgres is TestLongThreadAllLayers on
// PostgreSQL.
func TestLongThreadAllLayersPostgres(t *testing.T) {
	r := runLongThreadOn(t, ltTurns(), true, ltPostgres(t))
	if heavy() {
		r.turn10 = ltTurn10(t, true, ltPostgres)
	}
	r.report(t, "all-layers-postgres")
	checkLongThread(t, r, true, false)
}

// BenchmarkLongThreadPostgres is BenchmarkLongThread on PostgreSQL (run
// it with -benchtime 1x).
func BenchmarkLongThreadPostgres(b *testing.B) { benchLongThread(b, "-postgres", ltPostgres) }
