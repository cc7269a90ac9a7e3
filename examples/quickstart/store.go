package main

import (
	"context"
	"os"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// openStore opens the PostgreSQL database of $MEMLAYER_POSTGRES_URL when
// it is set (tables memlayer_quickstart_*), else the SQLite file at
// dbPath.
func openStore(ctx context.Context, dbPath string) (storage.Store, func() error, error) {
	if u := os.Getenv("MEMLAYER_POSTGRES_URL"); u != "" {
		st, err := postgres.Open(ctx, postgres.Config{URL: u, Prefix: "memlayer_quickstart_"})
		if err != nil {
			return nil, nil, err
		}
		return st, st.Close, nil
	}
	st, err := sqlite.Open(ctx, sqlite.Config{Path: dbPath})
	if err != nil {
		return nil, nil, err
	}
	return st, st.Close, nil
}
