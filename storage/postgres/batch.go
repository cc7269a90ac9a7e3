package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/memlayer/memlayer/storage"
)

// WriteBatch implements [storage.Batcher]: the writes are one transaction,
// sent in one round trip between BEGIN and COMMIT, so that the batch
// waits for one flush of the write-ahead log however many writes it
// holds. A failed check rolls the transaction back. A batch whose COMMIT
// gets no answer fails with [ErrOutcomeUnknown]; any other error means
// nothing was applied.
func (s *Store) WriteBatch(ctx context.Context, writes []storage.Write) ([]int64, error) {
	if err := s.begin(ctx, "write batch", "", false); err != nil {
		return nil, err
	}
	if err := storage.CheckBatch(writes); err != nil {
		return nil, fmt.Errorf("storage/postgres: write batch: %w", err)
	}
	versions := make([]int64, len(writes))
	if len(writes) == 0 {
		return versions, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, s.wrap(ctx, "write batch", "", err, false)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	b := &pgx.Batch{}
	for i, w := range writes {
		s.queue(b, w, &versions[i])
	}
	br := tx.SendBatch(ctx, b)
	for i, w := range writes {
		if err := s.check(ctx, br, w, &versions[i]); err != nil {
			br.Close()
			return nil, err
		}
	}
	if err := br.Close(); err != nil {
		return nil, s.wrap(ctx, "write batch", "", err, false)
	}
	// Nothing is applied before COMMIT: only its lost answer leaves the
	// outcome unknown.
	if err := tx.Commit(ctx); err != nil {
		return nil, s.wrap(ctx, "write batch", "", err, !errors.Is(err, pgx.ErrTxCommitRollback))
	}
	return versions, nil
}

// queue adds w's statement to b. A Put that may create its key draws
// the key's first version into *v.
func (s *Store) queue(b *pgx.Batch, w storage.Write, v *int64) {
	value := w.Value
	if value == nil {
		value = []byte{}
	}
	switch {
	case w.Delete && w.IfVersion == storage.AnyVersion:
		b.Queue(`DELETE FROM `+s.kv+` WHERE key = $1`, w.Key)
	case w.Delete:
		b.Queue(`DELETE FROM `+s.kv+` WHERE key = $1 AND version = $2`, w.Key, w.IfVersion)
	case w.IfVersion == storage.AnyVersion:
		*v = storage.FirstVersion()
		b.Queue(`INSERT INTO `+s.kv+` AS t (key, value, version) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = t.version + 1 RETURNING version`,
			w.Key, value, *v)
	case w.IfVersion == storage.NoVersion:
		*v = storage.FirstVersion()
		b.Queue(`INSERT INTO `+s.kv+` (key, value, version) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING`,
			w.Key, value, *v)
	default:
		*v = w.IfVersion + 1
		b.Queue(`UPDATE `+s.kv+` SET value = $1, version = version + 1 WHERE key = $2 AND version = $3`,
			value, w.Key, w.IfVersion)
	}
}

// check reads the result of w's statement from br and says whether its
// version check held.
func (s *Store) check(ctx context.Context, br pgx.BatchResults, w storage.Write, v *int64) error {
	key := storage.Quote(w.Key)
	if !w.Delete && w.IfVersion == storage.AnyVersion {
		if err := br.QueryRow().Scan(v); err != nil {
			return s.wrap(ctx, "write batch: put", w.Key, err, false)
		}
		return nil
	}
	tag, err := br.Exec()
	if err != nil {
		return s.wrap(ctx, "write batch", w.Key, err, false)
	}
	switch {
	case tag.RowsAffected() > 0 || w.Delete && w.IfVersion == storage.AnyVersion:
		return nil
	case w.Delete:
		if _, err := s.Get(ctx, w.Key); errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("storage/postgres: write batch: delete %s: %w", key, storage.ErrNotFound)
		}
		return fmt.Errorf("storage/postgres: write batch: delete %s: version %d is not current: %w", key, w.IfVersion, storage.ErrConflict)
	case w.IfVersion == storage.NoVersion:
		return fmt.Errorf("storage/postgres: write batch: put %s: key exists: %w", key, storage.ErrConflict)
	}
	return fmt.Errorf("storage/postgres: write batch: put %s: version %d is not current: %w", key, w.IfVersion, storage.ErrConflict)
}
