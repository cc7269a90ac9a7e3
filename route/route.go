// Package route decides where a memory write goes.
//
// A write ([layer.Write]) is what the model asked a layer's write tool to
// keep, or what a [layer.Proposer] proposed. A [Router] sends it to a
// layer, by ID or by the sort of write the layer keeps
// ([layer.Keeper]), or refuses it. [Default] routes by the write's kind
// with a fixed table:
//
//	cfg := agentloop.Config{Model: llm, Layers: layers, Router: route.Default}
//
// A Router of one's own can weigh importance, novelty or anything else:
//
//	r := route.Func(func(ctx context.Context, w layer.Write) route.Route {
//		if w.Importance < 0.3 {
//			return route.Route{Reason: "not important enough to keep"}
//		}
//		return route.Default.Route(ctx, w)
//	})
package route

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/layer"
)

// Route is where a [Router] sends a write.
type Route struct {
	// Layer is the layer that keeps the write: a layer ID of the run's
	// stack, or a sort of write ([layer.KeepsSemantic], ...) for the
	// first layer that keeps that sort. For a sort the layer that
	// offered the write keeps, it is that layer. Empty refuses the
	// write.
	Layer string
	// Reason says why, for the audit (and, for a refusal, the model).
	Reason string
}

// A Router decides where a memory write goes, or refuses it. Route may
// be called concurrently (the tool calls of a step run concurrently); a
// panic refuses the write.
type Router interface {
	Route(ctx context.Context, w layer.Write) Route
}

// Func adapts a function to a [Router].
type Func func(ctx context.Context, w layer.Write) Route

// Route calls f.
func (f Func) Route(ctx context.Context, w layer.Write) Route { return f(ctx, w) }

// Default routes a write by its kind, with a fixed table and no model
// call:
//
//   - transient reasoning — reasoning, transient, thought, plan,
//     scratch — to the scratchpad;
//   - an actionable outcome — outcome, action, result, event, task — to
//     the episode log;
//   - a distilled durable fact — fact, preference, profile, decision,
//     note, instruction, goal, constraint — to semantic memory;
//
// and refuses any other kind, naming it and the kinds it knows.
var Default Router = Func(defaultRoute)

// table is Default's.
var table = map[string]Route{}

func init() {
	for _, k := range []string{"reasoning", "transient", "thought", "plan", "scratch"} {
		table[k] = Route{Layer: layer.KeepsScratchpad, Reason: "transient reasoning goes to the scratchpad"}
	}
	for _, k := range []string{"outcome", "action", "result", "event", "task"} {
		table[k] = Route{Layer: layer.KeepsEpisodic, Reason: "an actionable outcome goes to the episode log"}
	}
	for _, k := range []string{"fact", "preference", "profile", "decision", "note", "instruction", "goal", "constraint"} {
		table[k] = Route{Layer: layer.KeepsSemantic, Reason: "a durable fact goes to semantic memory"}
	}
}

func defaultRoute(_ context.Context, w layer.Write) Route {
	if r, ok := table[w.Kind]; ok {
		return r
	}
	return Route{Reason: fmt.Sprintf("kind %q is not one the default router knows: reasoning, transient, thought, plan, scratch (the scratchpad); "+
		"outcome, action, result, event, task (the episode log); fact, preference, profile, decision, note, instruction, goal, constraint (semantic memory)", w.Kind)}
}
