package history_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/internal/convtest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/thread"
)

// The authored conversations of the repository's testdata, as threads'
// messages, for the summaries' tests and benchmarks.

// messageTokens counts m as prompt.CountMessage counts the message it is
// sent as.
func messageTokens(m thread.Message) int {
	count := layer.Query{}.Count
	n := prompt.MessageOverhead + count(m.Text)
	for _, c := range m.ToolCalls {
		n += count(c.Name) + count(c.Arguments)
	}
	for _, r := range m.ToolResults {
		n += count(r.Name) + count(r.Content)
	}
	return n
}

// turnStarts returns the indices of the user messages of msgs.
func turnStarts(msgs []thread.Message) []int {
	var out []int
	for i, m := range msgs {
		if m.Role == thread.RoleUser {
			out = append(out, i)
		}
	}
	return out
}

// cms50Messages returns the 50-turn CMS conversation as a thread's
// messages: each turn's request, its steps' calls (each reference
// replaced by the ID the fixture says it resolves to) and results, and
// its answer.
func cms50Messages(t testing.TB) []thread.Message {
	t.Helper()
	turns, err := convtest.CMS50("..")
	if err != nil {
		t.Fatal(err)
	}
	var msgs []thread.Message
	for _, turn := range turns {
		msgs = append(msgs, thread.Message{Role: thread.RoleUser, Text: turn.User})
		for _, step := range turn.Steps {
			call := thread.Message{Role: thread.RoleAssistant}
			res := thread.Message{Role: thread.RoleTool}
			for _, c := range step {
				call.ToolCalls = append(call.ToolCalls, thread.ToolCall{ID: c.ID, Name: c.Tool, Arguments: c.Args})
				res.ToolResults = append(res.ToolResults, thread.ToolResult{CallID: c.ID, Name: c.Tool, Content: c.Result})
			}
			msgs = append(msgs, call, res)
		}
		msgs = append(msgs, thread.Message{Role: thread.RoleAssistant, Text: turn.Reply})
	}
	if len(msgs) < 200 {
		t.Fatalf("cms50: %d messages", len(msgs))
	}
	return msgs
}

// recallevalMessages returns the conversations of testdata/recalleval,
// by name, as threads' messages.
func recallevalMessages(t testing.TB) map[string][]thread.Message {
	t.Helper()
	convs, err := convtest.Recalleval("..")
	if err != nil {
		t.Fatal(err)
	}
	if len(convs) < 10 {
		t.Fatalf("recalleval: %d conversations", len(convs))
	}
	out := map[string][]thread.Message{}
	for name, lines := range convs {
		for _, ln := range lines {
			role := thread.RoleAssistant
			if ln.User {
				role = thread.RoleUser
			}
			out[name] = append(out[name], thread.Message{Role: role, Text: ln.Text})
		}
	}
	return out
}

// TestSummaries_TurnsTold summarizes the authored conversations (cms50
// and the ten of testdata/recalleval) two turns at a time on budgets from
// small to the default, and logs how many turns the summaries tell with
// their request (as steps or as a turn line) and how many of cms50's IDs
// they hold. A summary is never over its budget, and tells its parts
// oldest coarsest: the entities line first, then turn lines, then lines
// of steps; the text-only conversations' summaries hold both kinds of
// line.
func TestSummaries_TurnsTold(t *testing.T) {
	convs := recallevalMessages(t)
	convs["cms50"] = cms50Messages(t)
	for _, limit := range []int{125, 250, 500} {
		told, steps, ids := map[bool]int{}, map[bool]int{}, 0
		for name, msgs := range convs {
			sum := summarizeAll(t, msgs, limit)
			cms := name == "cms50"
			n, s := linesTold(t, sum)
			told[cms] += n
			steps[cms] += s
			if cms {
				ids = len(cmsIDPattern.FindAllString(sum, -1))
			}
		}
		t.Logf("FIGURE summaries in %d tokens: cms50 tells %d of 50 turns with their request (%d step by step) and holds %d IDs; the 10 recalleval conversations tell %d turns (%d step by step)",
			limit, told[true], steps[true], ids, told[false], steps[false])
		// The newest turns stay steps, the older are turn lines.
		if steps[false] == 0 || steps[false] == told[false] {
			t.Errorf("budget %d: %d turns told, %d of them step by step: want both resolutions", limit, told[false], steps[false])
		}
	}
}

// summarizeAll summarizes msgs two turns at a time in limit tokens, and
// checks that each summary fits.
func summarizeAll(t *testing.T, msgs []thread.Message, limit int) string {
	t.Helper()
	starts := turnStarts(msgs)
	s := &history.DeterministicSummarizer{MaxTokens: limit}
	sum := ""
	for i := 0; i < len(starts); i += 2 {
		end := len(msgs)
		if i+2 < len(starts) {
			end = starts[i+2]
		}
		var err error
		if sum, err = s.Summarize(t.Context(), sum, msgs[starts[i]:end]); err != nil {
			t.Fatal(err)
		}
		if n := (layer.Query{}).Count(sum); n > limit {
			t.Fatalf("budget %d: %d tokens", limit, n)
		}
	}
	return sum
}

// linesTold returns how many turns summary tells with their request, and
// how many of them step by step. It checks that the entities line comes
// first, then turn lines, then lines of steps.
func linesTold(t *testing.T, summary string) (told, steps int) {
	t.Helper()
	rank := 0
	for i, ln := range strings.Split(summary, "\n") {
		r := 0 // the entities line
		switch {
		case strings.HasPrefix(ln, "- Turn: "):
			told, r = told+1, 1
		case strings.HasPrefix(ln, "- User: "):
			told, steps, r = told+1, steps+1, 2
		case i > 0 || ln != "" && !strings.HasPrefix(ln, "Entities seen earlier: "):
			t.Fatalf("line %d is %q", i, ln)
		}
		if r < rank {
			t.Errorf("line %d is coarser than an earlier one:\n%s", i, summary)
		}
		rank = max(rank, r)
	}
	return told, steps
}

// cmsIDPattern matches the cms50 conversation's IDs.
var cmsIDPattern = regexp.MustCompile(`\b[a-z]+_[0-9a-f]{12}\b`)
