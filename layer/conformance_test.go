package layer_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
)

func TestConformanceFunc(t *testing.T) {
	t.Run("recalls", func(t *testing.T) {
		layertest.Run(t, func(*testing.T) layer.Layer {
			return layer.Func(layer.Spec{ID: "clock", Slot: 80}, func(_ context.Context, q layer.Query) ([]layer.Item, error) {
				return []layer.Item{{Text: "step " + strings.Repeat("I", q.Step%5)}}, nil
			})
		})
	})
	t.Run("nil recall", func(t *testing.T) {
		layertest.Run(t, func(*testing.T) layer.Layer { return layer.Func(layer.Spec{ID: "nothing"}, nil) })
	})
}

func TestConformanceText(t *testing.T) {
	layertest.Run(t, func(*testing.T) layer.Layer {
		return layer.Text(layer.Spec{ID: "instructions", Slot: 90}, "Be brief.")
	})
}

func TestConformanceCounter(t *testing.T) {
	layertest.Run(t, func(*testing.T) layer.Layer { return newCounter("counter", layer.SlotWorkingMemory) })
}

// notes is a second stateful layer for the suite: it keeps every user
// query it has seen, in memory only, and shares it with children on
// purpose.
type notes struct {
	mu   *sync.Mutex
	seen *[]string
}

func newNotes() notes { return notes{mu: &sync.Mutex{}, seen: new([]string)} }

func (n notes) Spec() layer.Spec { return layer.Spec{ID: "notes", Scope: layer.ScopeExecution} }

func (n notes) Init(context.Context, layer.Env) (layer.Layer, error) { return newNotes(), nil }

func (n notes) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(*n.seen) == 0 {
		return nil, nil
	}
	return []layer.Item{{Text: strings.Join(*n.seen, "\n")}}, nil
}

func (n notes) Store(_ context.Context, t layer.Turn) error {
	if t.Query == "" {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	*n.seen = append(*n.seen, t.Query)
	return nil
}

// OnSpawn shares the notes with the child on purpose.
func (n notes) OnSpawn(context.Context, layer.Env) (layer.Layer, error) { return n, nil }

func TestConformanceSharedSpawn(t *testing.T) {
	layertest.Options{SharedSpawn: true}.Run(t, func(*testing.T) layer.Layer { return newNotes() })
}
