package layer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// counter is a small stateful layer that implements every optional
// interface: it counts Store calls, persists the count under its scope
// key with compare-and-swap, and provides "increment" and "peek".
type counter struct {
	spec layer.Spec

	// Bound to a run by Init or OnSpawn; nil in the template.
	store storage.Store
	key   string

	mu       sync.Mutex
	n        int
	version  int64
	closes   int
	spawnErr error // returned by OnSpawn when set
}

func newCounter(id string, slot int) *counter {
	return &counter{spec: layer.Spec{ID: id, Slot: slot, Scope: layer.ScopeThread}}
}

func (c *counter) Spec() layer.Spec { return c.spec }

func (c *counter) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	b := &counter{spec: c.spec, store: env.Store, key: storage.LayerKey(c.spec.ID, env.ScopeKey(c.spec.Scope), "state")}
	if env.Store == nil {
		return b, nil
	}
	it, err := env.Store.Get(ctx, b.key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, err
	default:
		n, err := strconv.Atoi(string(it.Value))
		if err != nil {
			return nil, fmt.Errorf("counter: stored state %q: %w", it.Value, err)
		}
		b.n, b.version = n, it.Version
	}
	return b, nil
}

func (c *counter) value() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *counter) set(ctx context.Context, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store != nil {
		v, err := c.store.Put(ctx, c.key, []byte(strconv.Itoa(n)), c.version)
		if err != nil {
			return err
		}
		c.version = v
	}
	c.n = n
	return nil
}

func (c *counter) Recall(_ context.Context, q layer.Query) ([]layer.Item, error) {
	return []layer.Item{{Text: fmt.Sprintf("%s=%d", c.spec.ID, c.value())}}, nil
}

func (c *counter) Store(ctx context.Context, _ layer.Turn) error {
	return c.set(ctx, c.value()+1)
}

func (c *counter) OnSpawn(_ context.Context, child layer.Env) (layer.Layer, error) {
	if c.spawnErr != nil {
		return nil, c.spawnErr
	}
	// The child starts from a copy and persists nowhere.
	return &counter{spec: c.spec, n: c.value()}, nil
}

func (c *counter) OnReturn(ctx context.Context, child layer.Layer) error {
	ch, ok := child.(*counter)
	if !ok {
		return fmt.Errorf("counter: child is %T", child)
	}
	return c.set(ctx, ch.value())
}

func (c *counter) Functions() []layer.Function {
	return []layer.Function{
		{
			Name:        "increment",
			Description: "Adds amount to the counter.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]}`),
			Call: func(ctx context.Context, args json.RawMessage) (string, error) {
				var a struct{ Amount *int }
				if err := json.Unmarshal(args, &a); err != nil || a.Amount == nil {
					return "", errors.New("amount must be an integer")
				}
				n := c.value() + *a.Amount
				if err := c.set(ctx, n); err != nil {
					return "", err
				}
				return strconv.Itoa(n), nil
			},
		},
		{
			Name: "peek",
			Call: func(context.Context, json.RawMessage) (string, error) { return strconv.Itoa(c.value()), nil },
		},
	}
}

func (c *counter) Snapshot(context.Context) (json.RawMessage, error) {
	return json.Marshal(map[string]int{"n": c.value()})
}

func (c *counter) Restore(ctx context.Context, data json.RawMessage) error {
	var v struct{ N *int }
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("counter: restore: %w", err)
	}
	if v.N == nil || *v.N < 0 {
		return errors.New("counter: restore: want {\"n\": a count >= 0}")
	}
	return c.set(ctx, *v.N)
}

func (c *counter) Clear(ctx context.Context) error { return c.set(ctx, 0) }

func (c *counter) Metrics() map[string]int64 {
	return map[string]int64{"entries": 1, "bytes": int64(len(strconv.Itoa(c.value())))}
}

func (c *counter) Close(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closes++
	return nil
}

// Interface guards.
var (
	_ layer.Initializer = (*counter)(nil)
	_ layer.Storer      = (*counter)(nil)
	_ layer.Spawner     = (*counter)(nil)
	_ layer.Returner    = (*counter)(nil)
	_ layer.Provider    = (*counter)(nil)
	_ layer.Snapshotter = (*counter)(nil)
	_ layer.Clearer     = (*counter)(nil)
	_ layer.Closer      = (*counter)(nil)
)
