//go:build postgres

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
)

func init() {
	openPostgres = func(ctx context.Context, url string) (storage.Store, func(), error) {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err := postgres.Open(pctx, postgres.Config{URL: url})
		if err != nil {
			return nil, nil, fmt.Errorf("open PostgreSQL store: %w", err)
		}
		return st, func() { st.Close() }, nil
	}
}
