package episodicmemory

import (
	"maps"
	"strings"
	"testing"
)

// TestTurnLine: a turn's digest line is its reference, step, quoted
// request, an arrow and the answer, with no other framing; and a turn's
// line of the longer form an index written earlier holds
// (`turn: "…" → answered: …`) still reads as a turn: its importance is
// a turn's, and the task profile learnt from it is the one learnt from
// the lean line.
func TestTurnLine(t *testing.T) {
	e := Episode{Ref: "turn-9", Kind: KindTurn, Step: 4, Query: `Create the "About" page`, Result: "Done: page-123 is live."}
	lean := e.Digest()
	if want := `[turn-9] step 4 "Create the \"About\" page" → Done: page-123 is live.`; lean != want {
		t.Fatalf("digest line %q, want %q", lean, want)
	}
	older := `[turn-9] step 4 turn: "Create the \"About\" page" → answered: Done: page-123 is live.`
	for _, line := range []string{lean, older} {
		if got := importance(line); got != ImportanceTurn {
			t.Errorf("importance of %q is %v, want a turn's %v", line, got, ImportanceTurn)
		}
	}
	var fromEpisode, fromLean, fromOlder tracker
	fromEpisode.learn(&e)
	fromLean.learnLine(lean)
	fromOlder.learnLine(older)
	for name, tr := range map[string]tracker{"lean": fromLean, "older": fromOlder} {
		if len(tr.words) == 0 || !maps.Equal(tr.words, fromEpisode.words) || !maps.Equal(tr.ids, fromEpisode.ids) {
			t.Errorf("%s line: learnt %v %v, from the episode %v %v", name, tr.words, tr.ids, fromEpisode.words, fromEpisode.ids)
		}
	}
	// A tool's line is not a turn's, whatever its tool's name says.
	call := Episode{Ref: "turn-3", Kind: KindTool, Tool: "turn", Arguments: `{"q":"a"}`, Result: "ok"}
	if line := call.Digest(); importance(line) != ImportanceTool || strings.Contains(line, `step 0 "`) {
		t.Errorf("tool line %q: importance %v", line, importance(line))
	}
}
