package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
)

// TestAsyncCommit checks that AsyncCommit sets synchronous_commit=off on
// the store's sessions and nothing else: the default stays durable, the
// store works the same, and with an application's Pool it is refused.
func TestAsyncCommit(t *testing.T) {
	url := pgtestURL(t)
	ctx := context.Background()
	for _, async := range []bool{false, true} {
		s := open(t, postgres.Config{URL: url, Schema: newSchema(t, url), AsyncCommit: async})
		var got string
		if err := s.Pool().QueryRow(ctx, `SHOW synchronous_commit`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "on", true: "off"}[async]
		if got != want {
			t.Errorf("AsyncCommit=%v: synchronous_commit = %q, want %q", async, got, want)
		}
		v, err := s.Put(ctx, "k", []byte("v"), storage.NoVersion)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.WriteBatch(ctx, []storage.Write{{Key: "k", Value: []byte("w"), IfVersion: v}, {Key: "k2", Value: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
		if it, err := s.Get(ctx, "k"); err != nil || string(it.Value) != "w" {
			t.Errorf("AsyncCommit=%v: Get = %q, %v", async, it.Value, err)
		}
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if s, err := postgres.Open(ctx, postgres.Config{Pool: pool, AsyncCommit: true}); err == nil {
		s.Close()
		t.Error("Open with Pool and AsyncCommit succeeded; want an error")
	}
	// The pool is the application's: the refused Open left it usable.
	if err := pool.Ping(ctx); err != nil {
		t.Errorf("pool after the refused Open: %v", err)
	}
}
