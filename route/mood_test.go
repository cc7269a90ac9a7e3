package route_test

import (
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
)

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
