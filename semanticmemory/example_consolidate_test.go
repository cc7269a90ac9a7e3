package semanticmemory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
)

// answerFunc is a stand-in for a langchaingo model: it answers the last
// message of each call.
type answerFunc func(input string) string

func (f answerFunc) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	in := msgs[len(msgs)-1].Parts[0].(llms.TextContent).Text
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: f(in)}}}, nil
}

func (f answerFunc) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "", errors.New("unused")
}

// A model reads each turn, proposes the facts it states, and decides
// how each changes the stored facts: here, the new preference updates
// the old one, which stays readable as version 1.
func ExampleConsolidator() {
	ctx := context.Background()
	model := answerFunc(func(input string) string {
		if strings.HasPrefix(input, "<turn>") { // the turn: propose facts
			return `{"facts":[{"text":"The user prefers green tea.","kind":"preference","importance":0.6}]}`
		}
		// The new fact, and the stored facts like it by handle: decide.
		return `{"decisions":[{"fact":1,"op":"update","id":"m1"}]}`
	})
	tmpl, err := semanticmemory.New(semanticmemory.Config{Consolidate: &semanticmemory.Consolidator{Model: model}})
	if err != nil {
		panic(err)
	}
	bound, err := tmpl.Init(ctx, layer.Env{ThreadID: "t1", ResourceID: "ada"})
	if err != nil {
		panic(err)
	}
	facts := bound.(*semanticmemory.Layer)
	if _, err := facts.Remember(ctx, semanticmemory.Memo{Text: "The user prefers black tea.", Kind: "preference", Importance: 0.5}); err != nil {
		panic(err)
	}

	// The loop calls Store after each step; it returns at once.
	_ = facts.Store(ctx, layer.Turn{Query: "I only drink green tea now.", Response: "Noted."})
	if err := facts.Flush(ctx); err != nil { // Close waits too
		panic(err)
	}

	all, _ := facts.Facts(ctx)
	for _, f := range all {
		fmt.Printf("%s v%d %q by %s\n", f.ID, f.Version, f.Text, f.Source.By)
	}
	for _, e := range facts.AuditEntries() {
		fmt.Println(e.Op, e.Key, e.Version)
	}
	// Output:
	// f0 v2 "The user prefers green tea." by extractor
	// write f0 2
	// supersede f0 2
}
