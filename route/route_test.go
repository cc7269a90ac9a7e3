package route_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
)

// Default sends each kind of its table to its sort of keeper, whatever
// its spelling, and routes any other kind by its text, never refusing it.
func TestDefault(t *testing.T) {
	for kind, want := range map[string]string{
		"reasoning": layer.KeepsScratchpad, "plan": layer.KeepsScratchpad, "thought": layer.KeepsScratchpad,
		"outcome": layer.KeepsEpisodic, "task": layer.KeepsEpisodic, "tool_result": layer.KeepsEpisodic, "ToolResult": layer.KeepsEpisodic,
		"tool-result": layer.KeepsEpisodic, "metric": layer.KeepsEpisodic, "observation": layer.KeepsEpisodic, "summary": layer.KeepsEpisodic,
		"action": layer.KeepsEpisodic,
		"fact":   layer.KeepsSemantic, "Fact": layer.KeepsSemantic, "preference": layer.KeepsSemantic, "constraint": layer.KeepsSemantic,
		"skill": layer.KeepsSemantic, "Skills": layer.KeepsSemantic, "note": layer.KeepsSemantic,
	} {
		if got := route.Default.Route(t.Context(), layer.Write{Kind: kind, Text: "x"}); got.Layer != want || got.Reason == "" {
			t.Errorf("kind %q: %+v, want layer %q with a reason", kind, got, want)
		}
	}
	for _, c := range []struct{ kind, text, want string }{
		{"color", "green", layer.KeepsSemantic},
		{"", "", layer.KeepsSemantic},
		{"pattern", "Publish a page: cms_getPage then cms_updatePage(status=published).", layer.KeepsSemantic},
		{"todo", "Next I will check the draft, then maybe ask the user.", layer.KeepsScratchpad},
		{"log", "cms_updatePage failed yesterday with error 409.", layer.KeepsEpisodic},
		{"user_message", "Could you remember that I prefer dark mode?", layer.KeepsSemantic},
		{"user_message", "Publish the pricing page now.", layer.KeepsEpisodic},
	} {
		got := route.Default.Route(t.Context(), layer.Write{Kind: c.kind, Text: c.text})
		if got.Layer != c.want || !strings.Contains(got.Reason, "text") && !strings.Contains(got.Reason, "message") {
			t.Errorf("kind %q %q: %+v, want %q routed by its text", c.kind, c.text, got, c.want)
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

// TestNormalize_Spellings reads the spellings a model gives a kind.
func TestNormalize_Spellings(t *testing.T) {
	for in, want := range map[string]string{
		"ToolResult": route.KindToolResult, "TOOL_RESULT": route.KindToolResult, "tool-result": route.KindToolResult,
		"Tool Results": route.KindToolResult, "SKILL": route.KindSkill, "skills": route.KindSkill,
		"summaries": route.KindSummary, "Summaries": route.KindSummary, "userMessage": route.KindUserMessage,
		"pattern": "pattern", "queries": "queries",
	} {
		if got := route.Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDefault_UserMessageMood routes a user's messages by their mood: a
// statement lasts unless it happened, a request lasts only with a
// standing wish or a statement of the writer's own.
func TestDefault_UserMessageMood(t *testing.T) {
	for text, want := range map[string]string{
		"I cycle to work.":                            layer.KeepsSemantic,
		"The boiler in the attic is a Vaillant.":      layer.KeepsSemantic,
		"I go to the pool at 07:30.":                  layer.KeepsSemantic,
		"I just replaced the boiler filter.":          layer.KeepsEpisodic,
		"Switch off the boiler.":                      layer.KeepsEpisodic,
		"Where is the boiler manual?":                 layer.KeepsEpisodic,
		"Switch off the boiler at night from now on.": layer.KeepsSemantic,
		"Plan my rides in the morning, I work late.":  layer.KeepsSemantic,
		"Could you remember that I cycle to work?":    layer.KeepsSemantic,
		"I'd like a new route for tomorrow's ride.":   layer.KeepsEpisodic,
	} {
		got := route.Default.Route(t.Context(), layer.Write{Kind: route.KindUserMessage, Text: text, Importance: layer.DefaultImportance})
		if got.Layer != want {
			t.Errorf("%q goes to %q (%s), want %q", text, got.Layer, got.Reason, want)
		}
	}
}

// TestByContent_ProcedureNeedsSteps reads a procedure only where it has
// steps in order.
func TestByContent_ProcedureNeedsSteps(t *testing.T) {
	for text, want := range map[string]string{
		"Steps walked: 9,800 today.":                                   layer.KeepsEpisodic,
		"To renew a permit, fill in the form first, then pay the fee.": layer.KeepsSemantic,
		"Replace the filter in the boiler.":                            layer.KeepsScratchpad,
	} {
		if got := route.ByContent(layer.Write{Kind: "misc", Text: text}); got.Layer != want {
			t.Errorf("%q goes to %q (%s), want %q", text, got.Layer, got.Reason, want)
		}
	}
}
