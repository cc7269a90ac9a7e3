package chainmemory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/prompts"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/tools"

	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/chainmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/workingmemory"
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
	chain := chains.NewConversation(model, chainmemory.New(st, chainmemory.Config{}))
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
	if len(seen.turns) != 2 || seen.turns[1].Query != "What is my name?" || seen.turns[1].Response != "You are Ada." {
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
	mem := chainmemory.New(st, chainmemory.Config{})
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

// TestFit08_LayerToolsReachLangchaingoAgents: LLMTools gives the layer
// tools with their schemas; ExportTools carries the schema in the
// description and works in the OpenAI-functions agent (whose {"__arg1":
// string} wrapper and a bare arguments object both reach the layer); the
// documented recipes make the OpenAI-functions and one-shot agents show
// the memory.
func TestFit08_LayerToolsReachLangchaingoAgents(t *testing.T) {
	wm, err := workingmemory.New(workingmemory.Config{Schema: `{"type":"object","properties":{"task":{"type":"string"}}}`})
	if err != nil {
		t.Fatal(err)
	}
	st := newInitStack(t, wm)
	defs := chainmemory.LLMTools(st)
	if len(defs) != 1 || defs[0].Function.Name != "working_memory_update" {
		t.Fatalf("LLMTools %+v", defs)
	}
	if b, _ := json.Marshal(defs[0].Function.Parameters); !strings.Contains(string(b), `"task"`) {
		t.Fatalf("LLMTools parameters %s", b)
	}
	exported := chainmemory.ExportTools(st)
	if !strings.Contains(exported[0].Description(), `"task"`) {
		t.Fatalf("exported description lacks the schema: %s", exported[0].Description())
	}

	mem := chainmemory.New(st, chainmemory.Config{})
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("working_memory_update", map[string]string{"__arg1": `{"task":"write the docs"}`}))),
		agenttest.Reply(agenttest.Text("Noted.")),
		agenttest.Reply(agenttest.Calls(agenttest.Call("working_memory_update", `{"task":"review the docs"}`))),
		agenttest.Reply(agenttest.Text("Noted again.")),
	)
	agent := agents.NewOpenAIFunctionsAgent(model, exported, agents.NewOpenAIOption().WithExtraMessages(
		[]prompts.MessageFormatter{prompts.NewSystemMessagePromptTemplate("{{.history}}", []string{"history"})}))
	exec := agents.NewExecutor(agent, agents.WithMemory(mem))
	for _, in := range []string{"Remember to write the docs.", "Now review them."} {
		if _, err := chains.Call(t.Context(), exec, map[string]any{"input": in}); err != nil {
			t.Fatal(err)
		}
	}
	live, _ := layer.Find[*workingmemory.Layer](st, workingmemory.DefaultID)
	if got := fmt.Sprint(live.State()); got != "map[task:review the docs]" {
		t.Fatalf("state %s", got)
	}
	if sys := model.Requests()[2].System(); !strings.Contains(sys, "write the docs") || !strings.Contains(sys, "<working_memory>") {
		t.Fatalf("the OpenAI-functions agent's system messages lack the memory:\n%s", sys)
	}

	oneShot := agenttest.New(agenttest.Reply(agenttest.Text("Final Answer: reviewing")))
	exec = agents.NewExecutor(agents.NewOneShotAgent(oneShot, exported, agents.WithPromptPrefix("Memory:\n{{.history}}\n\nAnswer the question.")), agents.WithMemory(mem))
	if _, err := chains.Call(t.Context(), exec, map[string]any{"input": "What now?"}); err != nil {
		t.Fatal(err)
	}
	if p := oneShot.Requests()[0].LastUser(); !strings.Contains(p, "review the docs") {
		t.Fatalf("the one-shot agent's prompt lacks the memory:\n%s", p)
	}
}

// TestFit10_MemoryTranscriptOptions: NoTranscript gives the layers'
// blocks only; a Transcript of the user's choice (a window of one turn)
// replaces the default buffer; Clear empties it.
func TestFit10_MemoryTranscriptOptions(t *testing.T) {
	st := newInitStack(t, layer.Text(layer.Spec{ID: "profile"}, "<profile>terse</profile>"))
	ctx := t.Context()
	turn := func(mem schema.Memory, in, out string) {
		t.Helper()
		if err := mem.SaveContext(ctx, map[string]any{"input": in}, map[string]any{"text": out}); err != nil {
			t.Fatal(err)
		}
	}
	load := func(mem schema.Memory) string {
		t.Helper()
		v, err := mem.LoadMemoryVariables(ctx, map[string]any{"input": "next"})
		if err != nil {
			t.Fatal(err)
		}
		return v["history"].(string)
	}
	bare := chainmemory.New(st, chainmemory.Config{NoTranscript: true})
	turn(bare, "one", "1")
	if h := load(bare); h != "<profile>terse</profile>" {
		t.Fatalf("NoTranscript history %q", h)
	}
	window := chainmemory.New(st, chainmemory.Config{Transcript: memory.NewConversationWindowBuffer(1)})
	turn(window, "one", "1")
	turn(window, "two", "2")
	if h := load(window); h != "<profile>terse</profile>\n\nHuman: two\nAI: 2" {
		t.Fatalf("window history %q", h)
	}
	if err := window.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if h := load(window); h != "<profile>terse</profile>" {
		t.Fatalf("history after Clear %q", h)
	}
}

// TestFit11_LegacyCallInsideAnExecutorIsApplied: langchaingo's executor
// does not know the legacy updateWorkingMemory name (ExportTools offers
// only the update tool) and answers "not a valid tool"; that answer is not
// the tool's result, so the scratchpad still applies the legacy call when
// the turn is stored (it used to skip it as already run, and lose it).
func TestFit11_LegacyCallInsideAnExecutorIsApplied(t *testing.T) {
	wm, err := workingmemory.New(workingmemory.Config{Schema: `{"type":"object","properties":{"task":{"type":"string"}}}`})
	if err != nil {
		t.Fatal(err)
	}
	st := newInitStack(t, wm)
	mem := chainmemory.New(st, chainmemory.Config{})
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call(workingmemory.LegacyFunction, `{"task":"write the docs"}`))),
		agenttest.Reply(agenttest.Text("Noted.")),
	)
	agent := agents.NewOpenAIFunctionsAgent(model, chainmemory.ExportTools(st))
	exec := agents.NewExecutor(agent, agents.WithMemory(mem), agents.WithReturnIntermediateSteps())
	if _, err := chains.Call(t.Context(), exec, map[string]any{"input": "Remember to write the docs."}); err != nil {
		t.Fatal(err)
	}
	live, _ := layer.Find[*workingmemory.Layer](st, workingmemory.DefaultID)
	if got := fmt.Sprint(live.State()); got != "map[task:write the docs]" {
		t.Fatalf("state %s, want the legacy update applied", got)
	}
}
