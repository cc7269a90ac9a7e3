package layertest_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
)

// A layer's own test runs the suite with a constructor for fresh layers.
// (Run needs a *testing.T, so this example only shows the call.)
func ExampleRun() {
	testConformance := func(t *testing.T) {
		layertest.Run(t, func(*testing.T) layer.Layer {
			return layer.Text(layer.Spec{ID: "instructions"}, "Be brief.")
		})
	}
	_ = testConformance
}

// Options adapts the suite to a layer that needs a specific way to get
// state, here a provided function instead of Store.
func ExampleOptions() {
	opts := layertest.Options{
		Populate: func(ctx context.Context, l layer.Layer) error {
			p, ok := layer.As[layer.Provider](l)
			if !ok {
				return fmt.Errorf("%s provides nothing", l.Spec().ID)
			}
			_, err := p.Functions()[0].Call(ctx, []byte(`{"amount":1}`))
			return err
		},
	}
	_ = opts // in a test: opts.Run(t, newLayer)
}

// Options.Turns gives the populate step turns that exercise a layer
// which learns nothing from the default turns: here a call of the
// layer's own convention, added to the first turn. Without such turns
// the suite fails the layer in its Populate subtest.
func ExampleOptions_turns() {
	turns := layertest.DefaultTurns()
	turns[0].ToolCalls = append(turns[0].ToolCalls, layer.ToolCall{
		ID: "call-note", Name: "keepNote", Arguments: `{"note":"launch on Friday"}`,
	})
	opts := layertest.Options{Turns: turns}
	_ = opts // in a test: opts.Run(t, newLayer)
}

func ExampleDefaultTurns() {
	for _, turn := range layertest.DefaultTurns() {
		fmt.Printf("step %d: %d tool calls, %d results, answer %q\n",
			turn.Step, len(turn.ToolCalls), len(turn.Results), turn.Response)
	}
	// Output:
	// step 0: 1 tool calls, 1 results, answer ""
	// step 1: 0 tool calls, 0 results, answer "Done: the page is now called Welcome."
}
