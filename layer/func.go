package layer

import "context"

// Func returns a Layer with the given spec whose Recall calls recall. A nil
// recall recalls nothing. It is the adapter for stateless layers (static
// instructions, the current date) and the baseline in benchmarks.
func Func(spec Spec, recall func(ctx context.Context, q Query) ([]Item, error)) Layer {
	return funcLayer{spec: spec, recall: recall}
}

type funcLayer struct {
	spec   Spec
	recall func(ctx context.Context, q Query) ([]Item, error)
}

func (f funcLayer) Spec() Spec { return f.spec }

func (f funcLayer) Recall(ctx context.Context, q Query) ([]Item, error) {
	if f.recall == nil {
		return nil, nil
	}
	return f.recall(ctx, q)
}

// Text returns a Layer that always recalls the same text: instructions or
// reference material that belong in every prompt.
func Text(spec Spec, text string) Layer {
	items := []Item{{Text: text}}
	return Func(spec, func(context.Context, Query) ([]Item, error) { return items, nil })
}
