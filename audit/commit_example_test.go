package audit_test

import (
	"fmt"

	"github.com/memlayer/memlayer/audit"
)

// Code that writes through the layers outside the agent loop records
// its entries and sorts them into the same Commit a run returns
// (agentloop.Result.Commit).
func ExampleCommitOf() {
	c := audit.CommitOf([]audit.Entry{
		{Op: audit.OpRoute, Kind: "preference", Text: "Ada prefers tea.", Layer: "facts", Reason: "a durable fact goes to semantic memory"},
		{Op: audit.OpWrite, Layer: "facts", Kind: "preference", Key: "f7", Version: 1, Text: "Ada prefers tea.", Bytes: 16},
		{Op: audit.OpEvict, Layer: "facts", Key: "f2", Count: 1},
		{Op: audit.OpRoute, Kind: "secret", Text: "PIN 1234", Refused: true, Reason: "secrets are not kept"},
	})
	for _, w := range c.Writes {
		fmt.Printf("write %s %s v%d, %d bytes\n", w.Layer, w.Key, w.Version, w.Bytes)
	}
	for _, r := range c.Routes {
		fmt.Printf("route %s -> %q refused=%v (%s)\n", r.Kind, r.Layer, r.Refused, r.Reason)
	}
	for _, e := range c.Evictions {
		fmt.Printf("evicted %s %s\n", e.Layer, e.Key)
	}
	// Output:
	// write facts f7 v1, 16 bytes
	// route preference -> "facts" refused=false (a durable fact goes to semantic memory)
	// route secret -> "" refused=true (secrets are not kept)
	// evicted facts f2
}
