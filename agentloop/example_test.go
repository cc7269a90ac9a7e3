package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/chainmemory"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// A typed weather tool; the scripted model calls it, then answers with
// what it returned.
func ExampleAgent_Run() {
	type in struct {
		City string `json:"city"`
	}
	weather := agentloop.NewTool("weather", "Current weather in a city.",
		json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
		func(ctx context.Context, a in) (map[string]any, error) {
			return map[string]any{"city": a.City, "sky": "clear", "celsius": 21}, nil
		})
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if res := r.ToolResults(); len(res) > 0 {
			return agenttest.Text("It is " + res[0].Content), nil
		}
		return agenttest.Calls(agenttest.Call("weather", `{"city":"Lyon"}`)), nil
	})
	agent, err := agentloop.New(agentloop.Config{Model: model, Instructions: "You report the weather.", Tools: []agentloop.Tool{weather}})
	if err != nil {
		panic(err)
	}
	res, err := agent.Run(context.Background(), agentloop.RunInput{ThreadID: "demo", Input: "Weather in Lyon?"})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Output)
	fmt.Println(res.Steps, "steps,", res.ToolCalls, "tool call")
	// Output:
	// It is {"celsius":21,"city":"Lyon","sky":"clear"}
	// 2 steps, 1 tool call
}

// Layers put memory into the system prompt; their functions become
// tools named by wire name.
func ExampleConfig_layers() {
	rules := layer.Text(layer.Spec{ID: "house-rules", Slot: 90}, "<rules>Never delete pages.</rules>")
	model := agenttest.New(agenttest.Reply(agenttest.Text("ok")))
	agent, _ := agentloop.New(agentloop.Config{Model: model, Instructions: "You edit a CMS.", Layers: []layer.Layer{rules}, DisableSpawnTool: true})
	if _, err := agent.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: "hi"}); err != nil {
		panic(err)
	}
	fmt.Println(model.Requests()[0].System())
	// Output:
	// You edit a CMS.
	//
	// <rules>Never delete pages.</rules>
}

// A limit stops the run with an error that carries the partial result.
func ExampleLimitError() {
	again := agenttest.Reply(agenttest.Calls(agenttest.Call("ping", "")))
	ping := agentloop.Tool{Name: "ping", Call: func(context.Context, json.RawMessage) (string, error) { return "pong", nil }}
	agent, _ := agentloop.New(agentloop.Config{Model: agenttest.New(again, again, again), Tools: []agentloop.Tool{ping}, MaxSteps: 2})
	res, err := agent.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	var limit *agentloop.LimitError
	fmt.Println(errors.Is(err, agentloop.ErrMaxSteps), errors.As(err, &limit), res.Steps, res.ToolCalls)
	// Output:
	// true true 2 2
}

// A thread continues in a new Agent (a new process) on the same store.
func ExampleAgent_Run_resume() {
	store := storage.NewMemoryStore()
	echo := func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Text(fmt.Sprintf("message %d", (len(r.Messages)+1)/2)), nil
	}
	for range 2 {
		agent, _ := agentloop.New(agentloop.Config{Model: agenttest.NewFunc(echo), Store: store})
		res, err := agent.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: "hello"})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Output, "-", len(res.Messages), "messages in the thread")
	}
	// Output:
	// message 1 - 2 messages in the thread
	// message 2 - 4 messages in the thread
}

// The model delegates a subtask with the spawn_agent tool; the child's
// answer is the tool result.
func ExampleAgent_Spawn() {
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if strings.HasPrefix(r.System(), "You count letters.") {
			return agenttest.Text(fmt.Sprint(len(r.LastUser()))), nil
		}
		if res := r.ToolResults(); len(res) > 0 {
			return agenttest.Text("The child counted " + res[0].Content), nil
		}
		return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, `{"instructions":"You count letters.","input":"memlayer"}`)), nil
	})
	agent, _ := agentloop.New(agentloop.Config{Model: model})
	res, _ := agent.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: "How long is memlayer?"})
	fmt.Println(res.Output)

	// From code, outside a run: the parent is the thread's stack.
	child, _ := agent.Spawn(context.Background(), agentloop.SpawnInput{ThreadID: "t", Instructions: "You count letters.", Input: "agent"})
	fmt.Println(child.Output)
	// Output:
	// The child counted 8
	// 5
}

// A langchaingo tools.Tool takes one string.
func ExampleFromLangchain() {
	tool := agentloop.FromLangchain(upper{})
	out, _ := tool.Call(context.Background(), json.RawMessage(`{"input":"hello"}`))
	fmt.Println(tool.Name, string(tool.Parameters) != "", out)
	// Output:
	// upper true HELLO
}

type upper struct{}

func (upper) Name() string        { return "upper" }
func (upper) Description() string { return "Upper-cases its input." }
func (upper) Call(_ context.Context, s string) (string, error) {
	return strings.ToUpper(s), nil
}

func ExampleValidateArgs() {
	schema := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]}`)
	fmt.Println(agentloop.ValidateArgs(schema, []byte(`{"n":3}`)))
	fmt.Println(agentloop.ValidateArgs(schema, []byte(`{"n":0}`)) != nil)
	anyObject := json.RawMessage(`{"type":"object"}`)
	fmt.Println(agentloop.ValidateArgs(anyObject, []byte(`{}`)), agentloop.ValidateArgs(anyObject, []byte(`[]`)) != nil)
	// Output:
	// <nil>
	// true
	// <nil> true
}

// chainmemory.New lets a layer stack serve as langchaingo memory;
// chainmemory.ExportTools offers its functions as langchaingo tools.
func Example_langchaingoMemory() {
	notes := layer.Text(layer.Spec{ID: "profile"}, "<profile>Prefers short answers.</profile>")
	st, _ := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{notes}, Env: layer.Env{ThreadID: "t"}, ValidateArgs: agentloop.ValidateArgs})
	_ = st.Init(context.Background())
	defer st.Close(context.Background())

	mem := chainmemory.New(st, chainmemory.Config{})
	vars, _ := mem.LoadMemoryVariables(context.Background(), map[string]any{"input": "hi"})
	fmt.Println(vars["history"])
	fmt.Println(len(chainmemory.ExportTools(st)), "tools")
	// Output:
	// <profile>Prefers short answers.</profile>
	// 0 tools
}

// NewTool decodes the arguments into a Go value and encodes a non-string
// result as JSON; the agent checks the arguments against the schema first.
func ExampleNewTool() {
	type args struct {
		A, B int
	}
	add := agentloop.NewTool("add", "Add two integers.",
		json.RawMessage(`{"type":"object","properties":{"A":{"type":"integer"},"B":{"type":"integer"}},"required":["A","B"]}`),
		func(ctx context.Context, in args) (map[string]int, error) {
			return map[string]int{"sum": in.A + in.B}, nil
		})
	out, err := add.Call(context.Background(), json.RawMessage(`{"A":2,"B":3}`))
	fmt.Println(add.Name, out, err)
	// Output:
	// add {"sum":5} <nil>
}

// Without explicit parameters, NewTool infers the JSON Schema from the
// input type: JSON field names, types, required fields (those without
// omitempty) and descriptions from jsonschema tags.
func ExampleNewTool_inferredSchema() {
	type createPage struct {
		Title  string   `json:"title" jsonschema:"The page title, shown in menus."`
		Slug   string   `json:"slug,omitempty" jsonschema:"The URL path; derived from the title when empty."`
		Tags   []string `json:"tags,omitempty"`
		Weight int      `json:"weight,omitempty"`
	}
	tool := agentloop.NewTool("cms_createPage", "Create a CMS page.", nil,
		func(ctx context.Context, in createPage) (string, error) { return "created " + in.Title, nil })
	var out bytes.Buffer
	_ = json.Indent(&out, tool.Parameters, "", "  ")
	fmt.Println(out.String())
	// Output:
	// {
	//   "type": "object",
	//   "properties": {
	//     "title": {
	//       "type": "string",
	//       "description": "The page title, shown in menus."
	//     },
	//     "slug": {
	//       "type": "string",
	//       "description": "The URL path; derived from the title when empty."
	//     },
	//     "tags": {
	//       "type": [
	//         "null",
	//         "array"
	//       ],
	//       "items": {
	//         "type": "string"
	//       }
	//     },
	//     "weight": {
	//       "type": "integer"
	//     }
	//   },
	//   "required": [
	//     "title"
	//   ],
	//   "additionalProperties": false
	// }
}

// The checkpoint of a thread holds its history and the layers' state.
func ExampleAgent_LoadCheckpoint() {
	agent, _ := agentloop.New(agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("hi!")))})
	if _, err := agent.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: "hello"}); err != nil {
		panic(err)
	}
	ck, err := agent.LoadCheckpoint(context.Background(), "t")
	if err != nil {
		panic(err)
	}
	for _, m := range ck.Messages {
		fmt.Println(m.Role, m.Text)
	}
	fmt.Println(ck.Steps, "step")
	// Output:
	// user hello
	// assistant hi!
	// 1 step
}

// Layer functions as langchaingo tools, for an agents.Executor.
func ExampleExportTools() {
	counter := 0
	l := &countLayer{n: &counter}
	st, _ := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{l}, Env: layer.Env{ThreadID: "t"}, ValidateArgs: agentloop.ValidateArgs})
	_ = st.Init(context.Background())
	defer st.Close(context.Background())
	for _, tool := range chainmemory.ExportTools(st) {
		out, _ := tool.Call(context.Background(), `{"by":2}`)
		bad, _ := tool.Call(context.Background(), `{"by":"two"}`)
		fmt.Println(tool.Name(), out, strings.HasPrefix(bad, "error:"))
	}
	// Output:
	// counter_add 2 true
}

// countLayer provides one function, "add".
type countLayer struct{ n *int }

func (c *countLayer) Spec() layer.Spec { return layer.Spec{ID: "counter"} }
func (c *countLayer) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	return nil, nil
}
func (c *countLayer) Functions() []layer.Function {
	return []layer.Function{{
		Name:        "add",
		Description: "Add to the counter.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"by":{"type":"integer"}},"required":["by"]}`),
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct{ By int }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			*c.n += in.By
			return fmt.Sprint(*c.n), nil
		},
	}}
}

// A window of one turn: once a turn has left it, the deterministic
// summary (no model needed) carries its request, tool call and IDs in
// the history_summary block of the system prompt.
func Example_history() {
	create := agentloop.Tool{Name: "createPage", Call: func(_ context.Context, args json.RawMessage) (string, error) {
		return `{"page":{"id":"page_7","title":"About"}}`, nil
	}}
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if len(r.ToolResults()) > 0 || r.LastUser() != "Create the About page" {
			return agenttest.Text("ok"), nil
		}
		return agenttest.Calls(agenttest.Call("createPage", `{"title":"About"}`)), nil
	})
	agent, err := agentloop.New(agentloop.Config{Model: model, Tools: []agentloop.Tool{create},
		History: history.Config{MaxTurns: 1, SummarizeAfter: 1}})
	if err != nil {
		panic(err)
	}
	for _, in := range []string{"Create the About page", "Thanks", "Anything else?"} {
		if _, err := agent.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: in}); err != nil {
			panic(err)
		}
	}
	system := model.Requests()[len(model.Requests())-1].System()
	fmt.Println(system[strings.Index(system, "<history_summary>"):])
	// Output:
	// <history_summary>
	// - User: Create the About page | createPage (call call_0_0) → page_7 "About" | answer: ok
	// </history_summary>
}
