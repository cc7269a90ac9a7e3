// Package looptest holds the test layers and helpers that the tests of
// agentloop and chainmemory share: a small real layer (Notes), a layer
// that proposes writes (Distiller), the four built-in memories, and an
// initialised stack.
package looptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/internal/toolargs"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// Notes is a small real layer: it remembers the IDs and titles of
// objects seen in tool results (like entity memory), and offers a "note"
// function (like a scratchpad). Its state persists under its scope key
// with compare-and-swap; resource scope is inherited by a child as a
// clone, thread scope is not.
type Notes struct {
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

// NewNotes returns a notes layer template with the given ID and scope.
func NewNotes(id string, scope layer.Scope) *Notes {
	return &Notes{id: id, scope: scope, closed: new(atomic.Int32)}
}

// NewProfile returns a notes layer that keeps only notes, like a user
// profile.
func NewProfile(id string, scope layer.Scope) *Notes {
	l := NewNotes(id, scope)
	l.notesOnly = true
	return l
}

func (l *Notes) Spec() layer.Spec {
	return layer.Spec{ID: l.id, Slot: layer.SlotEntities, Scope: l.scope, Budget: layer.Budget{Min: 50, Max: 1000}}
}

func (l *Notes) key() string {
	return storage.LayerKey(l.id, l.env.ScopeKey(l.scope), "state")
}

func (l *Notes) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	b := &Notes{id: l.id, scope: l.scope, closed: l.closed, notesOnly: l.notesOnly, env: env}
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

func (l *Notes) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
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

func (l *Notes) Store(ctx context.Context, t layer.Turn) error {
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

func (l *Notes) persist(ctx context.Context) error {
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

func (l *Notes) Functions() []layer.Function {
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

func (l *Notes) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	if l.scope != layer.ScopeResource {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := &Notes{id: l.id, scope: layer.ScopeExecution, closed: l.closed, notesOnly: l.notesOnly, env: child}
	c.state.Seen = append([]seen(nil), l.state.Seen...)
	c.state.Notes = append([]string(nil), l.state.Notes...)
	return c, nil
}

func (l *Notes) Snapshot(ctx context.Context) (json.RawMessage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return json.Marshal(l.state)
}

func (l *Notes) Restore(ctx context.Context, data json.RawMessage) error {
	var s notesState
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	l.mu.Lock()
	l.state = s
	l.mu.Unlock()
	return nil
}

func (l *Notes) Close(ctx context.Context) error {
	l.closed.Add(1)
	return nil
}

// Closed returns how many layers bound from this template were closed.
func (l *Notes) Closed() int32 { return l.closed.Load() }

// Interface guards.
var (
	_ layer.Initializer = (*Notes)(nil)
	_ layer.Storer      = (*Notes)(nil)
	_ layer.Provider    = (*Notes)(nil)
	_ layer.Spawner     = (*Notes)(nil)
	_ layer.Snapshotter = (*Notes)(nil)
	_ layer.Closer      = (*Notes)(nil)
)

// Distiller is a layer whose Store proposes writes (an layer.Proposer):
// at the step without tool calls, what propose returns for the turn.
type Distiller struct {
	Propose func(t layer.Turn) []layer.Write
	Broken  bool // Proposals panics
	mu      sync.Mutex
	pending []layer.Write
}

func (d *Distiller) Spec() layer.Spec { return layer.Spec{ID: "distiller", Slot: 90} }

func (d *Distiller) Recall(context.Context, layer.Query) ([]layer.Item, error) { return nil, nil }

func (d *Distiller) Store(_ context.Context, t layer.Turn) error {
	if len(t.ToolCalls) > 0 {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pending = append(d.pending, d.Propose(t)...)
	return nil
}

func (d *Distiller) Proposals() []layer.Write {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.Broken {
		panic("distiller broke")
	}
	out := d.pending
	d.pending = nil
	return out
}

// GateLayers returns the scratchpad, entity (capacity 1), semantic and
// episodic memories.
func GateLayers(t testing.TB) []layer.Layer {
	t.Helper()
	pad, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := entitymemory.New(entitymemory.Config{Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := semanticmemory.New(semanticmemory.Config{Spec: layer.Spec{Budget: layer.Budget{Max: 200}}})
	if err != nil {
		t.Fatal(err)
	}
	eps, err := episodicmemory.New(episodicmemory.Config{Spec: layer.Spec{Budget: layer.Budget{Max: 200}}})
	if err != nil {
		t.Fatal(err)
	}
	return []layer.Layer{pad, ents, sem, eps}
}

// NewInitStackOn is an initialised stack of layers in env, closed when
// the test ends.
func NewInitStackOn(t testing.TB, env layer.Env, layers ...layer.Layer) *layer.Stack {
	t.Helper()
	st, err := layer.NewStack(layer.StackConfig{Layers: layers, Env: env, ValidateArgs: toolargs.Validate})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(context.Background()) })
	return st
}
