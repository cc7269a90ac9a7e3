package agentloop_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// recallSpy wraps a layer and records the items its bound form recalls.
type recallSpy struct {
	layer.Layer
	mu    *sync.Mutex
	items map[string][]layer.Item // by layer ID
}

func (s recallSpy) Unwrap() layer.Layer { return s.Layer }

func (s recallSpy) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	l, err := s.Layer.(layer.Initializer).Init(ctx, env)
	if err != nil {
		return nil, err
	}
	s.Layer = l
	return s, nil
}

func (s recallSpy) Store(ctx context.Context, t layer.Turn) error {
	return s.Layer.(layer.Storer).Store(ctx, t)
}

func (s recallSpy) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	items, err := s.Layer.Recall(ctx, q)
	s.mu.Lock()
	s.items[s.Spec().ID] = append(s.items[s.Spec().ID], items...)
	s.mu.Unlock()
	return items, err
}

// TestPlain08_OneTokenCounter: the counter handed to the agent is the one
// every built-in layer counts its items with. With one token per byte,
// the scratchpad, entity memory and the key-value layer each report
// Tokens equal to their block's length (they used to report bytes/4, or
// nothing).
func TestPlain08_OneTokenCounter(t *testing.T) {
	ctx := t.Context()
	pad, err := workingmemory.New(workingmemory.Config{Template: "plan: ship the counter"})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := entitymemory.New(entitymemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	kvl, err := kv.NewLayer(kv.LayerConfig{Render: renderKeys})
	if err != nil {
		t.Fatal(err)
	}
	spy := recallSpy{mu: new(sync.Mutex), items: map[string][]layer.Item{}}
	var layers []layer.Layer
	for _, l := range []layer.Layer{pad, ents, kvl} {
		s := spy
		s.Layer = l
		layers = append(layers, s)
	}
	fetch := agentloop.NewTool("fetch", "Fetch a page.", nil, func(ctx context.Context, in struct{}) (string, error) {
		return `{"id":"page-123","title":"About Us","slug":"about-us"}`, nil
	})
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if strings.Contains(r.System(), "page-123") {
			return agenttest.Text("done"), nil
		}
		return agenttest.Calls(agenttest.Call("fetch", struct{}{}), agenttest.Call("kv_set", map[string]string{"key": "k", "value": "v"})), nil
	})
	perByte := prompt.CounterFunc(func(s string) int { return len(s) })
	a := mustAgent(t, agentloop.Config{Model: model, Layers: layers, Tools: []agentloop.Tool{fetch, kvSet}, Counter: perByte})
	if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t", Input: "go"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{workingmemory.DefaultID, entitymemory.DefaultID, kv.DefaultLayerID} {
		items := spy.items[id]
		if len(items) == 0 {
			t.Errorf("%s recalled nothing, the test proves nothing for it", id)
		}
		for _, it := range items {
			if it.Tokens != len(it.Text) {
				t.Errorf("%s: item of %d bytes reports %d tokens, want %d (the agent's counter)", id, len(it.Text), it.Tokens, len(it.Text))
			}
		}
	}
}
