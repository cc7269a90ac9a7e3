package episodicmemory_test

import (
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
)

// TestEpisodic04_Conformance runs the layer contract's suite, thread-
// and resource-scoped, and with a compaction at every step. A snapshot of
// a stored log names its records, so it is restored from the same store.
func TestEpisodic04_Conformance(t *testing.T) {
	for name, cfg := range map[string]episodicmemory.Config{
		"thread":    {},
		"resource":  {Spec: layer.Spec{Scope: layer.ScopeResource}},
		"execution": {Spec: layer.Spec{Scope: layer.ScopeExecution}},
		"compact":   {CompactAfter: 1, Retain: 1},
	} {
		t.Run(name, func(t *testing.T) {
			layertest.Options{StoreSnapshots: name != "execution"}.Run(t, func(t *testing.T) layer.Layer {
				l, err := episodicmemory.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				return l
			})
		})
	}
}
