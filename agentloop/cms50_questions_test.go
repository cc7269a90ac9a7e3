package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/storage"
)

// cmsQuestion is a question about the cms50 conversation, asked after its
// last turn: the entity it names (type and name) and the turn whose
// tool results first show it. Its answer is the entity's ID.
type cmsQuestion struct {
	Q    string `json:"q"`
	Type string `json:"type"`
	Name string `json:"name"`
	Turn int    `json:"turn"`
}

// cmsQuestionsPath is the question set, beside the conversation.
var cmsQuestionsPath = filepath.Join("..", "testdata", "conversations", "cms50-questions.json")

// loadCMSQuestions reads the question set and checks it against the
// conversation: every question's entity shows in its turn's results
// with one ID, and in no earlier turn's. It returns the questions and
// their answers.
func loadCMSQuestions(t *testing.T, f cmsFixture) ([]cmsQuestion, map[string]string) {
	t.Helper()
	data, err := os.ReadFile(cmsQuestionsPath)
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Questions []cmsQuestion `json:"questions"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		t.Fatalf("%s: %v", cmsQuestionsPath, err)
	}
	if len(set.Questions) < 40 {
		t.Fatalf("%d questions, want at least 40", len(set.Questions))
	}
	answers := map[string]string{}
	for _, q := range set.Questions {
		if _, ok := idPrefix[q.Type]; !ok || q.Turn < 1 || q.Turn > len(f.Turns) || answers[q.Q] != "" {
			t.Fatalf("question %q: bad type, turn or a repeat", q.Q)
		}
		for n := 1; n <= q.Turn; n++ {
			ids := turnEntities(t, f.Turns[n-1], q.Type, q.Name)
			switch {
			case n < q.Turn && len(ids) > 0:
				t.Fatalf("question %q: turn %d already shows %v, before its turn %d", q.Q, n, ids, q.Turn)
			case n == q.Turn && len(ids) != 1:
				t.Fatalf("question %q: turn %d shows %v, want one ID", q.Q, n, ids)
			case n == q.Turn:
				answers[q.Q] = ids[0]
			}
		}
	}
	return set.Questions, answers
}

// turnEntities returns the IDs of the entities of type typ named name in
// the turn's tool results.
func turnEntities(t *testing.T, turn cmsTurn, typ, name string) []string {
	t.Helper()
	var ids []string
	for _, step := range turn.Steps {
		for _, c := range step {
			var v any
			if err := json.Unmarshal(c.Result, &v); err != nil {
				t.Fatal(err)
			}
			jsonEntities(v, idPrefix[typ]+"_", name, func(id string) {
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			})
		}
	}
	return ids
}

// askCMS runs the 50 turns of the conversation with an agent configured
// by cfgFn, then asks every question in the same thread, and returns
// the questions whose answer was the right ID (the scripted model finds
// the ID of the entity the question names in the request it is sent, as
// it resolves references) and the conversation's failures. The scripted
// model answers a question with the ID it found, or says it found none.
func askCMS(t *testing.T, f cmsFixture, qs []cmsQuestion, answers map[string]string, cfgFn func(*agentloop.Config)) (map[string]bool, []string) {
	t.Helper()
	byQ := map[string]cmsQuestion{}
	for _, q := range qs {
		byQ[q.Q] = q
	}
	inner := cmsModel(f)
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if q, ok := byQ[r.LastUser()]; ok {
			id, err := findID(requestText(r.Messages), r.Messages, q.Type, q.Name)
			if err != nil {
				return agenttest.Text("I cannot tell: " + err.Error()), nil
			}
			return agenttest.Text(id), nil
		}
		resp, err := inner.GenerateContent(ctx, r.Messages, llms.WithTools(r.Options.Tools))
		if err != nil {
			return nil, err
		}
		return resp.Choices[0], nil
	})
	h := newCMSHarness(f)
	cfg := agentloop.Config{Model: model, Instructions: f.Instructions, Layers: cmsLayers(t), Tools: h.tools(), Store: storage.NewMemoryStore(), MaxSteps: 6}
	cfgFn(&cfg)
	a := mustAgent(t, cfg)
	var failures []string
	for i, turn := range f.Turns {
		h.mu.Lock()
		h.turn = i
		h.mu.Unlock()
		res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "cms50", ResourceID: "editor-1", Input: turn.User})
		if err != nil || res.Output != turn.Reply {
			failures = append(failures, fmt.Sprintf("turn %d: %v", turn.N, err))
		}
	}
	failures = append(failures, h.wrong...)
	resolved := map[string]bool{}
	for _, q := range qs {
		res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "cms50", ResourceID: "editor-1", Input: q.Q})
		if err != nil {
			t.Fatalf("question %q: %v", q.Q, err)
		}
		resolved[q.Q] = res.Output == answers[q.Q]
	}
	return resolved, failures
}

// TestSummaries_CMS50Questions asks the 43 authored questions of
// testdata/conversations/cms50-questions.json after the 50-turn CMS
// conversation, once with the whole history and once with the default
// window and the multi-resolution summary, each with the default memory
// layers and with no layer but the summary (so the summary alone must
// answer what the window no longer shows). The scripted model must
// resolve at most 2% fewer questions with the summaries than with the
// whole history. Smaller summary budgets, where older turns are told at
// coarser resolutions, are logged (under make reliability only).
func TestSummaries_CMS50Questions(t *testing.T) {
	if testing.Short() {
		t.Skip("several 50-turn runs")
	}
	t.Parallel()
	f := loadCMS50(t)
	qs, answers := loadCMSQuestions(t, f)
	count := func(m map[string]bool) int {
		n := 0
		for _, ok := range m {
			if ok {
				n++
			}
		}
		return n
	}
	noLayers := func(cfg *agentloop.Config) { cfg.Layers = nil }
	for _, c := range []struct {
		name   string
		layers func(*agentloop.Config)
	}{{"memory layers", func(*agentloop.Config) {}}, {"summary alone", noLayers}} {
		full, ff := askCMS(t, f, qs, answers, func(cfg *agentloop.Config) { c.layers(cfg); fullHistory(cfg) })
		sum, sf := askCMS(t, f, qs, answers, func(cfg *agentloop.Config) { c.layers(cfg); windowedHistory(cfg) })
		for _, e := range append(ff, sf...) {
			t.Errorf("%s: %s", c.name, e)
		}
		t.Logf("FIGURE cms50 questions, %s: the whole history resolves %d of %d, the window and multi-resolution summary %d", c.name, count(full), len(qs), count(sum))
		for _, q := range qs {
			if full[q.Q] && !sum[q.Q] {
				t.Logf("%s: the summary does not answer %q (turn %d)", c.name, q.Q, q.Turn)
			}
		}
		if float64(count(sum)) < 0.98*float64(count(full)) {
			t.Errorf("%s: the summaries resolve %d questions, the whole history %d: more than 2%% fewer", c.name, count(sum), count(full))
		}
	}
	// Smaller summary budgets tell more of the conversation at coarser
	// resolutions. Their runs give figures only: make reliability
	// (MEMLAYER_RELIABILITY=1) runs them, make test does not.
	if !fullSuite() {
		return
	}
	for _, tokens := range []int{250, 125} {
		sum, _ := askCMS(t, f, qs, answers, func(cfg *agentloop.Config) {
			noLayers(cfg)
			windowedHistory(cfg)
			cfg.History.SummaryTokens = tokens
		})
		t.Logf("FIGURE cms50 questions, summary alone in %d tokens: %d of %d resolved", tokens, count(sum), len(qs))
	}
}
