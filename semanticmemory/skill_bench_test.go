package semanticmemory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// bytesStore counts the bytes written to a store.
type bytesStore struct {
	storage.Store
	written int64
}

func (s *bytesStore) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	s.written += int64(len(key) + len(value))
	return s.Store.Put(ctx, key, value, ifVersion)
}

// BenchmarkSkillStep is skill extraction's work per step, on a store
// holding the skills of the 100-turn CMS conversation:
//
//   - tool-step: a step with one tool call (its arguments abstracted, the
//     call taken into the turn's sequence; no I/O);
//   - answer-step: a step without tool calls (the answer) in a turn that
//     called no tool (nothing to learn; no I/O);
//   - skill-turn: a whole successful turn of two calls whose sequence is
//     a skill already (the third step finds the skill by its signature in
//     the index and writes its next version);
//   - candidate-turn: a whole successful turn of a sequence seen for the
//     first time (the candidate record read and written).
//
// written-B/op is what the step or turn writes to the store.
func BenchmarkSkillStep(b *testing.B) {
	ctx := context.Background()
	setup := func(b *testing.B) (*semanticmemory.Layer, *bytesStore) {
		turns := loadCMS100(b)
		store := &bytesStore{Store: storage.NewMemoryStore()}
		tmpl := newSkillLayer(b, semanticmemory.Config{})
		run(b, tmpl, store, "northwind", turns, 0)
		l := boundTo(b, tmpl, store, "northwind", "bench")
		store.written = 0
		return l, store
	}
	publish := workflow(1, "bench", nil)[0].steps(0)
	report := func(b *testing.B, store *bytesStore) {
		b.ReportMetric(float64(store.written)/float64(b.N), "written-B/op")
	}
	b.Run("tool-step", func(b *testing.B) {
		l, store := setup(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			st := publish[1]
			st.Step = i + 1 // one long turn; past MaxSteps it is no skill, and still followed
			if err := l.Store(ctx, st); err != nil {
				b.Fatal(err)
			}
		}
		report(b, store)
	})
	b.Run("answer-step", func(b *testing.B) {
		l, store := setup(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := l.Store(ctx, layer.Turn{Query: fmt.Sprintf("hello %d", i), Response: "Hi."}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, store)
	})
	b.Run("skill-turn", func(b *testing.B) {
		l, store := setup(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			for _, st := range publish {
				st.Query = fmt.Sprintf("Publish page-%d", i)
				if err := l.Store(ctx, st); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, store)
	})
	b.Run("candidate-turn", func(b *testing.B) {
		l, store := setup(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			for _, st := range publish {
				st.Query = fmt.Sprintf("Publish page-%d", i)
				if len(st.Results) > 0 {
					st.Results = []layer.ToolResult{st.Results[0]}
					st.Results[0].Name = fmt.Sprintf("cms_tool%d", i) // a new sequence each turn
					st.ToolCalls = []layer.ToolCall{st.Results[0].ToolCall}
				}
				if err := l.Store(ctx, st); err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b, store)
	})
}

// BenchmarkSkillRecall is Recall of a request that matches a skill, on
// a resource holding the 12 skills of the 100-turn CMS conversation and
// 10,000 other facts: skills are found through the index like any
// fact.
func BenchmarkSkillRecall(b *testing.B) {
	store := storage.NewMemoryStore()
	corpusOn(b, store, 10_000) // resource user-1
	tmpl := newSkillLayer(b, semanticmemory.Config{})
	run(b, tmpl, store, "user-1", loadCMS100(b), 0)
	l := boundTo(b, tmpl, store, "user-1", "bench")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		items, err := l.Recall(ctx, layer.Query{Text: "Publish the Journal page", Budget: layer.Unbounded})
		if err != nil || len(items) == 0 {
			b.Fatalf("Recall = %v, %v", items, err)
		}
	}
}
