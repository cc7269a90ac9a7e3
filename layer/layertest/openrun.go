package layertest

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/layer"
)

// FirstRecall opens a run of tmpl in env and makes its first Recall of
// q, which must return one item. A benchmark of opening a run times it.
func FirstRecall(ctx context.Context, tmpl layer.Initializer, env layer.Env, q layer.Query) (layer.Layer, error) {
	l, err := tmpl.Init(ctx, env)
	if err != nil {
		return nil, err
	}
	items, err := l.Recall(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("layertest: first recall: %w", err)
	}
	if len(items) != 1 {
		return nil, fmt.Errorf("layertest: first recall: %d items, want 1", len(items))
	}
	return l, nil
}
