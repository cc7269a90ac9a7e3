package storage

import (
	"context"
	"errors"
	"fmt"
)

// MultiGetter is implemented by stores that can read several keys in one
// round trip: storage/sqlite (one statement), storage/redis (one
// pipeline) and storage/postgres (one statement), and the in-memory
// store. A caller that reads several records at once (the episodic and
// semantic logs) uses it, through [GetMany], when the store has it.
// Without it, GetMany calls Get once per key.
type MultiGetter interface {
	// GetMany returns the items stored under keys, in the order of keys,
	// each as Get returns it. A key that is not stored is left out: it
	// is not an error. A key may appear at most once, and every key must
	// be valid ([ValidateKey]): otherwise GetMany fails with
	// ErrInvalidKey before anything is read. The values belong to the
	// caller. An empty keys reads nothing and returns no items. A closed
	// store fails with ErrClosed, and an ended ctx with its error.
	// len(keys) has no limit: a backend that needs one splits the keys
	// into several round trips itself.
	GetMany(ctx context.Context, keys []string) ([]Item, error)
}

// GetMany returns the items of the keys that s stores, in the order of
// keys, missing keys left out: in one round trip when s is a
// [MultiGetter], else with one Get per key. It checks keys as
// MultiGetter.GetMany does, first ([CheckKeys]). Without the capability,
// an empty keys reads nothing, so it cannot report a closed store.
func GetMany(ctx context.Context, s Store, keys []string) ([]Item, error) {
	if mg, ok := s.(MultiGetter); ok {
		return mg.GetMany(ctx, keys)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("storage: get many: %w", err)
	}
	if err := CheckKeys(keys); err != nil {
		return nil, fmt.Errorf("storage: get many: %w", err)
	}
	return getEach(ctx, s, keys)
}

// getEach returns the items of the keys s stores, with one Get per key.
func getEach(ctx context.Context, s Store, keys []string) ([]Item, error) {
	items := make([]Item, 0, len(keys))
	for _, k := range keys {
		it, err := s.Get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// CheckKeys reports whether keys is a list every MultiGetter accepts:
// valid keys, each at most once. MultiGetters call it first; its error is
// ErrInvalidKey.
func CheckKeys(keys []string) error {
	seen := make(map[string]struct{}, len(keys))
	for i, k := range keys {
		if err := ValidateKey(k); err != nil {
			return fmt.Errorf("key %d: %w", i, err)
		}
		if _, dup := seen[k]; dup {
			return fmt.Errorf("key %d: %s appears twice: %w", i, Quote(k), ErrInvalidKey)
		}
		seen[k] = struct{}{}
	}
	return nil
}

// InKeyOrder returns the items of found (items keyed by their Key) in the
// order of keys, leaving out the keys found does not hold. Backends whose
// query returns rows in any order use it.
func InKeyOrder(keys []string, found map[string]Item) []Item {
	items := make([]Item, 0, len(found))
	for _, k := range keys {
		if it, ok := found[k]; ok {
			items = append(items, it)
		}
	}
	return items
}
