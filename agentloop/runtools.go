package agentloop

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/memlayer/memlayer/layer"
)

// ToolContext is the handle of one run of an agent (a run on a thread, or
// a child agent's run) that a tool is called in. It is how a tool reaches
// the current run's memory: a tool made with [NewContextTool] (or with
// Tool.CallContext set) gets the ToolContext of every call, and finds the
// run's layers through [ToolContext.Stack] (with layer.Find, or a layer
// package's helper: workingmemory.From and workingmemory.StateAs for the
// scratchpad, kv.From of package workingmemory/kv for the key-value
// memory) or [ToolContext.Layer]. In a child agent it is the child's run,
// so the tool acts on the child's layers (see ExampleToolContext_Stack).
//
// The layers of one agent are bound per run (each run's Init loads its
// own thread's, resource's or global state), so a tool must not keep
// layer state of its own across calls: it would serve every thread and
// user of the agent. A ToolContext is valid only during the call it was
// handed to; its methods are safe for concurrent use by the calls of one
// step.
type ToolContext struct {
	r *run
}

// ThreadID returns the run's thread ID (for a child agent, its own
// thread ID, derived from its parent's).
func (h *ToolContext) ThreadID() string { return h.r.threadID }

// ResourceID returns the run's resource ID, or "".
func (h *ToolContext) ResourceID() string { return h.r.resourceID }

// Depth returns 0 for a top-level run and parent depth + 1 for a child.
func (h *ToolContext) Depth() int { return h.r.depth }

// Stack returns the run's layer stack: its layers as bound to this run.
func (h *ToolContext) Stack() *layer.Stack { return h.r.stack }

// Layer returns the run's live layer with the given ID.
func (h *ToolContext) Layer(id string) (layer.Layer, bool) {
	return layer.Find[layer.Layer](h.r.stack, id)
}

// Spawn runs a child agent of this run for a subtask, as the spawn_agent
// tool does (see [Agent.Spawn]); in.ThreadID and in.ResourceID are
// ignored.
func (h *ToolContext) Spawn(ctx context.Context, in SpawnInput) (*Result, error) {
	return h.r.spawn(ctx, in)
}

// NewContextTool is [NewTool] for a tool that works on the current run:
// fn also gets the [ToolContext] the call belongs to. Nil parameters are
// inferred from In as NewTool does.
//
//	remember := agentloop.NewContextTool("remember", "Remember a fact.", nil,
//		func(ctx context.Context, run *agentloop.ToolContext, in struct{ Key, Value string }) (string, error) {
//			mem, err := kv.From(run.Stack(), "")
//			if err != nil {
//				return "", err
//			}
//			return "ok", kv.Set(mem, in.Key, in.Value)
//		})
func NewContextTool[In, Out any](name, description string, parameters json.RawMessage, fn func(ctx context.Context, run *ToolContext, in In) (Out, error)) Tool {
	t := Tool{
		Name:        name,
		Description: description,
		Parameters:  parameters,
		CallContext: typedCall(name, fn),
	}
	t.inferParams(reflect.TypeFor[In]())
	return t
}

// typedCall adapts a typed tool function: the arguments are decoded into
// an In, and the result is returned as is when it is a string and as JSON
// otherwise.
func typedCall[In, Out any](name string, fn func(ctx context.Context, run *ToolContext, in In) (Out, error)) func(context.Context, *ToolContext, json.RawMessage) (string, error) {
	return func(ctx context.Context, run *ToolContext, args json.RawMessage) (string, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return "", fmt.Errorf("%w: %w", layer.ErrInvalidArguments, err)
		}
		out, err := fn(ctx, run, in)
		if err != nil {
			return "", err
		}
		if s, ok := any(out).(string); ok {
			return s, nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return "", fmt.Errorf("agentloop: tool %s: encode result: %w", name, err)
		}
		return string(b), nil
	}
}
