package route_test

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
)

// A kind the table does not know is routed by its text.
func ExampleByContent() {
	ctx := context.Background()
	for _, w := range []layer.Write{
		{Kind: "pattern", Text: "Publish a page: cms_getPage, then cms_updatePage(status=published)."},
		{Kind: "todo", Text: "Next I will check the draft, then ask Carla."},
		{Kind: "log", Text: "14:05 upload_asset failed: 413 Payload Too Large."},
		{Kind: "aside", Text: "The user always writes in British English."},
	} {
		fmt.Printf("%s -> %s\n", w.Kind, route.Default.Route(ctx, w).Layer)
	}
	// Output:
	// pattern -> semantic
	// todo -> scratchpad
	// log -> episodic
	// aside -> semantic
}

// A Gate refuses a restatement of what the destination holds, and a
// write under its importance threshold.
func ExampleGate() {
	ctx := context.Background()
	g := route.Gate{Thresholds: route.Thresholds{MinImportance: 0.3}}
	stored := []layer.Candidate{{Key: "f3", Text: "[f3 preference] The user prefers oolong tea."}}
	for _, w := range []layer.Write{
		{Kind: "preference", Text: "The user prefers oolong tea.", Importance: 0.5},
		{Kind: "preference", Text: "The user now prefers green tea in the evening.", Importance: 0.5},
		{Kind: "fact", Text: "it rained", Importance: 0.1},
	} {
		v := g.Admit(ctx, w, stored)
		if v.Accept {
			fmt.Printf("%q: accepted (%s)\n", w.Text, v.Score)
		} else {
			fmt.Printf("%q: refused, %s\n", w.Text, v.Reason)
		}
	}
	// Output:
	// "The user prefers oolong tea.": refused, novelty 0.00 is under 0.10: it restates f3, which is kept already
	// "The user now prefers green tea in the evening.": accepted (importance 0.68, novelty 0.75, 12 tokens)
	// "it rained": refused, importance 0.10 is under 0.30: not important enough to keep
}
