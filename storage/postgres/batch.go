package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/memlayer/memlayer/storage"
)

// WriteBatch implements [storage.Batcher]: the writes are sent in one
// round trip and run as one implicit transaction, so that the batch
// waits for one flush of the write-ahead log however many writes it
// holds. A conditional write whose check fails raises an error in its
// statement (a division by the zero rows it touched), which rolls the
// whole batch back. A batch whose answer is lost fails with
// [ErrOutcomeUnknown]; any other error means nothing was applied.
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
	b := &pgx.Batch{}
	for i, w := range writes {
		s.queue(b, w, &versions[i])
	}
	c, wctx, done, err := s.acquire(ctx, "write batch", "")
	if err != nil {
		return nil, err
	}
	defer done()
	br := c.SendBatch(wctx, b)
	for i, w := range writes {
		if err := s.result(br, w, &versions[i]); err != nil {
			br.Close()
			return nil, s.batchError(ctx, w, err)
		}
	}
	// The implicit transaction commits when the server reaches the end
	// of the batch: only a lost answer leaves the outcome unknown.
	if err := br.Close(); err != nil {
		return nil, s.wrap(ctx, "write batch", "", err, true)
	}
	return versions, nil
}

// checked is a conditional write that divides by the rows it touched:
// a failed check raises division_by_zero and rolls the batch back.
func checked(stmt string) string {
	return `WITH w AS (` + stmt + ` RETURNING 1) SELECT 1 / (SELECT count(*)::int FROM w)`
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
		b.Queue(checked(`DELETE FROM `+s.kv+` WHERE key = $1 AND version = $2`), w.Key, w.IfVersion)
	case w.IfVersion == storage.AnyVersion:
		*v = storage.FirstVersion()
		b.Queue(`INSERT INTO `+s.kv+` AS t (key, value, version) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = t.version + 1 RETURNING version`,
			w.Key, value, *v)
	case w.IfVersion == storage.NoVersion:
		*v = storage.FirstVersion()
		b.Queue(checked(`INSERT INTO `+s.kv+` (key, value, version) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING`),
			w.Key, value, *v)
	default:
		*v = w.IfVersion + 1
		b.Queue(checked(`UPDATE `+s.kv+` SET value = $1, version = version + 1 WHERE key = $2 AND version = $3`),
			value, w.Key, w.IfVersion)
	}
}

// result reads the result of w's statement from br.
func (s *Store) result(br pgx.BatchResults, w storage.Write, v *int64) error {
	if !w.Delete && w.IfVersion == storage.AnyVersion {
		return br.QueryRow().Scan(v)
	}
	_, err := br.Exec()
	return err
}

// batchError is the error of a batch whose write w failed with err: a
// conflict when its check failed (division_by_zero, raised only by
// checked), else err as wrap describes it. The server answered, so the
// batch was rolled back.
func (s *Store) batchError(ctx context.Context, w storage.Write, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22012" {
		return s.wrap(ctx, "write batch", w.Key, err, true)
	}
	key := storage.Quote(w.Key)
	switch {
	case w.Delete:
		if _, gerr := s.Get(ctx, w.Key); errors.Is(gerr, storage.ErrNotFound) {
			return fmt.Errorf("storage/postgres: write batch: delete %s: %w", key, storage.ErrNotFound)
		}
		return fmt.Errorf("storage/postgres: write batch: delete %s: version %d is not current: %w", key, w.IfVersion, storage.ErrConflict)
	case w.IfVersion == storage.NoVersion:
		return fmt.Errorf("storage/postgres: write batch: put %s: key exists: %w", key, storage.ErrConflict)
	}
	return fmt.Errorf("storage/postgres: write batch: put %s: version %d is not current: %w", key, w.IfVersion, storage.ErrConflict)
}
