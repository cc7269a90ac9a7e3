package layer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// NewStack and Spawn's extra layers are checked by the same rules, and
// each refusal is an ErrInvalidSpec that says what is wrong: a nil layer
// (by its index), an invalid spec, an ID already in the stack (the
// parent's, for an extra layer) or given twice.
func TestInvalidLayersSayWhy(t *testing.T) {
	txt := func(id string) layer.Layer { return layer.Text(layer.Spec{ID: id}, id) }
	parent := initStack(t, layer.StackConfig{Layers: []layer.Layer{txt("own")}})
	for _, tt := range []struct {
		name   string
		layers []layer.Layer
		want   string
	}{
		{"nil", []layer.Layer{txt("a"), nil}, "layer 1 is nil"},
		{"invalid spec", []layer.Layer{txt("Not Kebab")}, `layer id "Not Kebab"`},
		{"twice", []layer.Layer{txt("x"), txt("x")}, `duplicate layer id "x"`},
	} {
		_, err := layer.NewStack(layer.StackConfig{Layers: tt.layers})
		if !errors.Is(err, layer.ErrInvalidSpec) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewStack with %s: %v, want ErrInvalidSpec saying %q", tt.name, err, tt.want)
		}
		_, err = parent.Spawn(t.Context(), layer.Env{ThreadID: "c"}, tt.layers...)
		if !errors.Is(err, layer.ErrInvalidSpec) || !strings.Contains(err.Error(), "spawn") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Spawn with %s: %v, want ErrInvalidSpec saying spawn and %q", tt.name, err, tt.want)
		}
	}
	_, err := parent.Spawn(t.Context(), layer.Env{ThreadID: "c"}, txt("own"))
	if !errors.Is(err, layer.ErrInvalidSpec) || !strings.Contains(err.Error(), `duplicate layer id "own"`) {
		t.Errorf("Spawn with the parent's ID: %v, want ErrInvalidSpec naming it", err)
	}
}
