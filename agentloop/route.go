package agentloop

import (
	"context"

	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
)

// keeper returns the run's keeper.
func (r *run) keeper() *writepath.Keeper {
	return &writepath.Keeper{Stack: r.stack, Router: r.a.cfg.Router, Logger: r.a.cfg.Logger, Audit: r.tree.audit, Depth: r.depth, Recovered: r.a.recovered}
}

// callLayerTool runs fn of layer l, offered as name, for the model and
// audits what it changed: a write (layer.EffectWrite) goes through the
// router (see route.Router); an update or a forget is audited as it
// succeeds.
func (r *run) callLayerTool(ctx context.Context, l layer.Layer, fn layer.Function, name, args string) (string, error) {
	if fn.Effect == layer.EffectWrite {
		return r.memorize(ctx, l, fn, name, args)
	}
	out, err := r.stack.CallTool(ctx, name, args)
	if err != nil {
		return out, err
	}
	if e, ok := writepath.ToolEntry(l, fn, name, args, r.res.Steps, r.depth); ok {
		r.tree.audit.Add(e)
	}
	return out, nil
}

// memorize routes a call of a write tool and keeps the write where the
// router says, auditing the route and the write.
func (r *run) memorize(ctx context.Context, own layer.Layer, fn layer.Function, name, args string) (string, error) {
	raw, err := r.a.toolArgs(name, fn.Parameters, args)
	if err != nil {
		return "", err
	}
	return r.keeper().Memorize(ctx, own, fn.Name, raw, r.res.Steps, name)
}
