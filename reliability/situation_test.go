package reliability

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// The recall query is the situation: a message that names nothing ("Do
// it now") recalls the episode of the page the scratchpad's goal names,
// and the one the recent turns touched (the entity layer's recent
// names); without them it does not. The same state gives the same
// prompt.
func TestSituation_RecallQueriesTheSituation(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	// A long log of page creations, written by an earlier run.
	ep, _ := episodicmemory.New(episodicmemory.Config{CompactAfter: 16})
	w, err := ep.Init(ctx, layer.Env{ThreadID: "t1", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	for n := range 300 {
		id := fmt.Sprintf("call-%d", n)
		args := fmt.Sprintf(`{"title":"Landing %d"}`, n)
		if n == 2 {
			args = `{"title":"Pricing for Nonprofits"}`
		}
		res := fmt.Sprintf(`{"page":{"id":"page-%d","title":%s}}`, n, args[9:len(args)-1])
		st := layer.Turn{Step: n, ToolCalls: []layer.ToolCall{{ID: id, Name: "cms_createPage", Arguments: args}},
			Results: []layer.ToolResult{{ToolCall: layer.ToolCall{ID: id, Name: "cms_createPage", Arguments: args}, Content: res}}}
		if err := w.(layer.Storer).Store(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	sem, _ := semanticmemory.New(semanticmemory.Config{})
	stack := func(withSituators bool) *layer.Stack {
		ls := []layer.Layer{ep, sem}
		if withSituators {
			wm, _ := workingmemory.New(workingmemory.Config{})
			em, _ := entitymemory.New(entitymemory.Config{})
			ls = append(ls, wm, em)
		}
		s, err := layer.NewStack(layer.StackConfig{Env: layer.Env{ThreadID: "t1", Store: store}, Layers: ls})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Init(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(ctx) })
		return s
	}
	prompt := func(s *layer.Stack) string {
		out, err := s.Recall(ctx, layer.Query{Text: "Do it now"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, r := range out {
			for _, it := range r.Items {
				b.WriteString(it.Text)
			}
		}
		return b.String()
	}
	if p := prompt(stack(false)); strings.Contains(p, "[call-2]") {
		t.Fatalf("without a situation the old page was recalled:\n%s", p)
	}
	s := stack(true)
	wm, _ := layer.Find[*workingmemory.Layer](s, workingmemory.DefaultID)
	if err := wm.Update(ctx, []byte(`{"goal":"Publish the Pricing for Nonprofits page","plan":["find it","publish it"]}`)); err != nil {
		t.Fatal(err)
	}
	p := prompt(s)
	if !strings.Contains(p, "[call-2]") {
		t.Fatalf("the goal's page was not recalled:\n%s", p)
	}
	// The entity layer's recent names join the situation.
	em, _ := layer.Find[*entitymemory.Layer](s, entitymemory.DefaultID)
	em.Add(entitymemory.Entity{Type: "page", ID: "page-137", Name: "Landing 137"})
	p = prompt(s)
	if !strings.Contains(p, "[call-137]") || !strings.Contains(p, "[call-2]") {
		t.Fatalf("the recent entity's page was not recalled:\n%s", p)
	}
	if again := prompt(s); again != p {
		t.Fatalf("the same state gave another prompt:\n%s\n---\n%s", p, again)
	}
}
