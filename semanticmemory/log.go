package semanticmemory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/memlayer/memlayer/storage"
)

// The stored log, in the same shape as the episodic layer's: a head
// (LayerKey(id, scope, "head")) names the records [Base, Next) that make
// the state, and record n is stored under LayerKey(id, scope,
// "r-<n>"). A write claims the next number by creating its record
// (create-only, storage.NoVersion), then publishes it by advancing the
// head with compare-and-swap; a writer that finds the number taken
// publishes that record for its writer and tries the next one. So every
// number below the head's Next has its record, and a reader that has
// seen records [Base, n) only reads the new ones. Every function here is
// called with l.mu held.

func (l *Layer) key(name string) string { return storage.LayerKey(l.cfg.ID, l.scope, name) }

func recName(seq int64) string { return "r-" + strconv.FormatInt(seq, 10) }

// quarantine sets an unreadable value aside and reports it. A value
// rewritten or removed meanwhile is left to its writer.
func (l *Layer) quarantine(ctx context.Context, it storage.Item, cause error) error {
	qkey, err := storage.Quarantine(ctx, l.store, it, l.cfg.ID, l.scope, l.now())
	if err != nil && !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("quarantine %s: %w", storage.Quote(it.Key), err)
	}
	l.logger.LogAttrs(ctx, slog.LevelWarn, "semanticmemory: stored record quarantined",
		slog.String("layer", l.cfg.ID), slog.String("key", it.Key),
		slog.String("quarantine", qkey), slog.Any("error", cause))
	return nil
}

// readHead returns the stored head and its version (an empty head and
// NoVersion when there is none). An unreadable head is quarantined and
// replaced by one that covers every stored record, so no fact is lost.
func (l *Layer) readHead(ctx context.Context) (head, int64, error) {
	for range l.cfg.MaxRetries {
		it, err := l.store.Get(ctx, l.key("head"))
		if errors.Is(err, storage.ErrNotFound) {
			return head{Version: FormatVersion}, storage.NoVersion, nil
		}
		if err != nil {
			return head{}, 0, fmt.Errorf("read head: %w", err)
		}
		h, err := decodeHead(it.Value)
		if err == nil {
			return h, it.Version, nil
		}
		if errors.Is(err, ErrVersion) {
			return head{}, 0, fmt.Errorf("read head %s: %w", storage.Quote(it.Key), err)
		}
		if err := l.quarantine(ctx, it, err); err != nil {
			return head{}, 0, err
		}
		keys, err := l.store.List(ctx, storage.LayerPrefix(l.cfg.ID, l.scope))
		if err != nil {
			return head{}, 0, fmt.Errorf("read head: %w", err)
		}
		h = head{Version: FormatVersion}
		for _, k := range keys {
			if n := l.seqOf(k); n >= h.Next {
				h.Next = n + 1
			}
		}
		if _, err := l.store.Put(ctx, l.key("head"), encode(h), storage.NoVersion); err != nil && !errors.Is(err, storage.ErrConflict) {
			return head{}, 0, fmt.Errorf("write head: %w", err)
		}
	}
	return head{}, 0, fmt.Errorf("read head: rewritten during quarantine %d times: %w", l.cfg.MaxRetries, storage.ErrConflict)
}

// seqOf returns the record number of a stored key, or -1.
func (l *Layer) seqOf(key string) int64 {
	name, err := storage.Unescape(strings.TrimPrefix(key, storage.LayerPrefix(l.cfg.ID, l.scope)))
	if err != nil || !strings.HasPrefix(name, "r-") {
		return -1
	}
	n, err := strconv.ParseInt(name[2:], 10, 64)
	if err != nil || n < 0 || recName(n) != name {
		return -1
	}
	return n
}

// readRecord returns record seq: an empty one when it is missing
// (cleared) or unreadable (quarantined).
func (l *Layer) readRecord(ctx context.Context, seq int64) (record, error) {
	it, err := l.store.Get(ctx, l.key(recName(seq)))
	if errors.Is(err, storage.ErrNotFound) {
		return record{}, nil
	}
	if err != nil {
		return record{}, fmt.Errorf("read record %d: %w", seq, err)
	}
	r, err := decodeRecord(it.Value, seq)
	if errors.Is(err, ErrVersion) {
		return record{}, fmt.Errorf("read record %d: %w", seq, err)
	}
	if err != nil {
		return record{}, l.quarantine(ctx, it, err)
	}
	return r, nil
}

// applyRecord takes a record into the index: a Reset record replaces
// everything before it.
func (l *Layer) applyRecord(r record) {
	if r.Reset {
		l.reset()
	}
	l.apply(r.Facts)
}

// sync brings the index up to the stored head: one Get when nothing
// changed, the new records when others appended, a full reload when the
// log was cleared or restored.
func (l *Layer) sync(ctx context.Context) error {
	h, ver, err := l.readHead(ctx)
	if err != nil {
		return err
	}
	if ver == l.hver && ver != storage.NoVersion {
		return nil
	}
	from := l.head.Next
	if h.Base != l.head.Base || h.Next < l.head.Next {
		l.reset()
		from = h.Base
	}
	for seq := from; seq < h.Next; seq++ {
		r, err := l.readRecord(ctx, seq)
		if err != nil {
			return err
		}
		l.applyRecord(r)
	}
	l.head, l.hver = h, ver
	return nil
}

// putHead writes h with compare-and-swap on the version we know.
func (l *Layer) putHead(ctx context.Context, h head) error {
	v, err := l.store.Put(ctx, l.key("head"), encode(h), l.hver)
	if err != nil {
		return err
	}
	l.head, l.hver = h, v
	return nil
}

// appendRecord writes one record built by build for its sequence number
// and publishes it, and returns the facts written and the number. build
// runs after each catch-up, so it decides on the latest state; it
// returns no facts to give up writing (unless reset: a Reset record
// replaces every fact before it, and may hold none).
func (l *Layer) appendRecord(ctx context.Context, reset bool, build func(seq int64) ([]Fact, error)) ([]Fact, int64, error) {
	for attempt := range l.cfg.MaxRetries {
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return nil, 0, fmt.Errorf("append: %w", err)
		}
		seq := l.head.Next
		facts, err := build(seq)
		if err != nil || len(facts) == 0 && !reset {
			return nil, 0, err
		}
		_, err = l.store.Put(ctx, l.key(recName(seq)), encode(record{Version: FormatVersion, Seq: seq, Reset: reset, Facts: facts}), storage.NoVersion)
		if err != nil && !errors.Is(err, storage.ErrConflict) {
			return nil, 0, fmt.Errorf("write record %d: %w", seq, err)
		}
		mine := err == nil
		if err := l.publish(ctx, seq); err != nil {
			return nil, 0, err
		}
		if mine {
			return facts, seq, nil
		}
	}
	return nil, 0, fmt.Errorf("append: gave up after %d attempts: %w", l.cfg.MaxRetries, storage.ErrConflict)
}

// publish advances the head past record seq and takes the records up to
// it into the index, catching up with other writers on the way.
func (l *Layer) publish(ctx context.Context, seq int64) error {
	for attempt := range l.cfg.MaxRetries {
		if l.head.Next > seq {
			return nil // published by another writer and read by sync
		}
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return fmt.Errorf("publish record %d: %w", seq, err)
		}
		h := l.head
		h.Next = seq + 1
		old := l.head.Next
		err := l.putHead(ctx, h)
		if err == nil {
			for n := old; n <= seq; n++ {
				r, err := l.readRecord(ctx, n)
				if err != nil {
					return err
				}
				l.applyRecord(r)
			}
			return nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("publish record %d: %w", seq, err)
		}
		if err := l.sync(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("publish record %d: gave up after %d attempts: %w", seq, l.cfg.MaxRetries, storage.ErrConflict)
}

// rebase moves the head's Base up to seq, a published Reset record, so
// that readers start there, then deletes the records below it. A Base
// already at or past seq (another writer's Reset) is left.
func (l *Layer) rebase(ctx context.Context, seq int64) error {
	for attempt := range l.cfg.MaxRetries {
		if l.head.Base >= seq {
			return nil
		}
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return fmt.Errorf("rebase: %w", err)
		}
		h := l.head
		h.Base = seq
		err := l.putHead(ctx, h)
		if err == nil {
			return l.purge(ctx, seq)
		}
		if !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("rebase: %w", err)
		}
		if err := l.sync(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("rebase: gave up after %d attempts: %w", l.cfg.MaxRetries, storage.ErrConflict)
}

// purge deletes the records below base.
func (l *Layer) purge(ctx context.Context, base int64) error {
	keys, err := l.store.List(ctx, storage.LayerPrefix(l.cfg.ID, l.scope))
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	var errs []error
	for _, k := range keys {
		if n := l.seqOf(k); n >= 0 && n < base {
			if err := l.store.Delete(ctx, k, storage.AnyVersion); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
