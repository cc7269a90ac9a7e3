package inspect_test

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// An operator lists a user's threads, then erases everything stored for
// the user.
func ExampleInspector() {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	for _, id := range []string{"t-1", "t-2"} {
		w := thread.NewWriter(store, id, nil)
		if err := w.Write(ctx, thread.Step{ResourceID: "user-7", Steps: 1,
			Messages: []thread.Message{{Role: thread.RoleUser, Text: "hello"}}}); err != nil {
			panic(err)
		}
	}
	in := inspect.Inspector{Store: store}
	threads, err := in.Threads(ctx, inspect.ThreadQuery{ResourceID: "user-7"})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(threads), "threads")
	erased, err := in.EraseResource(ctx, "user-7")
	if err != nil {
		panic(err)
	}
	fmt.Println("erased", erased.Threads, erased.Counts["thread.head"], "heads", erased.Counts["thread.segment"], "segments")
	// Output:
	// 2 threads
	// erased [t-1 t-2] 2 heads 2 segments
}
