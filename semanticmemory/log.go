package semanticmemory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/memlayer/memlayer/internal/seqlog"
	"github.com/memlayer/memlayer/storage"
)

// The stored log, in the same shape as the episodic layer's (both are
// written through internal/seqlog): a head
// (LayerKey(id, scope, "head")) names the records [Base, Next) that make
// the state, and record n is stored under LayerKey(id, scope,
// "r-<n>"). A write claims the next number by creating its record
// (create-only, storage.NoVersion), then publishes it by advancing the
// head with compare-and-swap; a writer that finds the number taken
// publishes that record for its writer and tries the next one. So every
// number below the head's Next has its record, and a reader that has
// seen records [Base, n) only reads the new ones. Every function here is
// called with l.mu held.

func recName(seq int64) string { return "r-" + strconv.FormatInt(seq, 10) }

// readHead returns the stored head and its version (an empty head and
// NoVersion when there is none). An unreadable head is quarantined and
// replaced by one that covers every stored record, so no fact is lost.
func (l *Layer) readHead(ctx context.Context) (head, int64, error) {
	return seqlog.ReadHead(ctx, &l.log, decodeHead, func(names []string) head {
		h := head{Version: FormatVersion}
		for _, name := range names {
			if n := seqOf(name); n >= h.Next {
				h.Next = n + 1
			}
		}
		return h
	})
}

// seqOf returns the number of a record name, or -1.
func seqOf(name string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(name, "r-"), 10, 64)
	if err != nil || n < 0 || recName(n) != name {
		return -1
	}
	return n
}

// readRecord returns record seq: an empty one when it is missing
// (cleared) or unreadable (quarantined).
func (l *Layer) readRecord(ctx context.Context, seq int64) (record, error) {
	r, _, err := seqlog.Read(ctx, &l.log, recName(seq), func(b []byte) (record, error) { return decodeRecord(b, seq) })
	return r, err
}

// recordsPerRead bounds the records eachRecord reads in one round trip
// of the store.
const recordsPerRead = 256

// eachRecord hands fn the records from, from±1, ... up to to (not
// included), upward when from < to and downward when from > to, each as
// readRecord returns it with its Seq set, until fn returns false or an
// error. It reads them recordsPerRead at a time, each batch in one round
// trip (seqlog.ReadEach): the records after fn stopped are read but not
// decoded.
func (l *Layer) eachRecord(ctx context.Context, from, to int64, fn func(r record) (bool, error)) error {
	step := int64(1)
	if from > to {
		step = -1
	}
	for from != to {
		n := min((to-from)*step, recordsPerRead)
		names := recNames(from, n, step)
		base, more := from, true
		var ferr error
		err := seqlog.ReadEach(ctx, &l.log, names, func(i int, b []byte) (record, error) { return decodeRecord(b, base+int64(i)*step) },
			func(i int, r record, _ bool) bool {
				r.Seq = base + int64(i)*step
				more, ferr = fn(r)
				return more && ferr == nil
			})
		if err != nil || ferr != nil || !more {
			return cmp.Or(err, ferr)
		}
		from += n * step
	}
	return nil
}

// recNames returns the names of the n records from, from+step, ...
func recNames(from, n, step int64) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = recName(from + int64(i)*step)
	}
	return names
}

// sync reads the stored head into l (one Get). With a private index (a
// store without search) it also applies the records others wrote since
// to it; with the store's index, writers index their own records.
func (l *Layer) sync(ctx context.Context) error {
	h, ver, err := l.readHead(ctx)
	if err != nil {
		return err
	}
	if ver == l.hver && ver != storage.NoVersion {
		return nil
	}
	l.head, l.hver = h, ver
	if l.private {
		return l.catchUp(ctx)
	}
	return nil
}

// swapHead applies change to the stored head with compare-and-swap,
// catching up with other writers on conflict (see seqlog.Swap), and
// installs the head written. change returns false to give up (then the
// error is nil and the head unchanged).
func (l *Layer) swapHead(ctx context.Context, change func(h *head) bool) (bool, error) {
	h, v, ok, err := seqlog.Swap(ctx, &l.log, l.head, l.hver, change, func() (head, int64, error) {
		err := l.sync(ctx)
		return l.head, l.hver, err
	})
	if ok {
		l.head, l.hver = h, v
	}
	return ok, err
}

// appendRecord writes one record built by build for its sequence number
// and publishes it, and returns the record written. build runs after
// each catch-up, with the index brought up to the record before, so it
// decides on the latest state; it returns a record of no facts to give
// up writing (unless reset: a Reset record replaces every fact before
// it, and may hold none).
func (l *Layer) appendRecord(ctx context.Context, reset bool, build func(seq int64) (record, error)) (record, error) {
	for attempt := range l.cfg.MaxRetries {
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return record{}, fmt.Errorf("append: %w", err)
		}
		if err := l.current(ctx); err != nil {
			return record{}, fmt.Errorf("append: %w", err)
		}
		seq := l.head.Next
		r, err := build(seq)
		if err != nil || len(r.Facts) == 0 && !reset {
			return record{}, err
		}
		r.Version, r.Seq, r.Reset = FormatVersion, seq, reset
		mine, err := l.putRecord(ctx, r)
		if err != nil {
			return record{}, err
		}
		if mine {
			return r, nil
		}
	}
	return record{}, fmt.Errorf("append: gave up after %d attempts: %w", l.cfg.MaxRetries, storage.ErrConflict)
}

// putRecord writes r under its number, create-only, and publishes it. It
// reports whether r was written: false when another writer holds the
// number (its record is published then).
func (l *Layer) putRecord(ctx context.Context, r record) (bool, error) {
	_, err := l.log.Store.Put(ctx, l.log.Key(recName(r.Seq)), encode(r), storage.NoVersion)
	switch {
	case err == nil:
		return true, l.publish(ctx, r.Seq, r.Ledger)
	case !errors.Is(err, storage.ErrConflict):
		return false, fmt.Errorf("write record %d: %w", r.Seq, err)
	}
	if l.head.Next > r.Seq {
		return false, nil // published already
	}
	// Another writer's record, perhaps not published: publish it with
	// its ledger.
	theirs, err := l.readRecord(ctx, r.Seq)
	if err != nil {
		return false, err
	}
	return false, l.publish(ctx, r.Seq, theirs.Ledger)
}

// publish advances the head past record seq, whose ledger is g, catching
// up with other writers on the way. The caller indexes the record (see
// catchUp).
func (l *Layer) publish(ctx context.Context, seq int64, g *ledger) error {
	_, err := l.swapHead(ctx, func(h *head) bool {
		if h.Next > seq {
			return false // published by another writer
		}
		h.Next, h.Ledger = seq+1, g
		return true
	})
	if err != nil {
		return fmt.Errorf("publish record %d: %w", seq, err)
	}
	return nil
}

// rebase moves the head's Base up to seq, a published Reset record, so
// that readers start there, then deletes the records below it. A Base
// already at or past seq (another writer's Reset) is left.
func (l *Layer) rebase(ctx context.Context, seq int64) error {
	ok, err := l.swapHead(ctx, func(h *head) bool {
		if h.Base >= seq {
			return false
		}
		h.Base = seq
		return true
	})
	if err != nil {
		return fmt.Errorf("rebase: %w", err)
	}
	if !ok {
		return nil
	}
	return l.log.Purge(ctx, func(name string) bool {
		n := seqOf(name)
		return n >= 0 && n < seq
	})
}
