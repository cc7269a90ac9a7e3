package entitymemory

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/redis"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// TestTrust320_SavesUnderContention: 8 writers sharing one entity list
// (one scope, separate layers, as separate processes would) each save 15
// times at once, with the default retries. Every save succeeds (they back
// off until they get through) and no entity is lost. Before, some gave
// up with ErrConflict after 8 attempts.
func TestTrust320_SavesUnderContention(t *testing.T) {
	backends := map[string]func(t *testing.T) storage.Store{
		"memory": func(*testing.T) storage.Store { return storage.NewMemoryStore() },
		"sqlite": func(t *testing.T) storage.Store {
			st, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "db.sqlite")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	if url := os.Getenv("MEMLAYER_REDIS_URL"); url != "" {
		backends["redis"] = func(t *testing.T) storage.Store {
			st, err := redis.New(redis.Config{URL: url, Namespace: fmt.Sprintf("t320-%d:", time.Now().UnixNano())})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			tmpl := mustNew(t, Config{Capacity: 500, Now: time.Now})
			const writers, each = 8, 15
			var wg sync.WaitGroup
			errs := make(chan error, writers*each)
			start := make(chan struct{})
			for w := range writers {
				l := initLayer(t, tmpl, env(st, "shared"))
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := range each {
						res := fmt.Sprintf(`{"id":"w%d-%d","title":"x"}`, w, i)
						if err := l.Store(context.Background(), turn(result("get_page", "", res))); err != nil {
							errs <- fmt.Errorf("writer %d save %d: %w", w, i, err)
						}
					}
				}()
			}
			close(start)
			wg.Wait()
			close(errs)
			failed := 0
			for err := range errs {
				if failed++; failed <= 3 {
					t.Error(err)
				}
			}
			if failed > 0 {
				t.Errorf("%d of %d saves failed", failed, writers*each)
			}
			final := initLayer(t, tmpl, env(st, "shared"))
			if n := len(final.Entities()); n != writers*each {
				t.Errorf("stored %d entities, want %d: an update was lost", n, writers*each)
			}
		})
	}
}
