package audit_test

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/storage"
)

// Code that uses the layers outside the agent loop commits what a turn
// did itself, and reads a thread's audit back.
func Example() {
	ctx := context.Background()
	log := audit.New(audit.Config{Store: storage.NewMemoryStore(), Keep: 10})
	turn, err := log.Commit(ctx, "thread-1", []audit.Entry{
		{Op: audit.OpRoute, Layer: "semantic", Kind: "preference", Reason: "a durable fact goes to semantic memory"},
		{Op: audit.OpWrite, Layer: "semantic", Kind: "preference", Key: "f1", Version: 1, Text: "The user prefers tea."},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("turn", turn.Seq, "wrote", len(turn.Writes()))
	turns, _ := log.Turns(ctx, "thread-1")
	for _, t := range turns {
		for _, e := range t.Entries {
			fmt.Println(t.Seq, e.Op, e.Layer, e.Kind)
		}
	}
	// Output:
	// turn 1 wrote 1
	// 1 route semantic preference
	// 1 write semantic preference
}
