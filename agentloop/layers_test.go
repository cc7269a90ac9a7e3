package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/storage"
)

// notesLayer is a small real layer for the loop's tests: it remembers the
// IDs and titles of objects seen in tool results (like entity memory), and
// offers a "note" function (like a scratchpad). Its state persists under
// its scope key with compare-and-swap; resource scope is inherited by a
// child as a clone, thread scope is not.
type notesLayer struct {
	id     string
	scope  layer.Scope
	closed *atomic.Int32 // counts Close calls of bound layers
	// notesOnly: do not track objects seen in tool results.
	notesOnly bool

	// bound state
	mu    sync.Mutex
	env   layer.Env
	state notesState
	ver   int64
}

type notesState struct {
	Seen  []seen   `json:"seen"`
	Notes []string `json:"notes"`
}

type seen struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

func newNotes(id string, scope layer.Scope) *notesLayer {
	return &notesLayer{id: id, scope: scope, closed: new(atomic.Int32)}
}

// newProfile returns a notes layer that keeps only notes, like a user
// profile.
func newProfile(id string, scope layer.Scope) *notesLayer {
	l := newNotes(id, scope)
	l.notesOnly = true
	return l
}

func (l *notesLayer) Spec() layer.Spec {
	return layer.Spec{ID: l.id, Slot: layer.SlotEntities, Scope: l.scope, Budget: layer.Budget{Min: 50, Max: 1000}}
}

func (l *notesLayer) key() string {
	return storage.LayerKey(l.id, l.env.ScopeKey(l.scope), "state")
}

func (l *notesLayer) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	b := &notesLayer{id: l.id, scope: l.scope, closed: l.closed, notesOnly: l.notesOnly, env: env}
	it, err := env.Store.Get(ctx, b.key())
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return b, nil
	case err != nil:
		return nil, err
	}
	if err := json.Unmarshal(it.Value, &b.state); err != nil {
		return nil, err
	}
	b.ver = it.Version
	return b, nil
}

func (l *notesLayer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.state.Seen) == 0 && len(l.state.Notes) == 0 {
		return nil, nil
	}
	var b strings.Builder
	b.WriteString("[" + strings.ToUpper(l.id) + "]\n")
	for i := len(l.state.Seen) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "- %q (id: %s)\n", l.state.Seen[i].Title, l.state.Seen[i].ID)
	}
	for _, n := range l.state.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return []layer.Item{{Text: fence.Wrap("notes", b.String())}}, nil
}

func (l *notesLayer) Store(ctx context.Context, t layer.Turn) error {
	if l.notesOnly {
		return nil
	}
	l.mu.Lock()
	changed := false
	for _, r := range t.Results {
		if r.IsError {
			continue
		}
		var obj struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		}
		if json.Unmarshal([]byte(r.Content), &obj) == nil && obj.ID != "" {
			l.state.Seen = append(l.state.Seen, seen{ID: obj.ID, Title: obj.Title})
			changed = true
		}
	}
	l.mu.Unlock()
	if !changed {
		return nil
	}
	return l.persist(ctx)
}

func (l *notesLayer) persist(ctx context.Context) error {
	if l.scope == layer.ScopeExecution {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	data, _ := json.Marshal(l.state)
	v, err := l.env.Store.Put(ctx, l.key(), data, l.ver)
	if err != nil {
		return err
	}
	l.ver = v
	return nil
}

func (l *notesLayer) Functions() []layer.Function {
	return []layer.Function{{
		Name:        "note",
		Description: "Write a note to remember.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1}},"required":["text"],"additionalProperties":false}`),
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct{ Text string }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			l.mu.Lock()
			l.state.Notes = append(l.state.Notes, in.Text)
			l.mu.Unlock()
			return "noted", l.persist(ctx)
		},
	}}
}

func (l *notesLayer) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	if l.scope != layer.ScopeResource {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &notesLayer{id: l.id, scope: layer.ScopeExecution, closed: l.closed, notesOnly: l.notesOnly, env: child}
	c.state.Seen = append([]seen(nil), l.state.Seen...)
	c.state.Notes = append([]string(nil), l.state.Notes...)
	return c, nil
}

func (l *notesLayer) Snapshot(ctx context.Context) (json.RawMessage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return json.Marshal(l.state)
}

func (l *notesLayer) Restore(ctx context.Context, data json.RawMessage) error {
	var s notesState
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	l.mu.Lock()
	l.state = s
	l.mu.Unlock()
	return nil
}

func (l *notesLayer) Close(ctx context.Context) error {
	l.closed.Add(1)
	return nil
}

// Interface guards.
var (
	_ layer.Initializer = (*notesLayer)(nil)
	_ layer.Storer      = (*notesLayer)(nil)
	_ layer.Provider    = (*notesLayer)(nil)
	_ layer.Spawner     = (*notesLayer)(nil)
	_ layer.Snapshotter = (*notesLayer)(nil)
	_ layer.Closer      = (*notesLayer)(nil)
)
