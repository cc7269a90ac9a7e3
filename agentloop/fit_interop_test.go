package agentloop_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/tools"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
)

// seenLayer remembers the tool results its Store gets and recalls them in
// a <seen> block.
type seenLayer struct {
	mu      sync.Mutex
	results []layer.ToolResult
	turns   []layer.Turn
}

func (s *seenLayer) Spec() layer.Spec { return layer.Spec{ID: "seen"} }
func (s *seenLayer) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	b.WriteString("<seen>")
	for _, r := range s.results {
		b.WriteString(" " + r.Name + "=" + r.Content)
	}
	b.WriteString(" </seen>")
	return []layer.Item{{Text: b.String()}}, nil
}
func (s *seenLayer) Store(_ context.Context, t layer.Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, t)
	s.results = append(s.results, t.Results...)
	return nil
}

// TestFit06_MemoryKeepsTheTranscript: NewMemory in a langchaingo
// conversation chain gives the model the layers' blocks and then the
// conversation so far (a langchaingo buffer memory by default).
func TestFit06_MemoryKeepsTheTranscript(t *testing.T) {
	seen := &seenLayer{}
	st := newInitStack(t, seen)
	model := agenttest.New(agenttest.Reply(agenttest.Text("Hello Ada.")), agenttest.Reply(agenttest.Text("You are Ada.")))
	chain := chains.NewConversation(model, agentloop.NewMemory(st, agentloop.MemoryConfig{}))
	if _, err := chains.Run(t.Context(), chain, "My name is Ada."); err != nil {
		t.Fatal(err)
	}
	if _, err := chains.Run(t.Context(), chain, "What is my name?"); err != nil {
		t.Fatal(err)
	}
	p := model.Requests()[1].LastUser()
	blocks, transcript := strings.Index(p, "<seen>"), strings.Index(p, "My name is Ada.")
	if blocks < 0 || transcript < 0 || blocks > transcript || !strings.Contains(p, "Hello Ada.") {
		t.Fatalf("second prompt lacks the layer block followed by the transcript:\n%s", p)
	}
	if len(seen.turns) != 2 || seen.turns[1].Query != "What is my name?" || seen.turns[1].Response.Text != "You are Ada." {
		t.Fatalf("layers stored %+v", seen.turns)
	}
}

// TestFit07_ExecutorToolResultsReachTheLayers: in an agents.Executor that
// returns its intermediate steps, the tool calls and results of a turn
// reach the layers' Store, and the next turn's prompt shows the layer.
func TestFit07_ExecutorToolResultsReachTheLayers(t *testing.T) {
	seen := &seenLayer{}
	st := newInitStack(t, seen)
	model := agenttest.New(
		agenttest.Reply(agenttest.Text("Thought: Do I need to use a tool? Yes\nAction: upper\nAction Input: about us")),
		agenttest.Reply(agenttest.Text("Thought: Do I need to use a tool? No\nAI: The title is ABOUT US.")),
		agenttest.Reply(agenttest.Text("Thought: Do I need to use a tool? No\nAI: It was ABOUT US.")),
	)
	mem := agentloop.NewMemory(st, agentloop.MemoryConfig{})
	agent := agents.NewConversationalAgent(model, []tools.Tool{upper{}})
	exec := agents.NewExecutor(agent, agents.WithMemory(mem), agents.WithReturnIntermediateSteps())
	out, err := chains.Call(t.Context(), exec, map[string]any{"input": "Upper-case the title about us."})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(fmt.Sprint(out["output"])) != "The title is ABOUT US." {
		t.Fatalf("output %v", out)
	}
	if len(seen.results) != 1 || seen.results[0].Name != "upper" || seen.results[0].Content != "ABOUT US" || seen.results[0].Arguments != "about us" {
		t.Fatalf("layers stored results %+v, want the upper call", seen.results)
	}
	if _, err := chains.Call(t.Context(), exec, map[string]any{"input": "What was it?"}); err != nil {
		t.Fatal(err)
	}
	p := model.Requests()[2].LastUser()
	if !strings.Contains(p, "<seen> upper=ABOUT US </seen>") || !strings.Contains(p, "Upper-case the title about us.") {
		t.Fatalf("third prompt lacks the layer block or the transcript:\n%s", p)
	}
}
