package layer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

var wirePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		id, fn string
		want   string // "" means: check only validity
	}{
		{"working_memory", "update", "working_memory_update"},
		{"working-memory", "update", "working-memory_update"},
		{"entities", "list", "entities_list"},
		{"plain_name", "x-1", "plain_name_x-1"},
		{"a.b", "c d", "a_b_c_d"},
		{"mémoire", "écrire", "m__moire___crire"},
		{"", "", "_"},
		{strings.Repeat("a", 31), strings.Repeat("b", 32), strings.Repeat("a", 31) + "_" + strings.Repeat("b", 32)},
		{long, "a", ""},
		{"日本語", "ツール", ""},
	}
	for _, tt := range tests {
		got := layer.ToolName(tt.id, tt.fn)
		if !wirePattern.MatchString(got) {
			t.Errorf("ToolName(%q, %q) = %q, not ^[a-zA-Z0-9_-]{1,64}$", tt.id, tt.fn, got)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tt.id, tt.fn, got, tt.want)
		}
	}
	// Long names that share a 64-byte prefix stay distinct.
	a, b := layer.ToolName(long, "a"), layer.ToolName(long, "b")
	if a == b || len(a) != 64 {
		t.Errorf("long names: %q and %q", a, b)
	}
}

func FuzzToolName(f *testing.F) {
	for _, s := range [][2]string{{"working-memory", "update"}, {"", ""}, {"日本語", "x"}, {strings.Repeat("ab/", 40), "f"}, {"\x00\xff", "y"}, {"a-b_c", "d"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, id, fn string) {
		got := layer.ToolName(id, fn)
		if !wirePattern.MatchString(got) {
			t.Fatalf("ToolName(%q, %q) = %q", id, fn, got)
		}
		if plain := id + "_" + fn; wirePattern.MatchString(plain) && got != plain {
			t.Fatalf("ToolName changed the valid name %q to %q", plain, got)
		}
	})
}

// P5: a layer's functions become tools named ToolName(id, fn); that name
// and "<id>/<fn>" both call them.
func TestTools(t *testing.T) {
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{newCounter("second", 2), newCounter("first", 1), layer.Text(layer.Spec{ID: "text"}, "x")}})
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Name)
	}
	equal(t, "tool names", names, []string{"first_increment", "first_peek", "second_increment", "second_peek"})
	tl, ok := toolNamed(s, layer.ToolName("first", "increment"))
	if !ok || tl.Name != "first_increment" || tl.Description != "Adds amount to the counter." || tl.Call == nil {
		t.Errorf("tool first_increment = %+v, %v", tl, ok)
	}

	// P2: by name and by wire name.
	if got, err := s.CallTool(t.Context(), "first/increment", `{"amount":5}`); err != nil || got != "5" {
		t.Fatalf("CallTool(name) = %q, %v", got, err)
	}
	if got, err := s.CallTool(t.Context(), "first_increment", ` {"amount": 3} `); err != nil || got != "8" {
		t.Fatalf("CallTool(wire) = %q, %v", got, err)
	}
	if got, _ := s.CallTool(t.Context(), "second/peek", ""); got != "0" {
		t.Errorf("second/peek = %s: the call reached the wrong layer", got)
	}
	// P1: code reads live state through Find.
	if v, err := counterValue(s, "first"); err != nil || v != 8 {
		t.Errorf("value = %v, %v; want 8", v, err)
	}
	for _, id := range []string{"ghost", "text"} {
		if _, err := counterValue(s, id); err == nil {
			t.Errorf("counterValue(%s) succeeded", id)
		}
	}
	// A function error is returned for the model to read.
	_, err := s.CallTool(t.Context(), "first/increment", `{"amount":"lots"}`)
	var le *layer.Error
	if !errors.As(err, &le) || le.Hook != "tool" || le.Layer != "first" || !strings.Contains(err.Error(), "amount must be an integer") {
		t.Errorf("CallTool(bad amount) = %v", err)
	}
}

// probeFn provides one function that counts its calls.
type probeFn struct {
	spec  layer.Spec
	calls atomic.Int32
	fns   []layer.Function
}

func (p *probeFn) Spec() layer.Spec                                          { return p.spec }
func (p *probeFn) Recall(context.Context, layer.Query) ([]layer.Item, error) { return nil, nil }
func (p *probeFn) Functions() []layer.Function {
	if p.fns != nil {
		return p.fns
	}
	return []layer.Function{{
		Name:       "do",
		Parameters: json.RawMessage(`{"type":"object","required":["x"]}`),
		Call: func(_ context.Context, args json.RawMessage) (string, error) {
			p.calls.Add(1)
			return string(args), nil
		},
	}}
}

// P3: arguments that are not a JSON object, or that fail the schema, are
// refused before the function runs.
func TestCallToolInvalidArguments(t *testing.T) {
	p := &probeFn{spec: layer.Spec{ID: "probe"}}
	var validated []string
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{p}, ValidateArgs: func(schema json.RawMessage, args []byte) error {
		validated = append(validated, string(args))
		if !strings.Contains(string(schema), `"required":["x"]`) {
			return fmt.Errorf("validator got schema %s", schema)
		}
		var m map[string]any
		if err := json.Unmarshal(args, &m); err != nil {
			return err
		}
		if _, ok := m["x"]; !ok {
			return errors.New("missing property x")
		}
		return nil
	}})
	for _, args := range []string{`not json`, `{"x":`, `[1,2]`, `"x"`, `null`, `42`, `true`, `{}`, `{"y":1}`, `{"x":1} {"x":2}`} {
		_, err := s.CallTool(t.Context(), "probe/do", args)
		if !errors.Is(err, layer.ErrInvalidArguments) {
			t.Errorf("CallTool(%s) = %v, want ErrInvalidArguments", args, err)
		}
	}
	if n := p.calls.Load(); n != 0 {
		t.Fatalf("function ran %d times on invalid arguments", n)
	}
	equal(t, "validated", validated, []string{`{}`, `{"y":1}`})
	got, err := s.CallTool(t.Context(), "probe_do", `{"x":1}`)
	if err != nil || got != `{"x":1}` || p.calls.Load() != 1 {
		t.Errorf("valid call = %q, %v (calls %d)", got, err, p.calls.Load())
	}
	if _, err := s.CallTool(t.Context(), "probe/missing", `{}`); !errors.Is(err, layer.ErrUnknownTool) {
		t.Errorf("unknown tool = %v", err)
	}
	if _, err := s.CallTool(t.Context(), "", `{}`); !errors.Is(err, layer.ErrUnknownTool) {
		t.Errorf("empty tool name = %v", err)
	}
}

// Without ValidateArgs, only the JSON-object check applies and empty
// arguments mean {}.
func TestCallToolWithoutValidator(t *testing.T) {
	p := &probeFn{spec: layer.Spec{ID: "probe"}}
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{p}})
	if got, err := s.CallTool(t.Context(), "probe/do", "  "); err != nil || got != "{}" {
		t.Errorf("empty args = %q, %v; want {}", got, err)
	}
	if _, err := s.CallTool(t.Context(), "probe/do", "[]"); !errors.Is(err, layer.ErrInvalidArguments) {
		t.Errorf("array args = %v", err)
	}
}

// Functions without a name or Call, and repeated names, are left out;
// colliding wire names are told apart.
func TestToolsEdgeCases(t *testing.T) {
	ok := func(s string) func(context.Context, json.RawMessage) (string, error) {
		return func(context.Context, json.RawMessage) (string, error) { return s, nil }
	}
	p := &probeFn{spec: layer.Spec{ID: "edge"}, fns: []layer.Function{
		{Name: "", Call: ok("nameless")},
		{Name: "nocall"},
		{Name: "a.b", Call: ok("dot")},
		{Name: "a b", Call: ok("space")},
		{Name: "a.b", Call: ok("repeat")},
		{Name: strings.Repeat("long", 20) + "1", Call: ok("long1")},
		{Name: strings.Repeat("long", 20) + "2", Call: ok("long2")},
	}}
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{p}})
	tools := s.Tools()
	if len(tools) != 4 {
		t.Fatalf("tools = %+v, want 4", tools)
	}
	seen := map[string]bool{}
	for _, tl := range tools {
		if !wirePattern.MatchString(tl.Name) || seen[tl.Name] {
			t.Errorf("tool name %q invalid or repeated", tl.Name)
		}
		seen[tl.Name] = true
		want, _ := tl.Call(t.Context(), nil)
		got, err := s.CallTool(t.Context(), tl.Name, "")
		if err != nil || got != want {
			t.Errorf("CallTool(%s) = %q, %v; want %q", tl.Name, got, err, want)
		}
	}
	if got, _ := s.CallTool(t.Context(), "edge/a.b", ""); got != "dot" {
		t.Errorf("repeated name: got %q, want the first (dot)", got)
	}
}

func TestToolsBeforeInit(t *testing.T) {
	s := mustStack(t, layer.StackConfig{Layers: []layer.Layer{newCounter("c", 0)}})
	if n := len(s.Tools()); n != 0 {
		t.Errorf("Tools before Init = %d", n)
	}
	if _, err := s.CallTool(t.Context(), "c/peek", ""); !errors.Is(err, layer.ErrClosed) {
		t.Errorf("CallTool before Init = %v", err)
	}
	if _, ok := layer.Find[layer.Provider](s, "c"); ok {
		t.Error("Find before Init found the layer")
	}
}
