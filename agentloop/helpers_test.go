package agentloop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/thread"
)

// fakeCMS is an in-memory CMS behind three tools.
type fakeCMS struct {
	mu       sync.Mutex
	next     int
	pages    map[string]*page
	listedID []string // page IDs listSections was called with
}

type page struct {
	ID       string   `json:"id"`
	Title    string   `json:"title"`
	Sections []string `json:"sections"`
}

func newCMS() *fakeCMS { return &fakeCMS{pages: map[string]*page{}} }

func (c *fakeCMS) tools() []agentloop.Tool {
	type createIn struct {
		Title string `json:"title"`
	}
	type listIn struct {
		PageID string `json:"pageId"`
	}
	return []agentloop.Tool{
		agentloop.NewTool("createPage", "Create a page with default sections.",
			json.RawMessage(`{"type":"object","properties":{"title":{"type":"string","minLength":1}},"required":["title"]}`),
			func(ctx context.Context, in createIn) (*page, error) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.next++
				p := &page{ID: fmt.Sprintf("page_%03d", 100+c.next), Title: in.Title, Sections: []string{"hero", "team", "contact"}}
				c.pages[p.ID] = p
				return p, nil
			}),
		agentloop.NewTool("listSections", "List the sections of a page.",
			json.RawMessage(`{"type":"object","properties":{"pageId":{"type":"string","pattern":"^page_"}},"required":["pageId"]}`),
			func(ctx context.Context, in listIn) (map[string]any, error) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.listedID = append(c.listedID, in.PageID)
				p, ok := c.pages[in.PageID]
				if !ok {
					return nil, fmt.Errorf("no page %q", in.PageID)
				}
				return map[string]any{"pageId": p.ID, "sections": p.Sections}, nil
			}),
	}
}

func (c *fakeCMS) listed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.listedID...)
}

// pageRef finds a page ID the way a model would: in the memory block of
// the system prompt.
var pageRef = regexp.MustCompile(`\(id: (page_\d+)\)`)

// cmsPolicy is the scripted model of the CMS tests. It decides from the
// request alone: after tool results it summarises them; asked to create a
// page it calls createPage; asked about "this page" it looks for the page
// ID in the system prompt (put there by memory) and lists its sections.
func cmsPolicy(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	if res := r.ToolResults(); len(res) > 0 {
		var parts []string
		for _, t := range res {
			parts = append(parts, t.Name+" -> "+t.Content)
		}
		return agenttest.Text("Done: " + strings.Join(parts, "; ")), nil
	}
	user := r.LastUser()
	switch {
	case strings.Contains(user, "Create"):
		return agenttest.Calls(agenttest.Call("createPage", map[string]string{"title": "About"})), nil
	case strings.Contains(user, "this page"):
		m := pageRef.FindStringSubmatch(r.System())
		if m == nil {
			return agenttest.Text("Which page do you mean?"), nil
		}
		return agenttest.Calls(agenttest.Call("listSections", map[string]string{"pageId": m[1]})), nil
	}
	return agenttest.Text("ok"), nil
}

func mustAgent(t testing.TB, cfg agentloop.Config) *agentloop.Agent {
	t.Helper()
	a, err := agentloop.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// toolContents returns the content of every tool message, in order.
func toolContents(msgs []llms.MessageContent) []string {
	var out []string
	for _, m := range msgs {
		if m.Role != llms.ChatMessageTypeTool {
			continue
		}
		for _, p := range m.Parts {
			if tr, ok := p.(llms.ToolCallResponse); ok {
				out = append(out, tr.Content)
			}
		}
	}
	return out
}

// storedResults returns the content of every tool result of a stored
// history, in order.
func storedResults(msgs []thread.Message) []string {
	var out []string
	for _, m := range msgs {
		for _, r := range m.ToolResults {
			out = append(out, r.Content)
		}
	}
	return out
}
