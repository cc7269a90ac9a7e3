package entitymemory_test

import (
	"testing"

	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
)

// TestConformance runs the layer contract's suite against the entity
// memory, thread- and resource-scoped (issue 10: every built-in layer
// runs it).
func TestConformance(t *testing.T) {
	for name, cfg := range map[string]entitymemory.Config{
		"thread":   {},
		"resource": {Spec: layer.Spec{Scope: layer.ScopeResource}},
		"ttl":      {Capacity: 2, TTL: 1 << 40},
	} {
		t.Run(name, func(t *testing.T) {
			layertest.Run(t, func(t *testing.T) layer.Layer {
				l, err := entitymemory.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return l
			})
		})
	}
}
