// Command cms is the CMS assistant of memlayer's design: an agent that
// edits pages of a (fake, in-process) CMS, with working memory and entity
// memory, persisted to SQLite. It creates an About page, then "restarts"
// (closes the database and builds a new agent on it) and asks "what
// sections are on this page?": entity memory resolves "this page" to the
// right ID. After a few more turns the oldest ones leave the history's
// window and the history_summary block holds them.
//
// With no configuration it runs on a scripted model that reads its
// prompt (no API key, no server). Set OPENAI_API_KEY (and optionally
// OPENAI_MODEL) to use OpenAI, or OPENAI_BASE_URL for an OpenAI-compatible
// server such as Ollama (http://localhost:11434/v1). Set
// MEMLAYER_ENTITY_MEMORY=off to run without entity memory and watch the
// reference fail.
//
// Usage:
//
//	go run ./examples/cms [-db file.db] [-thread id] [-v]
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
)

const instructions = `You are a CMS assistant. You create and edit pages and their sections with the tools.
Keep your plan and progress in working memory (the working_memory_update tool).
Answer briefly and mention page IDs.`

// planSchema is the shape of the working memory.
const planSchema = `{
  "type": "object",
  "properties": {
    "task":   {"type": "string"},
    "pageId": {"type": "string"},
    "done":   {"type": "array", "items": {"type": "string"}},
    "next":   {"type": "string"}
  },
  "additionalProperties": false
}`

// options configure one run of the example.
type options struct {
	DB       string // SQLite file; created if missing
	Thread   string
	Model    llms.Model // nil: from the environment, else scripted
	Entities bool       // entity memory on
	Logger   *slog.Logger
}

func main() {
	db := flag.String("db", "", "SQLite file to keep memory in (default: a new file in the temp directory, removed afterwards)")
	thread := flag.String("thread", "cms-demo", "conversation thread ID")
	verbose := flag.Bool("v", false, "log every step")
	flag.Parse()

	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts := options{DB: *db, Thread: *thread, Logger: logger, Entities: os.Getenv("MEMLAYER_ENTITY_MEMORY") != "off"}
	if opts.DB == "" {
		dir, err := os.MkdirTemp("", "memlayer-cms-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		opts.DB = filepath.Join(dir, "cms.db")
	}
	m, desc, err := modelFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	opts.Model = m
	entities := "on (MEMLAYER_ENTITY_MEMORY=off to run without it)"
	if !opts.Entities {
		entities = "off"
	}
	fmt.Printf("model: %s\ndatabase: %s\nentity memory: %s\n", desc, opts.DB, entities)

	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	if err := run(ctx, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// modelFromEnv returns the OpenAI(-compatible) model the environment
// names, or nil for the scripted model.
func modelFromEnv() (llms.Model, string, error) {
	key, base := os.Getenv("OPENAI_API_KEY"), os.Getenv("OPENAI_BASE_URL")
	if key == "" && base == "" {
		return nil, "scripted (set OPENAI_API_KEY or OPENAI_BASE_URL for a real model)", nil
	}
	name := cmp.Or(os.Getenv("OPENAI_MODEL"), "gpt-4o-mini")
	// Local servers ignore the key; the client requires one.
	opts := []openai.Option{openai.WithModel(name), openai.WithToken(cmp.Or(key, "unused"))}
	if base != "" {
		opts = append(opts, openai.WithBaseURL(base))
	}
	m, err := openai.New(opts...)
	if err != nil {
		return nil, "", fmt.Errorf("openai: %w", err)
	}
	return m, name + " via " + cmp.Or(base, "api.openai.com"), nil
}

// process is one "process" of the assistant: a store and an agent on it.
type process struct {
	store *sqlite.Store
	agent *agentloop.Agent
	tap   *tapModel
}

// start opens the database and builds the agent, as a fresh process would.
func start(ctx context.Context, opts options, cms *fakeCMS) (*process, error) {
	st, err := sqlite.Open(ctx, sqlite.Config{Path: opts.DB})
	if err != nil {
		return nil, err
	}
	wm, err := workingmemory.New(workingmemory.Config{Schema: planSchema})
	if err != nil {
		st.Close()
		return nil, err
	}
	layers := []layer.Layer{wm}
	if opts.Entities {
		em, err := entitymemory.New(entitymemory.Config{})
		if err != nil {
			st.Close()
			return nil, err
		}
		layers = append(layers, em)
	}
	model := opts.Model
	if model == nil {
		model = agenttest.NewFunc(scriptedCMS)
	}
	tap := &tapModel{Model: model}
	a, err := agentloop.New(agentloop.Config{
		Name:         "cms-assistant",
		Model:        tap,
		Instructions: instructions,
		Layers:       layers,
		Tools:        cms.tools(),
		Store:        st,
		MaxSteps:     8,
		Timeout:      45 * time.Second,
		// A short window, so that the summary of the older turns shows
		// after a few turns (the default keeps 4 turns and summarizes 2
		// at a time).
		History: history.Config{MaxTurns: 2, SummarizeAfter: 2},
		Logger:  opts.Logger,
	})
	if err != nil {
		st.Close()
		return nil, err
	}
	return &process{store: st, agent: a, tap: tap}, nil
}

// run plays the conversation and prints it with the memory blocks.
func run(ctx context.Context, w io.Writer, opts options) error {
	if opts.Thread == "" {
		opts.Thread = "cms-demo"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	cms := newCMS()
	if err := firstProcess(ctx, w, opts, cms); err != nil {
		return err
	}

	fmt.Fprintln(w, "\n=== process 2 (restarted: new agent, same database) ===")
	p, err := start(ctx, opts, cms)
	if err != nil {
		return err
	}
	defer p.store.Close()
	for _, q := range []string{"What sections are on this page?", "Rename it to About Us and publish it.",
		"Which sections does this page have now?", "And what is on this page after the rename?"} {
		if err := turn(ctx, w, p, opts, q); err != nil {
			return err
		}
	}
	return nil
}

// firstProcess plays the conversation's first turn in a process of its
// own, which closes its store as it ends.
func firstProcess(ctx context.Context, w io.Writer, opts options, cms *fakeCMS) error {
	fmt.Fprintln(w, "\n=== process 1 ===")
	p, err := start(ctx, opts, cms)
	if err != nil {
		return err
	}
	if err := turn(ctx, w, p, opts, "Create an About page with a hero section and a team section."); err != nil {
		p.store.Close()
		return err
	}
	return p.store.Close()
}

// turn runs one user message and prints what happened.
func turn(ctx context.Context, w io.Writer, p *process, opts options, input string) error {
	fmt.Fprintf(w, "\nuser: %s\n", input)
	res, err := p.agent.Run(ctx, agentloop.RunInput{ThreadID: opts.Thread, ResourceID: "acme-site", Input: input})
	if res != nil {
		printTurn(w, res.Messages)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "assistant: %s\n", res.Output)
	tokens := fmt.Sprintf("%d tokens", res.Usage.TotalTokens)
	if res.Usage.Estimated {
		tokens += ", estimated"
	}
	fmt.Fprintf(w, "  (%s, %s, %s)\n", plural(res.Steps, "step"), plural(res.ToolCalls, "tool call"), tokens)
	fmt.Fprintln(w, "\n--- memory blocks in the last system prompt ---")
	fmt.Fprintln(w, memoryBlocks(p.tap.lastSystem()))
	return nil
}

// printTurn prints the tool traffic of the last turn in msgs.
func printTurn(w io.Writer, msgs []llms.MessageContent) {
	start := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeHuman {
			start = i + 1
			break
		}
	}
	for _, m := range msgs[start:] {
		for _, part := range m.Parts {
			switch p := part.(type) {
			case llms.ToolCall:
				fmt.Fprintf(w, "  -> %s %s\n", p.FunctionCall.Name, p.FunctionCall.Arguments)
			case llms.ToolCallResponse:
				fmt.Fprintf(w, "  <- %s\n", clip(p.Content, 160))
			}
		}
	}
}

// plural returns "1 step", "2 steps".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// memoryBlocks returns the system prompt without the instructions.
func memoryBlocks(system string) string {
	rest := strings.TrimSpace(strings.TrimPrefix(system, instructions))
	if rest == "" {
		return "(none)"
	}
	return rest
}

// tapModel records the system prompt of the last call, to show the
// memory blocks whatever the model.
type tapModel struct {
	llms.Model
	mu     sync.Mutex
	system string
}

func (t *tapModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	for _, m := range msgs {
		if m.Role == llms.ChatMessageTypeSystem {
			var b strings.Builder
			for _, p := range m.Parts {
				if tp, ok := p.(llms.TextContent); ok {
					b.WriteString(tp.Text)
				}
			}
			t.mu.Lock()
			t.system = b.String()
			t.mu.Unlock()
		}
	}
	return t.Model.GenerateContent(ctx, msgs, opts...)
}

func (t *tapModel) lastSystem() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.system
}

// pageInMemory finds the most recent page ID in the entity memory block
// of a system prompt: pages are listed newest first, as `"Title" (pg_…`.
var pageInMemory = regexp.MustCompile(`(?mi)^pages:\n\s+- "[^"\n]*" \((pg_[0-9a-f]+)`)

// scriptedCMS is the scripted model: it decides every step from the
// request alone, like a real model would. It never receives an ID from
// the program: page IDs come from the memory in its system prompt.
func scriptedCMS(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	s := cmsStep{r: r, results: r.ToolResults()}
	if len(s.results) > 0 {
		s.last = s.results[0].Name
	}
	if m := pageInMemory.FindStringSubmatch(r.System()); m != nil {
		s.pageID = m[1]
	}
	switch user := r.LastUser(); {
	case strings.HasPrefix(user, "Create"):
		return s.create(), nil
	case strings.Contains(user, "this page"):
		return s.describe(), nil
	case strings.HasPrefix(user, "Rename"):
		return s.rename(), nil
	default:
		return nil, errors.New("scripted model: no script for " + user)
	}
}

// cmsStep is what the scripted model reads from a request: the tool
// results, the name of the first (last, "" for none), and the newest
// page ID in memory.
type cmsStep struct {
	r       agenttest.Request
	results []llms.ToolCallResponse
	last    string
	pageID  string
}

// noPage is the answer when the memory holds no page.
var noPage = agenttest.Text("Which page do you mean? I have no page in my working memory.")

// create scripts "Create the About page": create it, add two sections,
// note the work in working memory, then report.
func (s cmsStep) create() *llms.ContentChoice {
	switch {
	case s.last == "":
		return agenttest.Calls(agenttest.Call("createPage", map[string]string{"title": "About", "slug": "about"}))
	case s.last == "createPage" && s.pageID == "":
		return noPage
	case s.last == "createPage":
		return agenttest.Calls(
			agenttest.Call("addSection", map[string]string{"pageId": s.pageID, "type": "hero", "heading": "We build calm software"}),
			agenttest.Call("addSection", map[string]string{"pageId": s.pageID, "type": "team", "heading": "Meet the team"}),
		)
	case s.last == "addSection" && s.r.HasTool("working_memory_update"):
		return agenttest.Calls(agenttest.Call("working_memory_update", map[string]any{
			"task": "About page", "pageId": s.pageID, "done": []string{"created page", "added hero", "added team"}, "next": "review with the user",
		}))
	}
	return agenttest.Text(fmt.Sprintf("Created the About page (%s) with a hero and a team section.", s.pageID))
}

// describe scripts "What is on this page?": list its sections, then
// describe them.
func (s cmsStep) describe() *llms.ContentChoice {
	if s.last == "" {
		return s.onPage(agenttest.Call("listSections", map[string]string{"pageId": s.pageID}))
	}
	var out struct {
		PageID   string `json:"pageId"`
		Sections []struct {
			Type, Heading string
		} `json:"sections"`
	}
	if err := json.Unmarshal([]byte(s.results[0].Content), &out); err != nil {
		return agenttest.Text("The CMS said: " + s.results[0].Content)
	}
	var parts []string
	for _, sec := range out.Sections {
		parts = append(parts, fmt.Sprintf("%s (%q)", sec.Type, sec.Heading))
	}
	return agenttest.Text(fmt.Sprintf("Page %s has %d sections: %s.", out.PageID, len(parts), strings.Join(parts, ", ")))
}

// rename scripts "Rename it": update the page, then report.
func (s cmsStep) rename() *llms.ContentChoice {
	switch {
	case s.last == "":
		return s.onPage(agenttest.Call("updatePage", map[string]string{"pageId": s.pageID, "title": "About Us", "status": "published"}))
	case strings.HasPrefix(s.results[0].Content, "error:"):
		return agenttest.Text("That failed: " + s.results[0].Content)
	}
	return agenttest.Text(fmt.Sprintf("Renamed %s to \"About Us\" and published it.", s.pageID))
}

// onPage makes the call on the page in memory, or asks which page when
// there is none.
func (s cmsStep) onPage(call llms.ToolCall) *llms.ContentChoice {
	if s.pageID == "" {
		return noPage
	}
	return agenttest.Calls(call)
}
