// Command scratchpad shows the schema-validated scratchpad: the model
// keeps a launch plan in working memory with the working_memory_update
// tool. An update that would break the plan's JSON Schema is rejected with
// every problem listed, the plan stays as it was, and the model corrects
// itself. It runs on a scripted model that reads the plan back from its
// system prompt, so the sloppy update and its correction happen on every
// run.
//
// To run the agent on a real model, set Config.Model in run to any
// langchaingo llms.Model, for example openai.New() from
// github.com/tmc/langchaingo/llms/openai, which reads OPENAI_API_KEY,
// OPENAI_MODEL and OPENAI_BASE_URL (an OpenAI-compatible server such as
// Ollama, http://localhost:11434/v1); the plan printed at the end comes
// from the scripted model's recorded requests, so record the prompts with
// a wrapping model instead (as examples/cms does).
//
// Usage:
//
//	go run ./examples/scratchpad
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/workingmemory"
)

// planSchema: a goal and steps, each with a title and a boolean done.
const planSchema = `{
  "type": "object",
  "properties": {
    "goal":  {"type": "string", "minLength": 3},
    "steps": {"type": "array", "maxItems": 5, "items": {
      "type": "object",
      "properties": {"title": {"type": "string"}, "done": {"type": "boolean"}},
      "required": ["title", "done"],
      "additionalProperties": false
    }}
  },
  "required": ["goal"],
  "additionalProperties": false
}`

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	plan, err := workingmemory.New(workingmemory.Config{Schema: planSchema})
	if err != nil {
		return err
	}
	model := agenttest.NewFunc(planner)
	agent, err := agentloop.New(agentloop.Config{
		Model:            model,
		Instructions:     "You plan work. Keep the plan in working memory.",
		Layers:           []layer.Layer{plan},
		DisableSpawnTool: true,
		Logger:           slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	for _, input := range []string{"Plan the product launch.", "The announcement is written. Update the plan."} {
		fmt.Fprintf(w, "\nuser: %s\n", input)
		res, err := agent.Run(ctx, agentloop.RunInput{ThreadID: "launch", Input: input})
		if err != nil {
			return err
		}
		printTools(w, res.Messages[len(res.Messages)-2*res.ToolCalls-1:])
		fmt.Fprintf(w, "assistant: %s\n", res.Output)
	}
	reqs := model.Requests()
	fmt.Fprintf(w, "\n--- working memory in the last prompt ---\n%s\n", blockOf(reqs[len(reqs)-1].System()))
	return nil
}

// printTools prints the tool calls and results of a turn's messages.
func printTools(w io.Writer, msgs []llms.MessageContent) {
	for _, m := range msgs {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				fmt.Fprintf(w, "  -> %s %s\n", p.FunctionCall.Name, p.FunctionCall.Arguments)
			case llms.ToolCallResponse:
				fmt.Fprintf(w, "  <- %s\n", p.Content)
			}
		}
	}
}

var block = regexp.MustCompile(`(?s)<working_memory>\n(.*)\n</working_memory>`)

func blockOf(system string) string {
	if m := block.FindStringSubmatch(system); m != nil {
		return m[1]
	}
	return ""
}

// planner is the scripted model. It reads the plan from its prompt.
func planner(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	cur, err := readPlan(r.System())
	if err != nil {
		return nil, err
	}
	res := r.ToolResults()
	switch {
	case strings.HasPrefix(r.LastUser(), "Plan") && len(res) == 0:
		return agenttest.Calls(agenttest.Call("working_memory_update", `{"goal":"Launch v2","steps":[`+
			`{"title":"Write the announcement","done":false},{"title":"Record the demo","done":false},`+
			`{"title":"Email customers","done":false}]}`)), nil
	case strings.HasPrefix(r.LastUser(), "The announcement") && len(res) == 0:
		// A sloppy first try: "yes" is not a boolean, and "owner" is not
		// in the schema.
		steps := cur.steps(func(_ string, done bool) any { return done })
		steps[0]["done"] = "yes"
		steps[0]["owner"] = "sam"
		return agenttest.Calls(agenttest.Call("working_memory_update", map[string]any{"steps": steps})), nil
	case len(res) > 0 && strings.HasPrefix(res[0].Content, "error:"):
		// Corrected from the error, starting from the plan in the prompt,
		// which the rejected update did not touch.
		steps := cur.steps(func(title string, done bool) any { return done || strings.Contains(title, "announcement") })
		return agenttest.Calls(agenttest.Call("working_memory_update", map[string]any{"steps": steps})), nil
	}
	return agenttest.Text(cur.String()), nil
}

// readPlan reads the plan from the working memory block of the system
// prompt; no block is an empty plan.
func readPlan(system string) (plan, error) {
	var cur plan
	if b := blockOf(system); b != "" {
		if err := json.Unmarshal([]byte(b), &cur); err != nil {
			return plan{}, fmt.Errorf("planner: cannot read the plan: %w", err)
		}
	}
	return cur, nil
}

// plan is the working memory's plan as the prompt shows it.
type plan struct {
	Goal  string `json:"goal"`
	Steps []struct {
		Title string `json:"title"`
		Done  bool   `json:"done"`
	} `json:"steps"`
}

// steps returns the plan's steps as an update writes them, each done as
// done says.
func (p plan) steps(done func(title string, done bool) any) []map[string]any {
	out := make([]map[string]any, len(p.Steps))
	for i, s := range p.Steps {
		out[i] = map[string]any{"title": s.Title, "done": done(s.Title, s.Done)}
	}
	return out
}

// String sums the plan up: its goal and open steps.
func (p plan) String() string {
	var open []string
	for _, s := range p.Steps {
		if !s.Done {
			open = append(open, s.Title)
		}
	}
	return fmt.Sprintf("Plan %q: %d of %d steps open (%s).", p.Goal, len(open), len(p.Steps), strings.Join(open, ", "))
}
