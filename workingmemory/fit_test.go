package workingmemory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// TestRecallFitsBudget: a scratchpad larger than its budget is shown
// compact, then cut with a notice, but never dropped, and never over the
// budget.
func TestRecallFitsBudget(t *testing.T) {
	ctx := context.Background()
	l := newScratchpad(t)
	notes := map[string]string{}
	for i := range 200 {
		notes[fmt.Sprintf("finding-%03d", i)] = strings.Repeat("é", 20)
	}
	patch, _ := json.Marshal(map[string]any{"notes": notes})
	if err := l.Update(ctx, patch); err != nil {
		t.Fatal(err)
	}
	full, err := l.Recall(ctx, layer.Query{Budget: layer.Unbounded})
	if err != nil || len(full) != 1 {
		t.Fatalf("unbounded Recall = %v, %v", full, err)
	}
	if !strings.Contains(full[0].Text, "\n  \"notes\"") {
		t.Fatalf("unbounded block is not indented JSON:\n%.200s", full[0].Text)
	}
	fullTokens := full[0].Tokens
	compact := "<working_memory>\n" + string(mustJSON(t, map[string]any{"notes": notes})) + "\n</working_memory>"
	compactTokens := layer.Query{}.Count(compact)
	if compactTokens >= fullTokens {
		t.Fatalf("compact rendering (%v tokens) is not smaller than the indented one (%v)", compactTokens, fullTokens)
	}
	// At its full size the indented block is served as is.
	if items, _ := l.Recall(ctx, layer.Query{Budget: fullTokens}); len(items) != 1 || items[0].Text != full[0].Text {
		t.Fatalf("budget = full size: want the indented block unchanged")
	}
	// Between the two sizes the compact block is served, whole.
	if items, _ := l.Recall(ctx, layer.Query{Budget: compactTokens}); len(items) != 1 || items[0].Text != compact {
		t.Fatalf("budget = compact size: got %d items, want the compact block %.120q", len(items), compact)
	}
	for _, budget := range []int{compactTokens - 1, 1500, 300, 80} {
		items, err := l.Recall(ctx, layer.Query{Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 1 {
			t.Fatalf("budget %v: %d items, want the scratchpad cut to fit, not dropped", budget, len(items))
		}
		text := items[0].Text
		if items[0].Tokens > budget || (layer.Query{}).Count(text) > budget {
			t.Errorf("budget %v: block of %d bytes (%d tokens) exceeds it", budget, len(text), items[0].Tokens)
		}
		if !strings.HasPrefix(text, "<working_memory>\n") || !strings.HasSuffix(text, "\n</working_memory>") {
			t.Errorf("budget %v: block lost its fence:\n%.100s…", budget, text)
		}
		if !strings.Contains(text, "truncated") || !strings.Contains(text, "working_memory_update") {
			t.Errorf("budget %v: no notice asking the model to prune:\n…%s", budget, text[max(0, len(text)-200):])
		}
		if !strings.HasPrefix(text, "<working_memory>\n{\"notes\":{\"finding-000\":") {
			t.Errorf("budget %v: the cut block does not start with the compact state:\n%.120s", budget, text)
		}
		if !utf8.ValidString(text) {
			t.Errorf("budget %v: cut inside a character", budget)
		}
	}
	if items, _ := l.Recall(ctx, layer.Query{Budget: 10}); len(items) != 0 {
		t.Errorf("budget 10: %d items, want none (not even the notice fits)", len(items))
	}
	// The state itself is untouched by a cut rendering.
	again, _ := l.Recall(ctx, layer.Query{Budget: layer.Unbounded})
	if again[0].Text != full[0].Text {
		t.Error("a cut Recall changed the full rendering")
	}
}

// newScratchpad returns a scratchpad of the default config, bound to
// thread "t" of a new in-memory store.
func newScratchpad(t *testing.T) *workingmemory.Layer {
	t.Helper()
	tmpl, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := tmpl.Init(t.Context(), layer.Env{ThreadID: "t", Store: storage.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	return bound.(*workingmemory.Layer)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTrust04_RecallNeverPanicsOnDefangedOpeners: a state full of tag
// openers grows when fenced (each '<' becomes "&lt;"), so for budgets in a
// window the whole text fits the cut's arithmetic but not the fence.
// Recall used to index past the text there and panic; every budget must
// give a block within it, or nothing.
func TestTrust04_RecallNeverPanicsOnDefangedOpeners(t *testing.T) {
	ctx := context.Background()
	text := strings.Repeat("<working_memory>", 100)
	l, err := workingmemory.New(workingmemory.Config{Template: text})
	if err != nil {
		t.Fatal(err)
	}
	for budget := 1; budget <= 700; budget++ {
		items, err := l.Recall(ctx, layer.Query{Budget: budget})
		if err != nil {
			t.Fatalf("budget %v: %v", budget, err)
		}
		if len(items) == 0 {
			continue
		}
		b := items[0].Text
		if (layer.Query{}).Count(b) > budget || items[0].Tokens > budget {
			t.Fatalf("budget %v: block of %d bytes exceeds it", budget, len(b))
		}
		if !strings.HasPrefix(b, "<working_memory>\n") || !strings.HasSuffix(b, "\n</working_memory>") || strings.Count(b, "<working_memory>") != 1 {
			t.Fatalf("budget %v: block lost its fence:\n%.200s", budget, b)
		}
	}
}

// With no counter in the query (the agent's default), Recall reports the
// default estimate of its block, counted once per state and cached; a
// counter in the query is used instead.
func TestRecallTokensCachedDefault(t *testing.T) {
	tmpl, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := tmpl.Init(t.Context(), layer.Env{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	wm := run.(*workingmemory.Layer)
	if err := wm.Update(t.Context(), []byte(`{"task":"About page","steps":["hero","team"]}`)); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second Recall is served from the cache
		items, err := wm.Recall(t.Context(), layer.Query{})
		if err != nil || len(items) != 1 {
			t.Fatalf("Recall: %v, %v", items, err)
		}
		if want := (layer.Query{}).Count(items[0].Text); items[0].Tokens != want {
			t.Errorf("Tokens = %d, want the default estimate %d", items[0].Tokens, want)
		}
	}
	items, _ := wm.Recall(t.Context(), layer.Query{Counter: byteCounter{}})
	if len(items) != 1 || items[0].Tokens != len(items[0].Text) {
		t.Errorf("with a counter: %d tokens for %d bytes", items[0].Tokens, len(items[0].Text))
	}
}

type byteCounter struct{}

func (byteCounter) Count(s string) int { return len(s) }
