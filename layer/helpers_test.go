package layer_test

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/layer"
)

// specsOf returns the specs of s's enabled layers in slot order.
func specsOf(s *layer.Stack) []layer.Spec {
	var out []layer.Spec
	for _, l := range s.Layers() {
		out = append(out, l.Spec())
	}
	return out
}

// liveLayer returns s's live layer with the given ID.
func liveLayer(s *layer.Stack, id string) (layer.Layer, bool) {
	return layer.Find[layer.Layer](s, id)
}

// readData reads the provided data name of s's layer id, the way code
// handed a stack does: through Find and Provides.
func readData(ctx context.Context, s *layer.Stack, id, name string) (any, error) {
	p, ok := layer.Find[layer.Provider](s, id)
	if !ok {
		return nil, fmt.Errorf("no provider %q", id)
	}
	for _, d := range p.Provides().Data {
		if d.Name == name {
			return d.Read(ctx)
		}
	}
	return nil, fmt.Errorf("layer %s: no data %q", id, name)
}

// toolNamed returns s's tool whose name or wire name is name.
func toolNamed(s *layer.Stack, name string) (layer.Tool, bool) {
	for _, t := range s.Tools() {
		if t.WireName == name || layer.ToolName(t.Layer, t.Function.Name) == name {
			return t, true
		}
	}
	return layer.Tool{}, false
}
