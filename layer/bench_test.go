package layer_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/memlayer/memlayer/layer"
)

// noopLayer is the benchmark baseline: it recalls one fixed item, stores
// nothing and provides one function that does nothing.
type noopLayer struct {
	spec  layer.Spec
	items []layer.Item
}

func (n *noopLayer) Spec() layer.Spec { return n.spec }

func (n *noopLayer) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	return n.items, nil
}

func (n *noopLayer) Store(context.Context, layer.Turn) error { return nil }

func (n *noopLayer) Functions() []layer.Function {
	return []layer.Function{{
		Name: "noop",
		Call: func(context.Context, json.RawMessage) (string, error) { return "ok", nil },
	}}
}

func newBenchStack(b *testing.B) *layer.Stack {
	b.Helper()
	var ls []layer.Layer
	for i, id := range []string{"alpha", "beta", "gamma"} {
		ls = append(ls, &noopLayer{
			spec:  layer.Spec{ID: id, Slot: 100 + i},
			items: []layer.Item{{Text: id, Tokens: 1}},
		})
	}
	s, err := layer.NewStack(layer.StackConfig{Layers: ls, Env: layer.Env{ThreadID: "t"}})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Init(b.Context()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close(context.Background()) })
	return s
}

func BenchmarkStackRecall(b *testing.B) {
	s := newBenchStack(b)
	ctx := b.Context()
	q := layer.Query{Text: "hello"}
	b.ReportAllocs()
	for b.Loop() {
		out, err := s.Recall(ctx, q, nil)
		if err != nil || len(out) != 3 {
			b.Fatalf("Recall = %d results, %v", len(out), err)
		}
	}
}

func BenchmarkStackStore(b *testing.B) {
	s := newBenchStack(b)
	ctx := b.Context()
	t := layer.Turn{Query: "hello", Response: "hi"}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Store(ctx, t); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallTool(b *testing.B) {
	s := newBenchStack(b)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		out, err := s.CallTool(ctx, "beta_noop", `{"x":1}`)
		if err != nil || out != "ok" {
			b.Fatalf("CallTool = %q, %v", out, err)
		}
	}
}

func BenchmarkToolName(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = layer.ToolName("working-memory", "update")
	}
}
