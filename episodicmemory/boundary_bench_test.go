package episodicmemory

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTaskBoundary is the per-step work of task episodes: a step of
// a new request (two tool calls) is checked for a boundary against a
// task whose profile is full, and its entries join the task's profile.
// ns/op is per step.
func BenchmarkTaskBoundary(b *testing.B) {
	var tr tracker
	tr.loaded, tr.task, tr.asked = true, 1, true
	for i := range maxProfile * 2 {
		tr.learnRequest(fmt.Sprintf("update section sec-%d of page-%d with heading%d", i, i, i))
	}
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	tr.last = now
	eps := []Episode{
		{Kind: KindTool, Tool: "cms_getPage", Arguments: `{"slug":"pricing"}`, Result: `{"page":{"id":"page-1002","title":"Pricing"}}`, Entities: []string{"page-1002", "Pricing"}},
		{Kind: KindTool, Tool: "cms_updateBlock", Arguments: `{"pageId":"page-1002","block":"plan-pro","price":"$29/mo"}`, Result: `{"block":{"id":"plan-pro"}}`, Entities: []string{"page-1002", "plan-pro"}},
	}
	queries := []string{"Change the price of the Pro plan on the pricing page to $29 a month", "Also the yearly price, that should be $290"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		t := tr // the same task each time; its sets are shared, and full
		t.boundary(queries[i%2], eps, true, now, DefaultEpisodeGap)
		for k := range eps {
			t.learn(&eps[k])
		}
		i++
	}
}
