package layer_test

import (
	"testing"

	"github.com/memlayer/memlayer/layer"
)

func TestFind(t *testing.T) {
	text := layer.Text(layer.Spec{ID: "rules"}, "Be brief.")
	s, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{text}, Env: layer.Env{ThreadID: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := layer.Find[layer.Layer](s, "rules"); ok {
		t.Error("Find before Init found a layer")
	}
	if err := s.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if l, ok := layer.Find[layer.Layer](s, "rules"); !ok || l.Spec().ID != "rules" {
		t.Errorf("Find(rules) = %v, %v", l, ok)
	}
	if _, ok := layer.Find[layer.Storer](s, "rules"); ok {
		t.Error("Find returned a layer that is not a T")
	}
	if _, ok := layer.Find[layer.Layer](s, "missing"); ok {
		t.Error("Find found a missing ID")
	}
}
