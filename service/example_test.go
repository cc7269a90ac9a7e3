package service_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/service"
	"github.com/memlayer/memlayer/storage"
)

// Seed a user's profile before their first conversation: the agent's
// first prompt already knows them.
func Example_seedProfile() {
	ctx := context.Background()
	store := storage.NewMemoryStore()

	// At sign-up: what the sign-up form said.
	mem, err := service.New(store, service.Config{})
	if err != nil {
		panic(err)
	}
	for _, text := range []string{"Ada lives in Lisbon.", "Ada is a software engineer."} {
		if _, err := mem.Add(ctx, "ada", service.Memo{Kind: "profile", Text: text}); err != nil {
			panic(err)
		}
	}

	// Later, Ada's first conversation with the agent.
	facts, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		panic(err)
	}
	model := agenttest.New(agenttest.Reply(agenttest.Text("Hello Ada!")))
	agent, err := agentloop.New(agentloop.Config{Model: model, Store: store, Layers: []layer.Layer{facts}})
	if err != nil {
		panic(err)
	}
	if _, err := agent.Run(ctx, agentloop.RunInput{ThreadID: "first-chat", ResourceID: "ada", Input: "Hi!"}); err != nil {
		panic(err)
	}
	system := model.Requests()[0].System()
	start := strings.Index(system, "<semantic_memory>")
	end := strings.Index(system, "</semantic_memory>") + len("</semantic_memory>")
	fmt.Println(system[start:end])
	// Output:
	// <semantic_memory>
	// [f1 profile] Ada is a software engineer.
	// [f0 profile] Ada lives in Lisbon.
	// </semantic_memory>
}

// A support dashboard: find what the agent remembers about a user,
// correct a wrong fact, delete one the user wants gone, and show a fact's
// history.
func Example_supportDashboard() {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	mem, err := service.New(store, service.Config{})
	if err != nil {
		panic(err)
	}
	// What the agent learnt in past conversations (here seeded).
	for _, m := range []service.Memo{
		{Kind: "preference", Text: "The user prefers tea to coffee."},
		{Kind: "preference", Text: "The user wants replies in Portuguese."},
		{Kind: "fact", Text: "The user's order 1042 shipped on Monday."},
	} {
		if _, err := mem.Add(ctx, "ada", m); err != nil {
			panic(err)
		}
	}

	// The agent on the phone: "which language does she want?"
	hits, err := mem.Search(ctx, "ada", service.Query{Text: "replies language", Kind: "preference", K: 1})
	if err != nil {
		panic(err)
	}
	wrong := hits[0]
	fmt.Printf("found %s: %s\n", wrong.ID, wrong.Text)

	// Ada says English: correct it.
	fixed, err := mem.Update(ctx, "ada", wrong.ID, service.Change{Text: "The user wants replies in English."})
	if err != nil {
		panic(err)
	}
	fmt.Printf("corrected %s to version %d: %s\n", fixed.ID, fixed.Version, fixed.Text)

	// Ada asks to forget the order.
	orders, err := mem.Search(ctx, "ada", service.Query{Text: "order", Kind: "fact"})
	if err != nil {
		panic(err)
	}
	if err := mem.Delete(ctx, "ada", orders[0].ID); err != nil {
		panic(err)
	}

	page, err := mem.List(ctx, "ada", service.Page{})
	if err != nil {
		panic(err)
	}
	for _, f := range page.Facts {
		fmt.Printf("now: [%s %s] %s\n", f.ID, f.Kind, f.Text)
	}
	versions, err := mem.History(ctx, "ada", wrong.ID)
	if err != nil {
		panic(err)
	}
	for _, v := range versions {
		fmt.Printf("history of %s: v%d %s (by %s)\n", v.ID, v.Version, v.Text, v.Source.By)
	}
	// Output:
	// found f1: The user wants replies in Portuguese.
	// corrected f1 to version 2: The user wants replies in English.
	// now: [f0 preference] The user prefers tea to coffee.
	// now: [f1 preference] The user wants replies in English.
	// history of f1: v1 The user wants replies in Portuguese. (by code)
	// history of f1: v2 The user wants replies in English. (by code)
}
