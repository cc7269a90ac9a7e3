package thread_test

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// A run loads its thread, writes each step, and a later reader finds
// every message.
func Example() {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	l, err := thread.Load(ctx, store, "thread-1") // nil: not stored yet
	if err != nil {
		panic(err)
	}
	w := thread.NewWriter(store, "thread-1", l)
	err = w.Write(ctx, thread.Step{Steps: 1, Messages: []thread.Message{
		{Role: thread.RoleUser, Text: "Create the About page"},
		{Role: thread.RoleAssistant, Text: "Created page_7."},
	}})
	if err != nil {
		panic(err)
	}
	c, err := thread.LoadAll(ctx, store, "thread-1")
	if err != nil {
		panic(err)
	}
	for _, m := range c.Messages {
		fmt.Printf("%s: %s\n", m.Role, m.Text)
	}
	fmt.Println("steps:", c.Steps, "version:", c.Version)
	// Output:
	// user: Create the About page
	// assistant: Created page_7.
	// steps: 1 version: 4
}
