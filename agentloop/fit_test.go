package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/chainmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/workingmemory"
)

// TestFit01_LegacyUpdateCallIsTheTool: a legacy updateWorkingMemory call
// through the agent loop behaves as the update tool: the model gets the
// tool's result (not "unknown tool"), and the update is applied once (a
// "$delete" of an array index applied twice would remove two items).
func TestFit01_LegacyUpdateCallIsTheTool(t *testing.T) {
	wm, err := workingmemory.New(workingmemory.Config{
		Schema:   `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}},"n":{"type":"integer"}}}`,
		Template: map[string]any{"items": []any{"a", "b", "c"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call(workingmemory.LegacyFunction, `{"$delete":["items/0"]}`))),
		agenttest.Reply(agenttest.Calls(agenttest.Call(workingmemory.LegacyFunction, `{"n":"not a number"}`))),
		agenttest.Reply(agenttest.Text("done")),
	)
	a := mustAgent(t, agentloop.Config{Model: model, Layers: []layer.Layer{wm}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "drop the first item"})
	if err != nil {
		t.Fatal(err)
	}
	results := toolContents(res.Messages)
	if len(results) != 2 || results[0] != "Working memory updated." {
		t.Fatalf("tool results %q, want the update tool's result first", results)
	}
	if !strings.Contains(results[1], "/n") || strings.Contains(results[1], "unknown tool") {
		t.Fatalf("rejected legacy update: result %q, want the schema error naming /n", results[1])
	}
	sys := model.Requests()[2].System()
	if !strings.Contains(strings.Join(strings.Fields(sys), ""), `"items":["b","c"]`) {
		t.Fatalf("the update was not applied exactly once; the prompt shows:\n%s", sys)
	}
}

// providing is a layer that provides one function, for the New checks.
type providing struct {
	id     string
	fn     string
	params json.RawMessage
}

func (p providing) Spec() layer.Spec { return layer.Spec{ID: p.id} }
func (p providing) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	return nil, nil
}
func (p providing) Functions() []layer.Function {
	return []layer.Function{{
		Name: p.fn, Parameters: p.params,
		Call: func(context.Context, json.RawMessage) (string, error) { return "ok", nil },
	}}
}

// TestFit02_NewFindsEveryConfigProblem: each configuration problem New
// can see fails New with a sentinel, instead of the first Run.
func TestFit02_NewFindsEveryConfigProblem(t *testing.T) {
	model := agenttest.New(agenttest.Reply(agenttest.Text("ok")))
	wm, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	noop := func(context.Context, struct{}) (string, error) { return "", nil }
	cases := []struct {
		name string
		cfg  agentloop.Config
		want error
	}{
		{"nil layer", agentloop.Config{Layers: []layer.Layer{nil}}, layer.ErrInvalidSpec},
		{"bad layer id", agentloop.Config{Layers: []layer.Layer{layer.Text(layer.Spec{ID: "Not An ID"}, "x")}}, layer.ErrInvalidSpec},
		{"bad scope", agentloop.Config{Layers: []layer.Layer{layer.Text(layer.Spec{ID: "notes", Scope: "galaxy"}, "x")}}, layer.ErrInvalidSpec},
		{"duplicate layer", agentloop.Config{Layers: []layer.Layer{layer.Text(layer.Spec{ID: "notes"}, "x"), layer.Text(layer.Spec{ID: "notes"}, "y")}}, layer.ErrInvalidSpec},
		{"agent tool named as a layer tool's wire name", agentloop.Config{
			Layers: []layer.Layer{wm},
			Tools:  []agentloop.Tool{agentloop.NewTool("working_memory_update", "mine", nil, noop)},
		}, agentloop.ErrInvalidTool},
		{"layer tool sent as spawn_agent", agentloop.Config{
			Layers: []layer.Layer{providing{id: "spawn", fn: "agent"}},
		}, agentloop.ErrInvalidTool},
		{"layer tool schema does not compile", agentloop.Config{
			Layers: []layer.Layer{providing{id: "notes", fn: "add", params: json.RawMessage(`{"type":"objekt"}`)}},
		}, agentloop.ErrInvalidTool},
		{"response reserve fills the context window", agentloop.Config{ContextWindow: 1000, ResponseReserve: 1000}, agentloop.ErrInvalidConfig},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Model = model
			_, err := agentloop.New(c.cfg)
			if !errors.Is(err, c.want) {
				t.Fatalf("New: %v, want an error that is %v", err, c.want)
			}
			t.Log(err)
		})
	}
}

// TestFit03_NewToolInfersTheSchema: NewTool without parameters offers the
// model the schema of its Go input type (field names, types, required
// fields, descriptions from jsonschema tags), and the loop validates the
// arguments against it.
func TestFit03_NewToolInfersTheSchema(t *testing.T) {
	type createIn struct {
		Title string   `json:"title" jsonschema:"The page title."`
		Slug  string   `json:"slug,omitempty"`
		Tags  []string `json:"tags,omitempty"`
		Order int      `json:"order,omitempty"`
	}
	tool := agentloop.NewTool("cms_createPage", "Create a CMS page.", nil,
		func(ctx context.Context, in createIn) (string, error) { return "created " + in.Title, nil })
	var got map[string]any
	if err := json.Unmarshal(tool.Parameters, &got); err != nil {
		t.Fatalf("Parameters %s: %v", tool.Parameters, err)
	}
	props, _ := got["properties"].(map[string]any)
	title, _ := props["title"].(map[string]any)
	order, _ := props["order"].(map[string]any)
	if got["type"] != "object" || title["type"] != "string" || title["description"] != "The page title." || order["type"] != "integer" {
		t.Fatalf("inferred schema %s", tool.Parameters)
	}
	if req, _ := got["required"].([]any); len(req) != 1 || req[0] != "title" {
		t.Fatalf("required %v, want [title]", got["required"])
	}
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("cms_createPage", `{"order":"first"}`))),
		agenttest.Reply(agenttest.Text("done")),
	)
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{tool}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "create About"})
	if err != nil {
		t.Fatal(err)
	}
	offered := model.Requests()[0].Options.Tools[0].Function.Parameters
	if b, _ := json.Marshal(offered); !strings.Contains(string(b), `"title"`) {
		t.Fatalf("offered parameters %s", b)
	}
	if r := toolContents(res.Messages); len(r) != 1 || !strings.Contains(r[0], "title") || !strings.Contains(r[0], "/order") {
		t.Fatalf("result %q, want the schema errors for the missing title and the string order", r)
	}
}

// TestFit04_UninferableInputFailsNew: an input type the inference refuses
// makes New fail with ErrInvalidTool; an input that is not a struct
// accepts any object.
func TestFit04_UninferableInputFailsNew(t *testing.T) {
	bad := agentloop.NewTool("bad", "d", nil, func(ctx context.Context, in struct{ F func() }) (string, error) { return "", nil })
	_, err := agentloop.New(agentloop.Config{Model: agenttest.New(), Tools: []agentloop.Tool{bad}})
	if !errors.Is(err, agentloop.ErrInvalidTool) || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("New: %v, want ErrInvalidTool naming the tool", err)
	}
	raw := agentloop.NewTool("raw", "d", nil, func(ctx context.Context, in json.RawMessage) (string, error) { return string(in), nil })
	anyIn := agentloop.NewContextTool("any", "d", nil, func(ctx context.Context, _ *agentloop.ToolContext, in any) (string, error) { return "", nil })
	if raw.Parameters != nil || anyIn.Parameters != nil {
		t.Fatalf("parameters %s and %s, want nil (any object)", raw.Parameters, anyIn.Parameters)
	}
	if _, err := agentloop.New(agentloop.Config{Model: agenttest.New(), Tools: []agentloop.Tool{raw, anyIn}}); err != nil {
		t.Fatal(err)
	}
}

// TestFit05_ToolErrorsAreWrittenForTheModel: the tool result of a failed
// call carries no package prefixes ("layer: ", "agentloop: "), and a
// schema error about the update tool's nullable wrappers (anyOf [T, null])
// says what the scratchpad's schema wants; the Go errors keep their
// prefixes and sentinels.
func TestFit05_ToolErrorsAreWrittenForTheModel(t *testing.T) {
	wm, err := workingmemory.New(workingmemory.Config{
		Schema: `{"type":"object","properties":{"n":{"type":"integer"},"o":{"type":"object","properties":{"k":{"enum":["a","b"]}}}}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(
			agenttest.Call("working_memory_update", `{"n":"x","o":{"k":"c"}}`),
			agenttest.Call("nope", `{}`),
			agenttest.Call("working_memory_update", `[1]`),
		)),
		agenttest.Reply(agenttest.Text("done")),
	)
	a := mustAgent(t, agentloop.Config{Model: model, Layers: []layer.Layer{wm}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "x"})
	if err != nil {
		t.Fatal(err)
	}
	results := toolContents(res.Messages)
	if len(results) != 3 {
		t.Fatalf("results %q", results)
	}
	for _, r := range results {
		if !strings.HasPrefix(r, "error: ") || strings.Contains(r, "layer: ") || strings.Contains(r, "agentloop: ") || strings.Contains(r, "workingmemory: ") {
			t.Errorf("tool result with a package prefix:\n%s", r)
		}
	}
	t.Log(strings.Join(results, "\n"))
	schemaErr := results[0]
	for _, want := range []string{"at '/n': got string, want integer", "at '/o/k': value must be one of 'a', 'b'"} {
		if !strings.Contains(schemaErr, want) {
			t.Errorf("schema error lacks %q:\n%s", want, schemaErr)
		}
	}
	if strings.Contains(schemaErr, "want null") || strings.Contains(schemaErr, "anyOf") {
		t.Errorf("schema error talks about the tool's nullable wrappers:\n%s", schemaErr)
	}
	// The Go errors keep their prefixes and sentinels.
	st, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{wm}, Env: layer.Env{ThreadID: "t"}, ValidateArgs: agentloop.ValidateArgs})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer st.Close(t.Context())
	_, err = st.CallTool(t.Context(), "working_memory_update", `{"n":"x"}`)
	if !errors.Is(err, layer.ErrInvalidArguments) || !strings.HasPrefix(err.Error(), "layer: ") {
		t.Fatalf("CallTool: %v, want the layer error with its prefix", err)
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("CallTool: %v does not unwrap to the validator's error", err)
	}
	out, _ := chainmemory.ExportTools(st)[0].Call(t.Context(), `{"n":"x"}`)
	if !strings.HasPrefix(out, "error: ") || strings.Contains(out, "layer: ") || strings.Contains(out, "anyOf") {
		t.Fatalf("exported tool result %q", out)
	}
}

// lateProvider provides its functions only after Init.
type lateProvider struct{ providing }

func (lateProvider) Functions() []layer.Function { panic("not initialised") }

// TestFit09_NewSurvivesProvidesBeforeInit: a layer whose Provides cannot
// run before Init does not make New panic.
func TestFit09_NewSurvivesProvidesBeforeInit(t *testing.T) {
	_, err := agentloop.New(agentloop.Config{Model: agenttest.New(), Layers: []layer.Layer{lateProvider{providing{id: "late", fn: "f"}}}})
	if err != nil {
		t.Fatal(err)
	}
}
