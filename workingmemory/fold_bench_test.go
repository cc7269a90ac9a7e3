package workingmemory_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// BenchmarkRecallOverBudget: Recall of a 40-task scratchpad (about 1,900
// tokens) within a 1,200-token budget, which folds its oldest tasks
// (once per state and budget with the default estimate, at every call
// with a counter of one's own), and within an unbounded one, which
// serves the cached block.
func BenchmarkRecallOverBudget(b *testing.B) {
	tmpl, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		b.Fatal(err)
	}
	bound, err := tmpl.Init(b.Context(), layer.Env{ThreadID: "t", Store: storage.NewMemoryStore()})
	if err != nil {
		b.Fatal(err)
	}
	l := bound.(*workingmemory.Layer)
	tasks := make([]map[string]any, 40)
	for i := range tasks {
		tasks[i] = map[string]any{"id": fmt.Sprintf("task-%02d", i), "title": fmt.Sprint("Export section ", i), "status": "open",
			"notes": strings.Repeat(fmt.Sprintf("detail %d of the work; ", i), 12)}
	}
	patch, _ := json.Marshal(map[string]any{"goal": "migrate the blog", "tasks": tasks})
	if err := l.Update(b.Context(), patch); err != nil {
		b.Fatal(err)
	}
	// A counter of its own defeats the cache of the fitted block: every
	// Recall folds.
	own := prompt.CounterFunc(func(s string) int { return layer.Query{}.Count(s) })
	for _, tc := range []struct {
		name string
		q    layer.Query
	}{{"whole", layer.Query{Budget: layer.Unbounded}}, {"fold-cached", layer.Query{Budget: 1200}}, {"fold", layer.Query{Budget: 1200, Counter: own}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				items, err := l.Recall(b.Context(), tc.q)
				if err != nil || len(items) != 1 {
					b.Fatal(items, err)
				}
			}
		})
	}
}
