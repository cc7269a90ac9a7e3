package layer_test

import (
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

// counterValue reads the value of s's counter layer id, the way code
// handed a stack does: through Find and the layer's own method.
func counterValue(s *layer.Stack, id string) (int, error) {
	c, ok := layer.Find[*counter](s, id)
	if !ok {
		return 0, fmt.Errorf("no counter %q", id)
	}
	return c.value(), nil
}

// toolNamed returns s's tool offered under name.
func toolNamed(s *layer.Stack, name string) (layer.Function, bool) {
	for _, t := range s.Tools() {
		if t.Name == name {
			return t, true
		}
	}
	return layer.Function{}, false
}
