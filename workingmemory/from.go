package workingmemory

import (
	"encoding/json"
	"fmt"

	"github.com/memlayer/memlayer/layer"
)

// From returns the scratchpad of the run that stack belongs to: the live
// layer with the given ID ("" means DefaultID), as bound to the run (in a
// child agent, the child's scratchpad). It is how code running inside a
// run, such as an agentloop tool made with agentloop.NewContextTool, reads
// and updates the run's working memory. It fails when the stack has no
// such layer (or it is disabled) or the layer is not a scratchpad.
func From(stack *layer.Stack, id string) (*Layer, error) {
	if id == "" {
		id = DefaultID
	}
	l, ok := layer.Find[*Layer](stack, id)
	if !ok {
		return nil, fmt.Errorf("workingmemory: this run has no scratchpad layer %q", id)
	}
	return l, nil
}

// StateAs decodes l's current state into a T, as encoding/json decodes
// the state's JSON: a struct of the schema's fields, a map, or a string
// for a free-text scratchpad. The result shares nothing with the layer.
// On a template it fails with an error wrapping [layer.ErrTemplate].
func StateAs[T any](l *Layer) (T, error) {
	var v T
	if err := l.unbound("StateAs"); err != nil {
		return v, err
	}
	if err := json.Unmarshal(l.cur.Load().enc, &v); err != nil {
		return v, fmt.Errorf("workingmemory: state as %T: %w", v, err)
	}
	return v, nil
}
