package postgres_test

import (
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/postgres"
	"github.com/memlayer/memlayer/storage/storagetest"
)

func TestBatch(t *testing.T) {
	url := pgtestURL(t)
	storagetest.RunBatch(t, func(t *testing.T) storage.Store {
		return open(t, postgres.Config{URL: url, Schema: newSchema(t, url)})
	})
}
