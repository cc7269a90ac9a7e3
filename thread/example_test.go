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

// An application shows a user's threads, newest first, with titles
// derived from each first request or set by the user, keeps only those
// of one project, and pages the latest messages of one.
func ExampleCatalog() {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	// Two runs of the user's agent store two threads (the older has the
	// greater ID, so that equal clocks order them the same way).
	for _, t := range []struct{ id, request string }{
		{"thread-b", "Create the About page for the ACME site, with the team's photos and a contact form"},
		{"thread-a", "Translate the pricing page into French"},
	} {
		w := thread.NewWriter(store, t.id, nil)
		err := w.Write(ctx, thread.Step{ResourceID: "user-7", Steps: 1, Messages: []thread.Message{
			{Role: thread.RoleUser, Text: t.request},
			{Role: thread.RoleAssistant, Text: "Done."},
		}})
		if err != nil {
			panic(err)
		}
	}

	c := thread.Catalog{Store: store}
	title := "Pricing in French"
	_, err := c.Update(ctx, "thread-a", thread.Update{Title: &title, Set: map[string]string{"project": "acme"}})
	if err != nil {
		panic(err)
	}
	page, err := c.List(ctx, "user-7", thread.ListQuery{Limit: 10})
	if err != nil {
		panic(err)
	}
	for _, t := range page.Threads {
		fmt.Printf("%s  %q  %d messages\n", t.ThreadID, t.Title, t.Messages)
	}
	acme, err := c.List(ctx, "user-7", thread.ListQuery{Metadata: map[string]string{"project": "acme"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("project acme:", len(acme.Threads), "thread,", acme.Threads[0].ThreadID)
	last, err := c.Messages(ctx, "thread-b", thread.MessageQuery{From: -1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("last message of thread-b: [%d] %s: %s\n", last.First, last.Messages[0].Role, last.Messages[0].Text)
	// Output:
	// thread-a  "Pricing in French"  2 messages
	// thread-b  "Create the About page for the ACME site, with the team's…"  2 messages
	// project acme: 1 thread, thread-a
	// last message of thread-b: [1] assistant: Done.
}
