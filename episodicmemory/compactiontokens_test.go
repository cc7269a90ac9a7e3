package episodicmemory

import (
	"context"
	"testing"
	"time"

	"github.com/memlayer/memlayer/internal/convtest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// TestCompactionTokens logs an authored conversation (the 50-turn CMS
// conversation of testdata/conversations/cms50.json, whose steps call
// tools, and the ten text-only conversations of testdata/recalleval)
// step by step, compacting often (CompactAfter 8), and measures at every
// compaction the tokens of the log's view (the digests, counted as
// recall shows them, and the raw episodes not yet folded, counted as the
// head counts them): after the step, against before it with the step's
// new episodes. Folding a tool result into its digest line shrinks the
// view; a turn of text only has a digest line longer than its request
// and answer (its reference, step and quotes frame them), so a log of
// short chat turns grows when it is folded. It logs the largest ratio
// of each kind of conversation, and checks that the CMS conversation's
// never passes 1.05 and the text-only ones' 1.25 (1.232 measured).
func TestCompactionTokens(t *testing.T) {
	convs := map[string][]layer.Turn{"cms50": cms50Turns(t)}
	for name, turns := range recallevalTurns(t) {
		convs[name] = turns
	}
	worstText, textSteps := 0.0, 0
	for name, turns := range convs {
		worst, steps := compactionRatios(t, turns)
		if name == "cms50" {
			t.Logf("FIGURE episodic compaction, cms50: %d compactions, the largest after/before token ratio of the view %.3f", steps, worst)
			if worst > 1.05 {
				t.Errorf("cms50: a compaction grew the view's tokens by %.1f%%", 100*(worst-1))
			}
			continue
		}
		worstText, textSteps = max(worstText, worst), textSteps+steps
	}
	t.Logf("FIGURE episodic compaction, the recalleval conversations (text only): %d compactions, the largest after/before token ratio of the view %.3f", textSteps, worstText)
	if worstText > 1.25 {
		t.Errorf("text only: a compaction grew the view's tokens by %.1f%%", 100*(worstText-1))
	}
}

// compactionRatios logs turns in a new layer and returns the largest
// ratio of the view's tokens after a compacting step to those before it
// plus the step's new episodes, and how many steps compacted.
func compactionRatios(t *testing.T, turns []layer.Turn) (float64, int) {
	t.Helper()
	ctx := context.Background()
	tmpl, err := New(Config{CompactAfter: 8, MaxDigests: 1 << 20, Now: func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	bl, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", ResourceID: "r", Store: storage.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	l := bl.(*Layer)
	worst, steps := 0.0, 0
	before, digests := 0, 0
	for _, turn := range turns {
		appended := l.appended
		if err := l.Store(ctx, turn); err != nil {
			t.Fatal(err)
		}
		after, n := viewTokens(t, l)
		fresh := 0
		for i := len(l.recent) - int(l.appended-appended); i < len(l.recent); i++ {
			fresh += rawTokens(&l.recent[i])
		}
		if n > digests {
			steps++
			worst = max(worst, float64(after)/float64(before+fresh))
		}
		before, digests = after, n
	}
	return worst, steps
}

// viewTokens returns the tokens of l's view (its digests as recall
// counts them, and its raw episodes as the head counts them) and how
// many digests it holds.
func viewTokens(t *testing.T, l *Layer) (int, int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ensureDigests(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, d := range l.digests {
		n += layer.Query{}.Count(d.Text)
	}
	for i := range l.recent {
		n += rawTokens(&l.recent[i])
	}
	return n, len(l.digests)
}

// cms50Turns returns the steps of the 50-turn CMS conversation as the
// agent logs them, each reference replaced by the ID it resolves to.
func cms50Turns(t *testing.T) []layer.Turn {
	t.Helper()
	turns, err := convtest.CMS50("..")
	if err != nil {
		t.Fatal(err)
	}
	var out []layer.Turn
	for _, turn := range turns {
		for s, step := range turn.Steps {
			lt := layer.Turn{Step: s, Query: turn.User}
			for _, c := range step {
				call := layer.ToolCall{ID: c.ID, Name: c.Tool, Arguments: c.Args}
				lt.ToolCalls = append(lt.ToolCalls, call)
				lt.Results = append(lt.Results, layer.ToolResult{ToolCall: call, Content: c.Result})
			}
			out = append(out, lt)
		}
		out = append(out, layer.Turn{Step: len(turn.Steps), Query: turn.User, Response: turn.Reply})
	}
	return out
}

// recallevalTurns returns the conversations of testdata/recalleval, by
// name, as the turns the agent logs: a request and its answer each.
func recallevalTurns(t *testing.T) map[string][]layer.Turn {
	t.Helper()
	convs, err := convtest.Recalleval("..")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]layer.Turn{}
	for name, lines := range convs {
		var query string
		for _, ln := range lines {
			if ln.User {
				query = ln.Text
				continue
			}
			out[name] = append(out[name], layer.Turn{Query: query, Response: ln.Text})
		}
	}
	return out
}
