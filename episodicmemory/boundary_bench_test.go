package episodicmemory

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkTaskBoundary is the per-step work of task episodes, against a
// task whose profile is full: "request" is a run's first step (a new
// request is checked for a boundary, which learns the entries queued
// before it), "step" a later step of the run (its entries are queued).
// Each step has two tool calls.
func BenchmarkTaskBoundary(b *testing.B) {
	eps := []Episode{
		{Kind: KindTool, Tool: "cms_getPage", Arguments: `{"slug":"pricing"}`, Result: `{"page":{"id":"page-1002","title":"Pricing"}}`, Entities: []string{"page-1002", "Pricing"}},
		{Kind: KindTool, Tool: "cms_updateBlock", Arguments: `{"pageId":"page-1002","block":"plan-pro","price":"$29/mo"}`, Result: `{"block":{"id":"plan-pro"}}`, Entities: []string{"page-1002", "plan-pro"}},
	}
	queries := []string{"Change the price of the Pro plan on the pricing page to $29 a month", "Also the yearly price, that should be $290"}
	now := time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, fresh := range []bool{true, false} {
		name := map[bool]string{true: "request", false: "step"}[fresh]
		b.Run(name, func(b *testing.B) {
			tr := tracker{loaded: true, task: 1, last: now}
			for i := range maxProfile * 2 {
				tr.learnRequest(fmt.Sprintf("update section sec-%d of page-%d with heading%d", i, i, i))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q := queries[0]
				if fresh {
					q = queries[i%2]
				}
				if tr.boundary(q, eps, true, now, DefaultEpisodeGap) != "" {
					b.Fatal("a boundary")
				}
				tr.queue(eps)
				i++
			}
		})
	}
}
