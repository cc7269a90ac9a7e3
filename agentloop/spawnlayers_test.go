package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/workingmemory"
)

// probeLayer records the env its Init gets and counts Closes.
type probeLayer struct {
	id  string
	mu  *sync.Mutex
	env *[]layer.Env
	cls *int
}

func newProbe(id string) *probeLayer {
	return &probeLayer{id: id, mu: &sync.Mutex{}, env: new([]layer.Env), cls: new(int)}
}

func (p *probeLayer) Spec() layer.Spec {
	return layer.Spec{ID: p.id, Slot: 300, Scope: layer.ScopeThread, Budget: layer.Budget{Max: 100}}
}

func (p *probeLayer) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	p.mu.Lock()
	*p.env = append(*p.env, env)
	p.mu.Unlock()
	return p, nil
}

func (p *probeLayer) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	return []layer.Item{{Text: "probe " + p.id + " is here"}}, nil
}

func (p *probeLayer) Close(context.Context) error {
	p.mu.Lock()
	*p.cls++
	p.mu.Unlock()
	return nil
}

func (p *probeLayer) inits() []layer.Env {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(*p.env)
}

const childPrompt = "You are the child."

// TestFit05_SpawnLayersFromCode: code spawning a child through ToolContext.Spawn
// gives it extra layers of its own (SpawnInput.Layers) and picks offered
// ones by ID (SpawnInput.LayerIDs); they are initialised with the child's
// env, shown in the child's prompt, and closed when the child ends. The
// parent has none of them.
func TestFit05_SpawnLayersFromCode(t *testing.T) {
	own := newProbe("own-probe")
	offered := newProbe("offered-probe")
	plan, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{ID: "plan"}, Template: "1. outline"})
	if err != nil {
		t.Fatal(err)
	}
	var spawnErr error
	delegate := agentloop.NewContextTool("delegate", "Delegate.", nil,
		func(ctx context.Context, run *agentloop.ToolContext, _ struct{}) (string, error) {
			_, spawnErr = run.Spawn(ctx, agentloop.SpawnInput{Instructions: childPrompt, Input: "x", LayerIDs: []string{"nope"}})
			res, err := run.Spawn(ctx, agentloop.SpawnInput{
				Instructions: childPrompt, Input: "work", Layers: []layer.Layer{own, plan}, LayerIDs: []string{"offered-probe"},
			})
			if err != nil {
				return "", err
			}
			return res.Output, nil
		})
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		child := strings.HasPrefix(r.System(), childPrompt)
		switch {
		case child:
			ok := strings.Contains(r.System(), "probe own-probe is here") && strings.Contains(r.System(), "probe offered-probe is here") &&
				strings.Contains(r.System(), "<plan>") && r.HasTool("plan_update")
			if ok {
				return agenttest.Text("child has its layers"), nil
			}
			return agenttest.Text("child lacks layers: " + strings.Join(r.ToolNames(), ",")), nil
		case len(r.ToolResults()) == 0:
			if strings.Contains(r.System(), "probe") || r.HasTool("plan_update") {
				return agenttest.Text("parent has a child's layer"), nil
			}
			return agenttest.Calls(agenttest.Call("delegate", `{}`)), nil
		default:
			return agenttest.Text(r.ToolResults()[0].Content), nil
		}
	})
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{delegate}, SpawnLayers: []layer.Layer{offered}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "parent", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "child has its layers" {
		t.Fatalf("output %q", res.Output)
	}
	if !errors.Is(spawnErr, layer.ErrInvalidArguments) || !strings.Contains(spawnErr.Error(), `"nope"`) || !strings.Contains(spawnErr.Error(), "offered-probe") {
		t.Errorf("unknown layer ID: %v", spawnErr)
	}
	for _, p := range []*probeLayer{own, offered} {
		envs := p.inits()
		if len(envs) != 1 || !strings.HasPrefix(envs[0].ThreadID, "parent/child-1-") {
			t.Errorf("%s: Init envs = %+v, want one, the child's", p.id, envs)
		}
		if *p.cls != 1 {
			t.Errorf("%s closed %d times, want 1", p.id, *p.cls)
		}
	}
}

// TestFit06_SpawnToolLayers: the spawn_agent tool offers the configured
// SpawnLayers by ID (its schema enumerates them); the model picks one and
// the child has it; an ID not offered is a tool error that names the
// offered ones, and the run goes on. New rejects a spawn layer whose ID an
// agent layer has.
func TestFit06_SpawnToolLayers(t *testing.T) {
	research := newProbe("research-notes")
	plan, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{ID: "plan"}})
	if err != nil {
		t.Fatal(err)
	}
	var schema string
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if strings.HasPrefix(r.System(), childPrompt) {
			if strings.Contains(r.System(), "probe research-notes is here") && !r.HasTool("plan_update") {
				return agenttest.Text("child has research-notes only"), nil
			}
			return agenttest.Text("child has the wrong layers"), nil
		}
		for _, tl := range r.Options.Tools {
			if tl.Function != nil && tl.Function.Name == agentloop.SpawnToolName {
				b, _ := json.Marshal(tl.Function.Parameters)
				schema = string(b)
			}
		}
		switch res := r.ToolResults(); len(res) {
		case 0:
			if r.N == 0 {
				return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, map[string]any{"instructions": childPrompt, "input": "research", "layers": []string{"research-notes"}})), nil
			}
			return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, map[string]any{"instructions": childPrompt, "input": "research", "layers": []string{"memory-of-everything"}})), nil
		default:
			return agenttest.Text(res[0].Content), nil
		}
	})
	a := mustAgent(t, agentloop.Config{Model: model, SpawnLayers: []layer.Layer{research, plan}})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Output != "child has research-notes only" {
		t.Errorf("output %q", res.Output)
	}
	if !strings.Contains(schema, `"layers"`) || !strings.Contains(schema, `"enum":["research-notes","plan"]`) {
		t.Errorf("spawn tool schema does not enumerate the spawn layers: %s", schema)
	}
	res, err = a.Run(t.Context(), agentloop.RunInput{ThreadID: "t2", Input: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output, "/layers/0") || !strings.Contains(res.Output, "one of 'research-notes', 'plan'") {
		t.Errorf("tool result for an unknown layer ID = %q, want an error naming the argument and the offered IDs", res.Output)
	}
	if _, err := agentloop.New(agentloop.Config{Model: model, Layers: []layer.Layer{newProbe("plan")}, SpawnLayers: []layer.Layer{plan}}); !errors.Is(err, agentloop.ErrInvalidConfig) {
		t.Errorf("New with a spawn layer ID clashing with a layer: %v", err)
	}
}
