package postgres_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
	"github.com/memlayer/memlayer/storage/postgres/pgtest"
	"github.com/memlayer/memlayer/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var schemas atomic.Int64

// newSchema returns a schema name no other store of this process uses,
// dropped when t ends.
func newSchema(t testing.TB, url string) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), schemas.Add(1))
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

func open(t testing.TB, cfg postgres.Config) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func pgtestURL(t *testing.T) string { return pgtest.URL(t) }

func TestConformance(t *testing.T) {
	url := pgtest.URL(t)
	storagetest.RunWith(t, func(t *testing.T) storage.Store {
		return open(t, postgres.Config{URL: url, Schema: newSchema(t, url)})
	}, storagetest.Options{Wipe: func(t *testing.T, st storage.Store) storage.Store {
		// Drop the tables behind the store's back, as a restored empty
		// database would; a new store creates them again.
		s := st.(*postgres.Store)
		if _, err := s.Pool().Exec(context.Background(), `DROP SCHEMA `+pgx.Identifier{s.Schema()}.Sanitize()+` CASCADE`); err != nil {
			t.Fatal(err)
		}
		return open(t, postgres.Config{URL: url, Schema: s.Schema()})
	}})
}

// TestExample runs Example against the test server and checks its output.
func TestExample(t *testing.T) {
	t.Setenv("MEMLAYER_POSTGRES_URL", pgtest.URL(t))
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	Example()
	os.Stdout = old
	w.Close()
	out, _ := io.ReadAll(r)
	want := "created: true\nstale write: true\nvalue: v2 current: true\n"
	if string(out) != want {
		t.Errorf("Example printed %q, want %q", out, want)
	}
}
