// Command spawn shows a child agent inheriting memory. The parent agent
// has two scratchpads: its task notes in the default, thread-scoped
// working memory, and a user profile in a resource-scoped one (shared by
// the user's threads); each fences its block with its own tag
// (<working_memory>, <profile>). The program keeps the customer's account
// facts in key-value memory (resource scope: one per customer). Asked for a welcome message, the parent delegates to
// a child agent with the spawn_agent tool. The child gets a clone of the
// profile (so it writes in the user's language; its own update to the
// profile stays in its clone), a fresh scratchpad for its own notes
// (thread scope: the parent's task notes are not its business), and a
// child scope of the key-value memory (it reads the parent's entries
// through it). The program prints what each agent saw.
//
// It runs on a scripted model, one policy for both agents, that tells
// them apart by their instructions. To run the agents on a real model,
// set Config.Model in run to any langchaingo llms.Model, for example
// openai.New() from github.com/tmc/langchaingo/llms/openai, which reads
// OPENAI_API_KEY, OPENAI_MODEL and OPENAI_BASE_URL (an OpenAI-compatible
// server such as Ollama, http://localhost:11434/v1); the prompts printed
// at the end come from the scripted model's recorded requests, so record
// them with a wrapping model instead (as examples/cms does).
//
// Usage:
//
//	go run ./examples/spawn
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

const writerInstructions = "You write short customer messages."

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	layers, facts, err := newLayers()
	if err != nil {
		return err
	}
	store := storage.NewMemoryStore()
	user := agentloop.RunInput{ThreadID: "onboarding", ResourceID: "customer-42"}
	if err := storeAccount(ctx, facts, layer.Env{ThreadID: user.ThreadID, ResourceID: user.ResourceID, Store: store}); err != nil {
		return err
	}
	model := agenttest.NewFunc(policy)
	agent, err := agentloop.New(agentloop.Config{
		Model:        model,
		Instructions: "You are an account manager.",
		Layers:       layers,
		Store:        store,
		MaxDepth:     1,
		Logger:       slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}

	for _, input := range []string{"Remember: Lea prefers French.", "Send Lea a welcome message."} {
		user.Input = input
		fmt.Fprintf(w, "\nuser: %s\n", input)
		res, err := agent.Run(ctx, user)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "assistant: %s\n", res.Output)
	}
	printPrompts(w, model.Requests())
	return nil
}

// newLayers returns the parent's layers: its notes, the customer's
// profile, and the customer's account facts (a key-value memory), also
// returned on its own.
func newLayers() ([]layer.Layer, *kv.Layer, error) {
	notes, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		return nil, nil, err
	}
	profile, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{ID: "profile", Scope: layer.ScopeResource}})
	if err != nil {
		return nil, nil, err
	}
	facts, err := kv.NewLayer(kv.LayerConfig{
		Spec: layer.Spec{Scope: layer.ScopeResource},
		// one per customer
		ChildName: func(layer.Env) string { return "child" },
		Render: func(mem *kv.Scope) string {
			plan, _, _ := kv.Get[string](mem, "plan")
			return fmt.Sprintf("scope %s: plan=%s", mem.Path(), plan)
		},
	})
	if err != nil {
		return nil, nil, err
	}
	return []layer.Layer{notes, profile, facts}, facts, nil
}

// storeAccount writes the customer's account facts outside a run: it
// opens the customer's key-value memory (facts, in env) and closes it to
// store them.
func storeAccount(ctx context.Context, facts *kv.Layer, env layer.Env) error {
	account, err := facts.Open(ctx, env)
	if err != nil {
		return err
	}
	if err := kv.Set(account.Memory(), "plan", "pro"); err != nil {
		return err
	}
	return account.Close(ctx)
}

// printPrompts prints the child's first system prompt and tools, and the
// parent's last system prompt, from the model's requests.
func printPrompts(w io.Writer, reqs []agenttest.Request) {
	for _, r := range reqs {
		if strings.HasPrefix(r.System(), writerInstructions) && len(r.ToolResults()) == 0 {
			fmt.Fprintf(w, "\n--- the child's system prompt ---\n%s\n", r.System())
			fmt.Fprintf(w, "child tools: %s\n", strings.Join(r.ToolNames(), ", "))
		}
	}
	fmt.Fprintf(w, "\n--- the parent's system prompt afterwards ---\n%s\n", reqs[len(reqs)-1].System())
}

// policy is the scripted model for both agents; it tells them apart by
// their instructions and reads everything else from the prompt.
func policy(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	res := r.ToolResults()
	if sys := r.System(); strings.HasPrefix(sys, writerInstructions) {
		return writer(sys, len(res) > 0), nil
	}
	switch {
	case strings.HasPrefix(r.LastUser(), "Remember") && len(res) == 0:
		return agenttest.Calls(agenttest.Call("profile_update", `{"name":"Lea","language":"French"}`)), nil
	case strings.HasPrefix(r.LastUser(), "Send") && len(res) == 0:
		return agenttest.Calls(
			agenttest.Call(agentloop.SpawnToolName, map[string]string{
				"instructions": writerInstructions, "input": "Write a one-line welcome message for the customer.",
			}),
			agenttest.Call("working_memory_update", `{"task":"welcome Lea","status":"delegated to a writer"}`),
		), nil
	case len(res) > 0 && res[0].Name == agentloop.SpawnToolName:
		return agenttest.Text("Sent: " + res[0].Content), nil
	}
	return agenttest.Text("Noted."), nil
}

// writer is the child's script: note the welcome in the profile, then
// write it in the customer's language and for their plan, both read from
// its system prompt sys; answered says the note is written.
func writer(sys string, answered bool) *llms.ContentChoice {
	switch {
	case !answered:
		return agenttest.Calls(agenttest.Call("profile_update", `{"lastMessage":"welcome"}`))
	case strings.Contains(sys, `"language": "French"`) && strings.Contains(sys, "plan=pro"):
		return agenttest.Text("Bonjour Lea, bienvenue dans l'offre Pro !")
	}
	return agenttest.Text("Hello Lea, welcome aboard!")
}
