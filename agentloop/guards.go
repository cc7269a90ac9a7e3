package agentloop

import (
	"github.com/memlayer/memlayer/layer"

	"github.com/memlayer/memlayer/history"
)

// layerIDs returns the IDs of every layer a run's stack can hold: the
// configured layers, the spawn layers and the history summary. The prompt
// compiler guards their block tags in every step, recalled or not (see
// prompt.Config.LayerIDs).
func (a *Agent) layerIDs() []string {
	ids := make([]string, 0, len(a.cfg.Layers)+len(a.cfg.SpawnLayers)+1)
	for _, ls := range [][]layer.Layer{a.cfg.Layers, a.cfg.SpawnLayers} {
		for _, l := range ls {
			if l != nil {
				ids = append(ids, l.Spec().ID)
			}
		}
	}
	return append(ids, history.SummaryLayerID)
}
