package history_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/thread"
)

// resolutionTurns are two turns whose steps name four entities, one of
// them twice under two names (the newer wins).
var resolutionTurns = []thread.Message{
	{Role: thread.RoleUser, Text: "Create the About page"},
	{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{{ID: "c1", Name: "createPage", Arguments: `{"title":"About"}`}}},
	{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "c1", Name: "createPage", Content: `{"page":{"id":"page_101","title":"About"}}`}}},
	{Role: thread.RoleAssistant, Text: "Created page_101."},
	{Role: thread.RoleUser, Text: "Add a team section to it and rename the page"},
	{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{
		{ID: "c2", Name: "addSection", Arguments: `{"pageId":"page_101","heading":"Team"}`},
		{ID: "c3", Name: "renamePage", Arguments: `{"pageId":"page_101","title":"About Us"}`},
	}},
	{Role: thread.RoleTool, ToolResults: []thread.ToolResult{
		{CallID: "c2", Name: "addSection", Content: `{"section":{"id":"sec_7","heading":"Team","pageId":"page_101"}}`},
		{CallID: "c3", Name: "renamePage", Content: `error: page_101 is locked`},
	}},
	{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{{ID: "c4", Name: "renamePage", Arguments: `{"pageId":"page_101","title":"About Us"}`}}},
	{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: "c4", Name: "renamePage", Content: `{"page":{"id":"page_101","title":"About Us"},"siteId":"site_1"}`}}},
	{Role: thread.RoleAssistant, Text: "Added sec_7 and renamed page_101 to About Us."},
}

// TestSummaries_Resolutions: each coarser resolution of a summary keeps
// the IDs and names of the finer one (the newest name of an ID), and a
// summary fitted to a budget tells its newest turn the finest.
func TestSummaries_Resolutions(t *testing.T) {
	steps, err := (&history.DeterministicSummarizer{}).Summarize(t.Context(), "", resolutionTurns)
	if err != nil {
		t.Fatal(err)
	}
	turn := history.Coarsen(steps, history.Turn)
	want := `- Turn: Create the About page → page_101 "About" | answer: Created page_101.
- Turn: Add a team section to it and rename the page → page_101 "About Us", sec_7 "Team", site_1 | failed | answer: Added sec_7 and renamed page_101 to Abou…`
	if turn != want {
		t.Errorf("at turn resolution:\n%s\nwant\n%s", turn, want)
	}
	thr := history.Coarsen(steps, history.Thread)
	if want := `Entities seen earlier: page_101 "About Us"; sec_7 "Team"; site_1`; thr != want {
		t.Errorf("at thread resolution:\n%s\nwant\n%s", thr, want)
	}
	if again := history.Coarsen(turn, history.Thread); again != thr {
		t.Errorf("the thread line of the turn lines differs from that of the steps:\n%s\n%s", again, thr)
	}
	if history.Coarsen(steps, history.Steps) != steps || history.Coarsen(turn, history.Turn) != turn {
		t.Error("coarsening to a resolution a summary already has changed it")
	}
	count := layer.Query{}.Count
	lines := strings.Split(steps, "\n")
	for _, c := range []struct {
		limit int
		want  []history.Resolution // of each line of the fitted summary
	}{
		{count(steps), []history.Resolution{history.Steps, history.Steps}},
		{count(turn), []history.Resolution{history.Turn, history.Turn}},
		{count(strings.Join([]string{history.Coarsen(lines[0], history.Turn), lines[1]}, "\n")), []history.Resolution{history.Turn, history.Steps}},
		{count(thr + "\n" + strings.Split(turn, "\n")[1]), []history.Resolution{history.Thread, history.Turn}},
		{count(thr), []history.Resolution{history.Thread}},
	} {
		fit := history.Fit(steps, c.limit, nil)
		var got []history.Resolution
		for _, ln := range strings.Split(fit, "\n") {
			got = append(got, history.LineResolution(ln))
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || count(fit) > c.limit {
			t.Errorf("fitted to %d tokens: %v (%d tokens), want %v:\n%s", c.limit, got, count(fit), c.want, fit)
		}
		for _, id := range []string{"page_101", "sec_7", "site_1"} {
			if !strings.Contains(fit, id) {
				t.Errorf("fitted to %d tokens, the summary lost %s:\n%s", c.limit, id, fit)
			}
		}
	}
	if names := []string{history.Steps.String(), history.Turn.String(), history.Thread.String(), history.Resolution(7).String()}; fmt.Sprint(names) != "[steps turn thread resolution(7)]" {
		t.Errorf("names %v", names)
	}
}

// TestSummaries_RecallFitsTheBudget: the history_summary layer shows its
// summary whole when it fits the step's budget, else fitted to it, the
// newest turn the finest; a budget below the block's frame shows
// nothing, and every block fits its budget.
func TestSummaries_RecallFitsTheBudget(t *testing.T) {
	steps, err := (&history.DeterministicSummarizer{}).Summarize(t.Context(), "", resolutionTurns)
	if err != nil {
		t.Fatal(err)
	}
	l := history.NewLayer(500)
	l.Set(steps)
	whole := l.Whole()
	q := layer.Query{}
	for _, budget := range []int{0, q.Count(whole), q.Count(whole) - 1, q.Count(whole) - 20, q.Count(whole) - 60, 40, 1} {
		q.Budget = budget
		items, err := l.Recall(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case budget == 0 || budget >= q.Count(whole):
			if len(items) != 1 || items[0].Text != whole {
				t.Errorf("budget %d: %+v, want the whole block", budget, items)
			}
		case len(items) == 0:
			if budget > 50 {
				t.Errorf("budget %d: nothing shown", budget)
			}
		default:
			it := items[0]
			if it.Tokens > budget || it.Tokens != q.Count(it.Text) {
				t.Errorf("budget %d: %d tokens (counted %d):\n%s", budget, it.Tokens, q.Count(it.Text), it.Text)
			}
			if !strings.Contains(it.Text, "page_101") || !strings.Contains(it.Text, "sec_7") {
				t.Errorf("budget %d: the block lost an ID:\n%s", budget, it.Text)
			}
		}
	}
	// Another counter counts anew: a block counted by one is not given
	// the other's count.
	for _, c := range []layer.Query{{Counter: doubled{}}, {}, {Counter: doubled{}, Budget: q.Count(whole)}} {
		items, err := l.Recall(t.Context(), c)
		if err != nil || len(items) != 1 || items[0].Tokens != c.Count(items[0].Text) || c.Budget > 0 && items[0].Tokens > c.Budget {
			t.Errorf("counter %T, budget %d: %+v, %v", c.Counter, c.Budget, items, err)
		}
	}
	// A budget that leaves the newest turn at steps: it is shown as the
	// summarizer wrote it.
	lines := strings.Split(steps, "\n")
	q.Budget = q.Count(whole) - q.Count(lines[0]) + q.Count(history.Coarsen(lines[0], history.Turn))
	items, _ := l.Recall(t.Context(), q)
	if len(items) != 1 || !strings.Contains(items[0].Text, lines[1]) || strings.Contains(items[0].Text, lines[0]) {
		t.Errorf("budget %d: want the first turn coarsened and the second whole, got %+v", q.Budget, items)
	}
}

// doubled counts twice the default estimate.
type doubled struct{}

func (doubled) Count(s string) int { return 2 * (layer.Query{}).Count(s) }

// TestSummaries_CompactionNeverGrowsTokens summarizes the authored
// conversations (the 50-turn CMS conversation of
// testdata/conversations/cms50.json and the ten conversations of
// testdata/recalleval) as agentloop does, a few turns at a time, on
// budgets from small to large, and checks every compaction step: at
// every resolution (the summary as written, and coarsened to each of the
// three), the memory's tokens after the step (the summary) are at most
// 5% above those before it (the previous summary at that resolution and
// the messages the step summarizes), counted as prompt.CountMessage
// counts messages. It logs the largest ratio found.
func TestSummaries_CompactionNeverGrowsTokens(t *testing.T) {
	convs := map[string][]thread.Message{"cms50": cms50Messages(t)}
	for name, msgs := range recallevalMessages(t) {
		convs[name] = msgs
	}
	count := layer.Query{}.Count
	worst, steps := 0.0, 0
	for name, msgs := range convs {
		starts := turnStarts(msgs)
		for _, every := range []int{1, 2, 5} {
			for _, limit := range []int{100, history.DefaultSummaryTokens, 2000} {
				s := &history.DeterministicSummarizer{MaxTokens: limit}
				prev := ""
				for i := 0; i < len(starts); i += every {
					end := len(msgs)
					if i+every < len(starts) {
						end = starts[i+every]
					}
					part := msgs[starts[i]:end]
					next, err := s.Summarize(t.Context(), prev, part)
					if err != nil {
						t.Fatal(err)
					}
					steps++
					in := 0
					for _, m := range part {
						in += messageTokens(m)
					}
					for r := history.Steps; r <= history.Thread; r++ {
						before := count(history.Coarsen(prev, r)) + in
						after := count(history.Coarsen(next, r))
						ratio := float64(after) / float64(before)
						worst = max(worst, ratio)
						if ratio > 1.05 {
							t.Fatalf("%s, %d turns at a time, budget %d, turn %d at %s: %d tokens before, %d after (+%.1f%%)\nprevious:\n%s\nmessages: %+v\nnext:\n%s",
								name, every, limit, i+1, r, before, after, 100*(ratio-1), prev, part, next)
						}
					}
					prev = next
				}
			}
		}
	}
	t.Logf("FIGURE summaries: %d compaction steps over %d conversations; the largest after/before token ratio at any resolution %.3f", steps, len(convs), worst)
}

// FuzzSummaryResolutions: coarsening is idempotent at each resolution,
// a summary at thread resolution is one line at most, and the
// history_summary layer's block never passes the step's budget.
func FuzzSummaryResolutions(f *testing.F) {
	steps, err := (&history.DeterministicSummarizer{}).Summarize(f.Context(), "", resolutionTurns)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(steps, 60)
	f.Add("Entities seen earlier: page_1 \"A\"; x\n- User: hi | f (call c) → page_2 | answer: ok", 30)
	f.Add(" | f (call c) failed → \"a, b\" | answer: → x\n- Turn: q → y\n\n", 5)
	f.Fuzz(func(t *testing.T, summary string, budget int) {
		for _, r := range []history.Resolution{history.Turn, history.Thread} {
			once := history.Coarsen(summary, r)
			if twice := history.Coarsen(once, r); twice != once {
				t.Fatalf("at %s, coarsening again changed\n%q\nto\n%q", r, once, twice)
			}
		}
		if th := history.Coarsen(summary, history.Thread); strings.Contains(th, "\n") {
			t.Fatalf("at thread resolution, more than one line: %q", th)
		}
		l := history.NewLayer(500)
		l.Set(summary)
		q := layer.Query{Budget: budget % 4096}
		items, err := l.Recall(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if q.Budget > 0 && it.Tokens > q.Budget || it.Tokens != q.Count(it.Text) {
				t.Fatalf("budget %d: a block of %d tokens (counted %d): %q", q.Budget, it.Tokens, q.Count(it.Text), it.Text)
			}
		}
	})
}

// scriptedModel answers each call with the next of its answers, and
// records the prompts it was sent.
type scriptedModel struct {
	answers []string
	err     error
	sent    [][]llms.MessageContent
}

func (m *scriptedModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.sent = append(m.sent, msgs)
	if len(m.sent) > len(m.answers) {
		return nil, m.err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: m.answers[len(m.sent)-1]}}}, nil
}

func (m *scriptedModel) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, opts...)
}

// TestSummaries_ModelSummarizerCondenses: with MaxTokens, a model's
// summary that passes it is sent back to the model to be told more
// coarsely (the prompt names the budget), and what the model's answer
// still has beyond the budget is fitted, keeping the IDs. A summary that
// fits, or no MaxTokens, costs one call; a failed condensing call fails
// the summary (the previous one is kept).
func TestSummaries_ModelSummarizerCondenses(t *testing.T) {
	steps, err := (&history.DeterministicSummarizer{}).Summarize(t.Context(), "", resolutionTurns)
	if err != nil {
		t.Fatal(err)
	}
	count := layer.Query{}.Count
	long := steps + "\n" + steps
	// The model condenses to turn lines, one more than fits.
	turns := history.Coarsen(long, history.Turn)
	limit := count(turns) - 5
	m := &scriptedModel{answers: []string{long, turns}}
	s := history.NewModelSummarizer(m, "")
	s.MaxTokens = limit
	got, err := s.Summarize(t.Context(), "", resolutionTurns)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.sent) != 2 || !strings.Contains(m.sent[1][0].Parts[0].(llms.TextContent).Text, fmt.Sprint(limit)) || m.sent[1][1].Parts[0].(llms.TextContent).Text != long {
		t.Fatalf("%d calls; the condensing call: %+v", len(m.sent), m.sent[1:])
	}
	if count(got) > limit || !strings.HasPrefix(got, "Entities seen earlier: ") {
		t.Errorf("%d tokens, want at most %d, the oldest folded:\n%s", count(got), limit, got)
	}
	for _, id := range []string{"page_101", "sec_7", "site_1"} {
		if !strings.Contains(got, id) {
			t.Errorf("the condensed summary lost %s:\n%s", id, got)
		}
	}
	// Fits: one call, the answer as it is.
	m = &scriptedModel{answers: []string{steps}}
	s = history.NewModelSummarizer(m, "")
	s.MaxTokens = count(steps)
	if got, err := s.Summarize(t.Context(), "", resolutionTurns); err != nil || got != steps || len(m.sent) != 1 {
		t.Errorf("a summary that fits: %q, %v, %d calls", got, err, len(m.sent))
	}
	// The condensing call fails: the summary fails.
	m = &scriptedModel{answers: []string{long}, err: errors.New("model down")}
	s = history.NewModelSummarizer(m, "")
	s.MaxTokens = 10
	if got, err := s.Summarize(t.Context(), "", resolutionTurns); err == nil || !strings.Contains(err.Error(), "model down") {
		t.Errorf("a failed condensing call: %q, %v", got, err)
	}
	// An empty condensed answer: the summary is fitted without it.
	m = &scriptedModel{answers: []string{long, " "}}
	s = history.NewModelSummarizer(m, "")
	s.MaxTokens = limit
	if got, err := s.Summarize(t.Context(), "", resolutionTurns); err != nil || got != history.Fit(long, limit, nil) {
		t.Errorf("an empty condensed answer: %q, %v", got, err)
	}
}

// TestSummaries_BlockGrowsOnce counts the summary as the prompt carries
// it, its block's header and fence included, one turn summarized at a
// time over the authored conversations. After the first summary no step
// grows the block and the turn it takes in by more than 5%. The first
// summary adds the block's framing once: on a short chat turn that is
// more than the turn (about 2.3 to 2.7 times it), which no summary of so
// little text can avoid; the test holds it to the framing plus 5%.
func TestSummaries_BlockGrowsOnce(t *testing.T) {
	convs := map[string][]thread.Message{"cms50": cms50Messages(t)}
	for name, msgs := range recallevalMessages(t) {
		convs[name] = msgs
	}
	count := layer.Query{}.Count
	block := func(s string) int {
		if s == "" {
			return 0
		}
		l := history.NewLayer(0)
		l.Set(s)
		return count(l.Whole())
	}
	worstFirst, worstLater := 0.0, 0.0
	for name, msgs := range convs {
		starts := turnStarts(msgs)
		s := &history.DeterministicSummarizer{}
		prev := ""
		for i := range starts {
			end := len(msgs)
			if i+1 < len(starts) {
				end = starts[i+1]
			}
			part := msgs[starts[i]:end]
			next, err := s.Summarize(t.Context(), prev, part)
			if err != nil {
				t.Fatal(err)
			}
			in := 0
			for _, m := range part {
				in += messageTokens(m)
			}
			before, after := block(prev)+in, block(next)
			ratio := float64(after) / float64(before)
			if i == 0 {
				worstFirst = max(worstFirst, ratio)
				if framing := after - count(next); float64(after) > 1.05*float64(before)+float64(framing) {
					t.Errorf("%s: the first summary is %d tokens as a block (%d of framing) for a turn of %d", name, after, framing, before)
				}
			} else {
				worstLater = max(worstLater, ratio)
				if ratio > 1.05 {
					t.Errorf("%s, turn %d: the block and the turn were %d tokens, the new block is %d (+%.1f%%)", name, i+1, before, after, 100*(ratio-1))
				}
			}
			prev = next
		}
	}
	t.Logf("FIGURE summary blocks: the first summary %.3f of its turn at most; every later step %.3f at most", worstFirst, worstLater)
}
