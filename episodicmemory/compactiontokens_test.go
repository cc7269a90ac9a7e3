package episodicmemory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/internal/convtest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/storage"
)

// TestCompactionTokens logs the authored conversations (the 50-turn CMS
// conversation of testdata/conversations/cms50.json, whose steps call
// tools, and the ten text-only conversations of testdata/recalleval)
// step by step, compacting often and rarely (after 1 and 8 raw
// episodes, and after 2,000 tokens or 64 episodes), and checks every compaction: the tokens of
// the log's view as a prompt would send them (see promptTokens) after
// the step are at most 5% above those before it with the step's new
// episodes. It logs the largest ratio of each conversation.
func TestCompactionTokens(t *testing.T) {
	convs := map[string][]layer.Turn{"cms50": cms50Turns(t)}
	for name, turns := range recallevalTurns(t) {
		convs[name] = turns
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range convs {
			if !yield(name) {
				return
			}
		}
	})
	for _, cfg := range []Config{{CompactAfter: 1}, {CompactAfter: 8}, {CompactAfter: 64, CompactTokens: 2000}} {
		var figs []string
		for _, name := range names {
			worst, steps := compactionRatios(t, cfg, convs[name])
			if steps == 0 {
				t.Errorf("%s, CompactAfter %d, CompactTokens %d: no compaction", name, cfg.CompactAfter, cfg.CompactTokens)
			}
			if worst > 1.05 {
				t.Errorf("%s, CompactAfter %d, CompactTokens %d: a compaction grew the view's tokens by %.1f%%", name, cfg.CompactAfter, cfg.CompactTokens, 100*(worst-1))
			}
			figs = append(figs, fmt.Sprintf("%s %.3f (%d)", name, worst, steps))
		}
		t.Logf("FIGURE episodic compaction, CompactAfter %d, CompactTokens %d: the largest after/before token ratio of the view (compactions): %s",
			cfg.CompactAfter, cfg.CompactTokens, strings.Join(figs, ", "))
	}
}

// compactionRatios logs turns in a new layer configured as cfg (never
// trimming its digests) and returns the largest ratio of the view's
// tokens after a compacting step to those before it plus the step's new
// episodes, and how many steps compacted.
func compactionRatios(t *testing.T, cfg Config, turns []layer.Turn) (float64, int) {
	t.Helper()
	ctx := context.Background()
	cfg.MaxDigests = 1 << 20
	cfg.Now = func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }
	tmpl, err := New(cfg)
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
		after, n, fresh := viewTokens(t, l, int(l.appended-appended))
		if n > digests {
			steps++
			worst = max(worst, float64(after)/float64(before+fresh))
		}
		before, digests = after, n
	}
	return worst, steps
}

// viewTokens returns the tokens of l's view as a prompt would send it
// (see promptTokens), how many digests it holds, and the tokens of its
// newest fresh raw episodes as messages.
func viewTokens(t *testing.T, l *Layer, fresh int) (int, int, int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ensureDigests(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fresh > len(l.recent) {
		t.Fatalf("%d new episodes, %d raw in the view", fresh, len(l.recent))
	}
	return promptTokens(l.digests, l.recent), len(l.digests), messageTokens(l.recent[len(l.recent)-fresh:])
}

// promptTokens returns the tokens of digests and raw episodes as a
// prompt sends them, framing included: the digests as lines of the
// recall block, each after its line break (the block's header and fence
// are sent once, the same whether the episodes shown are raw or folded,
// so they are left out), and the raw episodes as the messages agentloop
// sends a step as (see messageTokens).
func promptTokens(digests []Digest, raw []Episode) int {
	var b strings.Builder
	for _, d := range digests {
		b.WriteByte('\n')
		b.WriteString(d.Text)
	}
	n := 0
	if b.Len() > 0 {
		n = layer.Query{}.Count(b.String())
	}
	return n + messageTokens(raw)
}

// messageTokens returns the tokens of raw episodes as prompt.CountMessage
// counts the messages agentloop sends them as: a step's tool calls in
// one AI message and each result in a tool message of its own; a turn's
// request in a user message and its answer in an AI message; a note as
// one message of its text.
func messageTokens(raw []Episode) int {
	n := 0
	for seg := range chunkBySeq(raw) {
		ai := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		for _, e := range seg {
			switch e.Kind {
			case KindTool:
				ai.Parts = append(ai.Parts, llms.ToolCall{ID: e.Ref, Type: "function", FunctionCall: &llms.FunctionCall{Name: e.Tool, Arguments: e.Arguments}})
				n += prompt.CountMessage(nil, llms.MessageContent{Role: llms.ChatMessageTypeTool,
					Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: e.Ref, Name: e.Tool, Content: e.Result}}})
			case KindTurn:
				n += prompt.CountMessage(nil, llms.TextParts(llms.ChatMessageTypeHuman, e.Query)) +
					prompt.CountMessage(nil, llms.TextParts(llms.ChatMessageTypeAI, e.Result))
			default:
				n += prompt.CountMessage(nil, llms.TextParts(llms.ChatMessageTypeAI, e.Result))
			}
		}
		if len(ai.Parts) > 0 {
			n += prompt.CountMessage(nil, ai)
		}
	}
	return n
}

// chunkBySeq yields the runs of raw episodes of one segment (one step).
func chunkBySeq(raw []Episode) func(func([]Episode) bool) {
	return func(yield func([]Episode) bool) {
		for i := 0; i < len(raw); {
			j := i + 1
			for j < len(raw) && raw[j].seq == raw[i].seq {
				j++
			}
			if !yield(raw[i:j]) {
				return
			}
			i = j
		}
	}
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
