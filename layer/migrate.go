package layer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// legacyGlobalScopeKey is the untyped scope key of ScopeGlobal before
// scope keys were typed.
const legacyGlobalScopeKey = "__global__"

// legacyScopeKey returns the untyped scope key under which memlayer kept
// scope's records in env before scope keys were typed, and whether
// migrateLegacy adopts them:
//
//   - ScopeThread: the thread ID, in a top-level run. A child agent's
//     records were never read again (every child has a new thread ID) and
//     are not adopted.
//   - ScopeResource: the resource ID. Without a resource, the untyped
//     key was the thread ID, the same key a resource of that name used:
//     such a record may be a user's memory, so a thread without a
//     resource adopts nothing (its resource scope starts empty) and the
//     record stays where the resource of that name adopts it.
//   - ScopeGlobal: "__global__".
//   - ScopeExecution: nothing (never persisted).
func legacyScopeKey(env Env, scope Scope) (string, bool) {
	switch scope {
	case ScopeResource:
		return env.ResourceID, env.ResourceID != ""
	case ScopeGlobal:
		return legacyGlobalScopeKey, true
	case ScopeExecution:
		return "", false
	default:
		child := env.RootThreadID != "" && env.RootThreadID != env.ThreadID
		return env.ThreadID, env.ThreadID != "" && !child
	}
}

// migrateLegacy moves a layer's records stored under the untyped scope
// key of scope in env (see legacyScopeKey) to its typed scope key
// ([Env.ScopeKey]), keeping their names, when the scope holds a record
// named "state" or "head" (what every built-in layer loads from; a layer
// of your own whose records have other names keeps a "state" or "head"
// record for its scope to be moved). [Stack] calls it before each
// layer's Init, so every layer's old records load, built-in or not. It
// returns how many records it moved.
//
// Each record is copied (to a key that must not exist yet) and then
// deleted if it is unchanged, records named "head" and "state" last, so
// a reader never finds a head without the records it names. Moving is
// safe to repeat and to run from several processes at once: a record
// already copied is only deleted. A record whose typed key already holds
// another value is not overwritten: it is set aside with
// storage.Quarantine under the typed key, so nothing is lost. Upgrade
// every process that shares a store together: a process of an earlier
// version keeps writing the untyped keys.
func migrateLegacy(ctx context.Context, store storage.Store, layerID string, env Env, scope Scope) (int, error) {
	legacy, ok := legacyScopeKey(env, scope)
	if !ok || store == nil {
		return 0, nil
	}
	prefix := storage.LegacyLayerPrefix(layerID, legacy)
	keys, err := legacyKeys(ctx, store, prefix)
	if err != nil {
		return 0, err
	}
	target := env.ScopeKey(scope)
	moved := 0
	for _, k := range keys {
		ok, err := moveLegacy(ctx, store, prefix, k, layerID, target)
		if err != nil {
			return moved, err
		}
		if ok {
			moved++
		}
	}
	return moved, nil
}

// legacyKeys lists the records under prefix, those a layer loads from
// last (see loadedLast); none when no record a layer loads from is there.
func legacyKeys(ctx context.Context, store storage.Store, prefix string) ([]string, error) {
	if found, err := legacyLoaded(ctx, store, prefix); !found || err != nil {
		return nil, err
	}
	keys, err := store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	loadedLast(keys, prefix)
	return keys, nil
}

// loadedLast orders the keys under prefix so that the records a layer
// loads from, "head" and "state", come last; the others keep their order.
func loadedLast(keys []string, prefix string) {
	last := func(k string) bool {
		name := strings.TrimPrefix(k, prefix)
		return name == "head" || name == "state"
	}
	slices.SortStableFunc(keys, func(a, b string) int {
		switch la, lb := last(a), last(b); {
		case la == lb:
			return 0
		case la:
			return 1
		}
		return -1
	})
}

// legacyLoaded reports whether a record a layer loads from is under
// prefix: "state" (scratchpad, key-value and entity memory) or "head"
// (the episodic and semantic logs). Two point reads cost less than
// listing the prefix on every run, which costs what the store's size
// does on some backends.
func legacyLoaded(ctx context.Context, store storage.Store, prefix string) (bool, error) {
	for _, name := range []string{"state", "head"} {
		_, err := store.Get(ctx, prefix+storage.Escape(name))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return false, fmt.Errorf("layer: migrate %s: %w", storage.Quote(prefix), err)
		}
	}
	return false, nil
}

// moveLegacy copies the record k under prefix to its typed key under
// target, then deletes it if it is unchanged. It reports whether it moved
// the record. A typed key that already holds another value keeps it, and
// the old record is set aside with storage.Quarantine.
func moveLegacy(ctx context.Context, store storage.Store, prefix, k, layerID, target string) (bool, error) {
	name, err := storage.Unescape(strings.TrimPrefix(k, prefix))
	if err != nil {
		return false, nil // not a key of this layout
	}
	it, err := store.Get(ctx, k)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil // moved by another process meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("layer: migrate %s: %w", storage.Quote(k), err)
	}
	to := storage.LayerKey(layerID, target, name)
	if copied, err := copyLegacy(ctx, store, it, k, to, layerID, target); !copied || err != nil {
		return false, err
	}
	err = store.Delete(ctx, k, it.Version)
	if err != nil && !lostRace(err) {
		return false, fmt.Errorf("layer: migrate %s: delete: %w", storage.Quote(k), err)
	}
	return true, nil
}

// copyLegacy copies the record it, at k, to its typed key to. It reports
// false when to holds another value already: the record was set aside
// instead (see setAsideIfDiffers), and stays where it is.
func copyLegacy(ctx context.Context, store storage.Store, it storage.Item, k, to, layerID, target string) (bool, error) {
	_, err := store.Put(ctx, to, it.Value, storage.NoVersion)
	switch {
	case errors.Is(err, storage.ErrConflict):
		aside, err := setAsideIfDiffers(ctx, store, it, to, layerID, target)
		if err != nil {
			return false, fmt.Errorf("layer: migrate %s: %w", storage.Quote(k), err)
		}
		return !aside, nil
	case err != nil:
		return false, fmt.Errorf("layer: migrate %s to %s: %w", storage.Quote(k), storage.Quote(to), err)
	}
	return true, nil
}

// setAsideIfDiffers sets the old record it aside with
// storage.Quarantine when its typed key to holds another value, and
// reports whether the record differs. A typed key it cannot read is
// taken to hold the same value.
func setAsideIfDiffers(ctx context.Context, store storage.Store, it storage.Item, to, layerID, target string) (bool, error) {
	cur, err := store.Get(ctx, to)
	if err != nil || bytes.Equal(cur.Value, it.Value) {
		return false, nil
	}
	// Both exist and differ: keep the old one aside.
	if _, err := storage.Quarantine(ctx, store, it, layerID, target, time.Now()); err != nil && !lostRace(err) {
		return true, err
	}
	return true, nil
}

// lostRace reports whether err says another process changed or deleted
// the record first.
func lostRace(err error) bool {
	return errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound)
}
