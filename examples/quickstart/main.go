// Command quickstart is an agent with a scratchpad
// and entity memory, persisted to SQLite, that resolves "it" to the page it
// created one turn earlier. It runs on a scripted model, so it needs no API
// key. For a real model, replace scriptedModel() with any langchaingo
// llms.Model, for example openai.New() from
// github.com/tmc/langchaingo/llms/openai, which reads OPENAI_API_KEY,
// OPENAI_MODEL and OPENAI_BASE_URL (an OpenAI-compatible server such as
// Ollama, http://localhost:11434/v1).
//
// With MEMLAYER_POSTGRES_URL set (postgres://...), it runs on that
// PostgreSQL database instead of SQLite.
//
// Usage:
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/workingmemory"
)

func main() {
	if err := run(context.Background(), filepath.Join(os.TempDir(), "memlayer-quickstart.db")); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, dbPath string) error {
	store, closeStore, err := openStore(ctx, dbPath)
	if err != nil {
		return err
	}
	defer closeStore()

	scratchpad, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		return err
	}
	entities, err := entitymemory.New(entitymemory.Config{})
	if err != nil {
		return err
	}
	type page struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	createPage := agentloop.NewTool("cms_createPage", "Create a CMS page.", nil,
		func(ctx context.Context, in struct {
			Title string `json:"title" jsonschema:"The page title."`
		}) (map[string]page, error) {
			return map[string]page{"page": {ID: "page-123", Title: in.Title}}, nil
		})

	agent, err := agentloop.New(agentloop.Config{
		Model:        scriptedModel(),
		Instructions: "You are a CMS assistant.",
		Layers:       []layer.Layer{scratchpad, entities},
		Tools:        []agentloop.Tool{createPage},
		Store:        store,
	})
	if err != nil {
		return err
	}
	for _, input := range []string{"Create a page called About Us", "Add a hero section to it"} {
		res, err := agent.Run(ctx, agentloop.RunInput{ThreadID: "demo", ResourceID: "user-1", Input: input})
		if err != nil {
			return err
		}
		fmt.Printf("user:  %s\nagent: %s\n", input, res.Output)
	}
	return nil
}

// scriptedModel stands in for a real model: it creates the page on the
// first turn, and on the second finds the page's ID in the entity block of
// the system prompt it is sent, the way a real model would.
func scriptedModel() llms.Model {
	pageID := regexp.MustCompile(`\((page-[0-9]+)\)`)
	return agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		switch {
		case len(r.ToolResults()) > 0:
			return agenttest.Text("Created the About Us page."), nil
		case r.LastUser() == "Create a page called About Us":
			return agenttest.Calls(agenttest.Call("cms_createPage", map[string]string{"title": "About Us"})), nil
		}
		if m := pageID.FindStringSubmatch(r.System()); m != nil {
			return agenttest.Text("Adding a hero section to " + m[1] + "."), nil
		}
		return agenttest.Text("Which page do you mean?"), nil
	})
}
