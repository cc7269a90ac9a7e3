package agentloop_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/tmc/langchaingo/llms"
)

// BenchmarkAssembledRun measures a one-step run on a new thread of a user
// whose semantic memory holds 40 facts and whose episodic log holds 40
// calls, with scored assembly on (the default): the candidates of both
// layers, the packing and the blocks. One op is a whole run.
func BenchmarkAssembledRun(b *testing.B) {
	store := storage.NewMemoryStore()
	newAgent := func(model *agenttest.Model) *agentloop.Agent {
		sem, err := semanticmemory.New(semanticmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
		if err != nil {
			b.Fatal(err)
		}
		eps, err := episodicmemory.New(episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
		if err != nil {
			b.Fatal(err)
		}
		return mustAgent(b, agentloop.Config{Model: model, Store: store, MaxSteps: 64, Layers: []layer.Layer{sem, eps}, Logger: slog.New(slog.DiscardHandler),
			Assembly: agentloop.AssemblyConfig{Scoring: prompt.Scoring{Now: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}}})
	}
	var steps []agenttest.Step
	for i := range 40 {
		steps = append(steps, agenttest.Reply(agenttest.Calls(agenttest.Call(semanticmemory.DefaultID+"_memorize",
			fmt.Sprintf(`{"text":"Site %d of the user is hosted in region r%d and owned by team t%d.","kind":"fact"}`, i, i%7, i%11)))))
	}
	seed := newAgent(agenttest.New(append(steps, agenttest.Reply(agenttest.Text("Noted.")))...))
	ctx := context.Background()
	if _, err := seed.Run(ctx, agentloop.RunInput{ThreadID: "seed", ResourceID: "u", Input: "Remember my sites."}); err != nil {
		b.Fatal(err)
	}
	a := newAgent(agenttest.NewFunc(func(context.Context, agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Text("Region r3."), nil
	}))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: fmt.Sprintf("t%d", n), ResourceID: "u", Input: "Where is site 17 hosted?"}); err != nil {
			b.Fatal(err)
		}
	}
}
