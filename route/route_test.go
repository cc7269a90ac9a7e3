package route_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
)

// Default sends each kind of its table to its sort of keeper, and
// refuses any other kind with a reason that names it and the kinds it
// knows.
func TestDefault(t *testing.T) {
	for kind, want := range map[string]string{
		"reasoning": layer.KeepsScratchpad, "plan": layer.KeepsScratchpad,
		"outcome": layer.KeepsEpisodic, "task": layer.KeepsEpisodic,
		"fact": layer.KeepsSemantic, "preference": layer.KeepsSemantic, "constraint": layer.KeepsSemantic,
	} {
		if got := route.Default.Route(t.Context(), layer.Write{Kind: kind, Text: "x"}); got.Layer != want || got.Reason == "" {
			t.Errorf("kind %q: %+v, want layer %q with a reason", kind, got, want)
		}
	}
	for _, kind := range []string{"color", "", "Fact"} {
		got := route.Default.Route(t.Context(), layer.Write{Kind: kind, Text: "x"})
		if got.Layer != "" || !strings.Contains(got.Reason, `"`+kind+`"`) || !strings.Contains(got.Reason, "preference") {
			t.Errorf("kind %q: %+v, want a refusal naming it and the known kinds", kind, got)
		}
	}
}

// Func adapts a function, which gets the write as it was offered.
func TestFunc(t *testing.T) {
	var seen layer.Write
	r := route.Func(func(_ context.Context, w layer.Write) route.Route {
		seen = w
		return route.Route{Layer: "journal", Reason: "mine"}
	})
	w := layer.Write{Kind: "note", Text: "tea", Importance: 0.7, Layer: "journal"}
	if got := r.Route(t.Context(), w); got != (route.Route{Layer: "journal", Reason: "mine"}) || seen != w {
		t.Errorf("Route = %+v with %+v, want the function's route of the write", got, seen)
	}
}
