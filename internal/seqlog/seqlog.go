// Package seqlog is the storage side of the episodic and semantic
// layers' logs: numbered records under a layer's scope prefix
// (storage.LayerPrefix), each written once, and one head record
// ([HeadName]), the only one ever rewritten, always with
// compare-and-swap. A layer keeps its own formats (what its head and
// records hold); this package reads them, sets unreadable ones aside
// with storage.Quarantine, and runs the compare-and-swap retries.
//
// A Log is not safe for concurrent use: each layer calls it with its
// own lock held.
package seqlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// HeadName names the head record.
const HeadName = "head"

// Log is one layer's log in one scope.
type Log struct {
	Store   storage.Store
	LayerID string
	Scope   string // the scope key
	// Pkg prefixes the messages logged ("episodicmemory").
	Pkg string
	// ErrVersion is the layer's error for a record written by a newer
	// version of it: such a record is an error, never quarantined.
	ErrVersion error
	// MaxRetries bounds the attempts of one compare-and-swap.
	MaxRetries int
	// Logger reports the records quarantined; Now names their keys.
	Logger *slog.Logger
	Now    func() time.Time
}

// Key returns the key of the record name.
func (g *Log) Key(name string) string { return storage.LayerKey(g.LayerID, g.Scope, name) }

// names returns the names of the records stored in the log (the head
// and quarantined records included). A name's key is Key(name):
// storage.Unescape accepts only the one escaped form of a name.
func (g *Log) names(ctx context.Context) ([]string, error) {
	prefix := storage.LayerPrefix(g.LayerID, g.Scope)
	keys, err := g.Store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	var names []string
	for _, k := range keys {
		if name, err := storage.Unescape(strings.TrimPrefix(k, prefix)); err == nil {
			names = append(names, name)
		}
	}
	return names, nil
}

// quarantine sets an unreadable record aside and reports it. A record
// rewritten or removed meanwhile (ErrConflict or ErrNotFound on the
// delete) is left to its writer.
func (g *Log) quarantine(ctx context.Context, it storage.Item, cause error) error {
	qkey, err := storage.Quarantine(ctx, g.Store, it, g.LayerID, g.Scope, g.Now())
	if err != nil && !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("quarantine %s: %w", storage.Quote(it.Key), err)
	}
	g.Logger.LogAttrs(ctx, slog.LevelWarn, g.Pkg+": stored record quarantined",
		slog.String("layer", g.LayerID), slog.String("key", it.Key),
		slog.String("quarantine", qkey), slog.Any("error", cause))
	return nil
}

// Read returns record name as decode reads it, and false when it is
// missing or unreadable: then it is quarantined. A record decode fails
// with ErrVersion is an error, and stays stored.
func Read[T any](ctx context.Context, g *Log, name string, decode func([]byte) (T, error)) (T, bool, error) {
	var zero T
	it, err := g.Store.Get(ctx, g.Key(name))
	if errors.Is(err, storage.ErrNotFound) {
		return zero, false, nil
	}
	if err != nil {
		return zero, false, fmt.Errorf("read %s: %w", name, err)
	}
	return decodeItem(ctx, g, name, it, decode)
}

// ReadMany returns the records names (each at most once) as Read returns
// them, read in one round trip of the store (storage.GetMany):
// decode(i, value) decodes the record names[i]. A record that is missing
// or unreadable (then quarantined) is the zero T. A record decode fails
// with ErrVersion is an error, and stays stored.
func ReadMany[T any](ctx context.Context, g *Log, names []string, decode func(i int, b []byte) (T, error)) ([]T, error) {
	recs := make([]T, len(names))
	err := ReadEach(ctx, g, names, decode, func(i int, v T, _ bool) bool {
		recs[i] = v
		return true
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// ReadEach reads the records names (each at most once) in one round trip
// of the store (storage.GetMany), then hands them to each in the order of
// names, as Read returns them: the record decode(i, value) makes of
// names[i] and true, or the zero T and false when it is missing or
// unreadable (then quarantined). It stops when each returns false: the
// records after are neither decoded nor quarantined. A record decode
// fails with ErrVersion is an error, and stays stored.
func ReadEach[T any](ctx context.Context, g *Log, names []string, decode func(i int, b []byte) (T, error), each func(i int, v T, ok bool) bool) error {
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = g.Key(name)
	}
	items, err := storage.GetMany(ctx, g.Store, keys)
	if err != nil {
		return fmt.Errorf("read %d records: %w", len(names), err)
	}
	for i, name := range names {
		var v T
		ok := len(items) > 0 && items[0].Key == keys[i]
		if ok {
			v, ok, err = decodeItem(ctx, g, name, items[0], func(b []byte) (T, error) { return decode(i, b) })
			if err != nil {
				return err
			}
			items = items[1:]
		}
		if !each(i, v, ok) {
			return nil
		}
	}
	return nil
}

// decodeItem returns the stored record it, named name, as decode reads
// it, and false when it is unreadable: then it is quarantined. A record
// decode fails with ErrVersion is an error.
func decodeItem[T any](ctx context.Context, g *Log, name string, it storage.Item, decode func([]byte) (T, error)) (T, bool, error) {
	var zero T
	v, err := decode(it.Value)
	if errors.Is(err, g.ErrVersion) {
		return zero, false, fmt.Errorf("read %s: %w", name, err)
	}
	if err != nil {
		return zero, false, g.quarantine(ctx, it, err)
	}
	return v, true, nil
}

// ReadHead returns the stored head and its version: fresh(nil) and
// storage.NoVersion when there is none. An unreadable head is
// quarantined and replaced, create-only, by fresh(names), given the
// names of the records stored, so that the new head numbers records
// above all of them and none is overwritten; then the head is read again
// (ours or another writer's).
func ReadHead[H any](ctx context.Context, g *Log, decode func([]byte) (H, error), fresh func(names []string) H) (H, int64, error) {
	var zero H
	for range g.MaxRetries {
		it, err := g.Store.Get(ctx, g.Key(HeadName))
		if errors.Is(err, storage.ErrNotFound) {
			return fresh(nil), storage.NoVersion, nil
		}
		if err != nil {
			return zero, 0, fmt.Errorf("read head: %w", err)
		}
		h, err := decode(it.Value)
		if err == nil {
			return h, it.Version, nil
		}
		if errors.Is(err, g.ErrVersion) {
			return zero, 0, fmt.Errorf("read head %s: %w", storage.Quote(it.Key), err)
		}
		if err := replaceHead(ctx, g, it, err, fresh); err != nil {
			return zero, 0, err
		}
	}
	return zero, 0, fmt.Errorf("read head: rewritten during quarantine %d times: %w", g.MaxRetries, storage.ErrConflict)
}

// replaceHead quarantines the unreadable head it (cause: why it is) and
// writes fresh(names of the records stored) in its place, create-only:
// another writer's head may have taken it already.
func replaceHead[H any](ctx context.Context, g *Log, it storage.Item, cause error, fresh func(names []string) H) error {
	if err := g.quarantine(ctx, it, cause); err != nil {
		return err
	}
	names, err := g.names(ctx)
	if err != nil {
		return fmt.Errorf("read head: %w", err)
	}
	if _, err := g.Store.Put(ctx, g.Key(HeadName), encode(fresh(names)), storage.NoVersion); err != nil && !errors.Is(err, storage.ErrConflict) {
		return fmt.Errorf("write head: %w", err)
	}
	return nil
}

// Swap writes the head change makes of cur, with compare-and-swap on its
// version ver, and returns it with its new version; change returns false
// to write nothing (then Swap returns false and a nil error). After a
// lost race, catchUp brings the caller's view up to the stored head and
// returns that head and its version, and change runs again on it. The
// caller installs the head written.
func Swap[H any](ctx context.Context, g *Log, cur H, ver int64, change func(*H) bool, catchUp func() (H, int64, error)) (H, int64, bool, error) {
	// took is how long the last lost attempt was exposed to the race,
	// from its write to the end of its catch-up: the wait scales with it
	// (storage.WaitRetryAfter).
	var took time.Duration
	for attempt := range g.MaxRetries {
		h := cur
		if !change(&h) {
			return h, ver, false, nil
		}
		if err := storage.WaitRetryAfter(ctx, attempt, took); err != nil {
			return h, ver, false, fmt.Errorf("write head: %w", err)
		}
		start := time.Now()
		// Encoding &h, not h, saves an allocation: h is on the heap
		// already, as change takes its address.
		v, err := g.Store.Put(ctx, g.Key(HeadName), encode(&h), ver)
		if err == nil {
			return h, v, true, nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return h, ver, false, fmt.Errorf("write head: %w", err)
		}
		if cur, ver, err = catchUp(); err != nil {
			return cur, ver, false, err
		}
		took = time.Since(start)
	}
	return cur, ver, false, fmt.Errorf("write head: gave up after %d attempts: %w", g.MaxRetries, storage.ErrConflict)
}

// Purge deletes the records whose names drop selects.
func (g *Log) Purge(ctx context.Context, drop func(name string) bool) error {
	names, err := g.names(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if drop(name) {
			if err := g.Store.Delete(ctx, g.Key(name), storage.AnyVersion); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("seqlog: encode: " + err.Error()) // a head holds numbers only
	}
	return b
}
