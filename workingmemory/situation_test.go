package workingmemory_test

import (
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// The scratchpad's part of the situation: the goal and the last step of
// the plan of an object state, the text of a text state, nothing when
// empty; the same state gives the same text.
func TestSituation_GoalAndLastPlan(t *testing.T) {
	ctx := t.Context()
	l := newScratchpad(t)
	if s, err := l.Situation(ctx, layer.Query{}); err != nil || s != "" {
		t.Fatalf("empty state: %q, %v", s, err)
	}
	if err := l.Update(ctx, []byte(`{"goal":"Publish the  Pricing page","plan":["find it",{"step":"publish","id":"page-2"}],"notes":"ignored"}`)); err != nil {
		t.Fatal(err)
	}
	want := "goal: Publish the Pricing page\nplan: {\"id\":\"page-2\",\"step\":\"publish\"}"
	for range 3 {
		if s, err := l.Situation(ctx, layer.Query{Text: "Do it"}); err != nil || s != want {
			t.Fatalf("Situation = %q, %v; want %q", s, err, want)
		}
	}
	text, _ := workingmemory.New(workingmemory.Config{Template: "  Find the pricing page.  "})
	tb, err := text.Init(ctx, layer.Env{ThreadID: "t2", Store: storage.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := tb.(*workingmemory.Layer).Situation(ctx, layer.Query{}); s != "Find the pricing page." {
		t.Fatalf("text state: %q", s)
	}
}
