package episodicmemory

import (
	"fmt"
	"testing"
)

// BenchmarkTaskFollowUp is the check of a request whose calls touch an
// entity the task does not hold, against a task whose profile is full:
// "follow-up" refers back ("flag the supplier too"), "new" is in other
// words. The profile does not learn the calls, so every iteration is
// such a check.
func BenchmarkTaskFollowUp(b *testing.B) {
	eps := []Episode{{Kind: KindTool, Tool: "suppliers_flag", Arguments: `{"sku":"VASE-TALL-W","reason":"breakage in transit"}`}}
	for name, query := range map[string]string{
		"follow-up": "Flag the supplier too, that's the third broken vase this month",
		"new":       "Give me the list of suppliers with late deliveries this quarter",
	} {
		b.Run(name, func(b *testing.B) {
			var tr tracker
			for i := range maxProfile * 2 {
				tr.learnRequest(fmt.Sprintf("refund order %d of the broken vase%d for cus-%d", 50000+i, i, i))
			}
			b.ReportAllocs()
			for b.Loop() {
				tr.newTask(query, eps)
			}
		})
	}
}
