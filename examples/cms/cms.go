package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"sync"
	"time"

	"github.com/memlayer/memlayer/agentloop"
)

// fakeCMS is an in-process stand-in for a headless CMS API. Its tools
// return JSON shaped like real CMS responses, which is what entity memory
// learns from.
type fakeCMS struct {
	mu    sync.Mutex
	seq   int
	pages map[string]*cmsPage
	order []string
	clock time.Time
}

type cmsPage struct {
	ID        string        `json:"id"`
	Title     string        `json:"title"`
	Slug      string        `json:"slug"`
	Status    string        `json:"status"`
	UpdatedAt string        `json:"updatedAt"`
	Sections  []*cmsSection `json:"-"`
}

type cmsSection struct {
	ID      string `json:"id"`
	PageID  string `json:"pageId"`
	Type    string `json:"type"`
	Heading string `json:"heading"`
	Order   int    `json:"order"`
}

func newCMS() *fakeCMS {
	return &fakeCMS{pages: map[string]*cmsPage{}, clock: time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)}
}

// newID returns a stable, realistic-looking ID: prefix + 6 hex digits.
func (c *fakeCMS) newID(prefix, seed string) string {
	c.seq++
	return fmt.Sprintf("%s_%06x", prefix, crc32.ChecksumIEEE([]byte(fmt.Sprint(c.seq, seed)))&0xffffff)
}

func (c *fakeCMS) now() string {
	c.clock = c.clock.Add(time.Minute)
	return c.clock.Format(time.RFC3339)
}

func slugify(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

func (c *fakeCMS) page(id string) (*cmsPage, error) {
	p, ok := c.pages[id]
	if !ok {
		return nil, fmt.Errorf("404 page %q not found; call listPages to see the page IDs", id)
	}
	return p, nil
}

// tools returns the CMS tools.
func (c *fakeCMS) tools() []agentloop.Tool {
	type createIn struct {
		Title string `json:"title"`
		Slug  string `json:"slug"`
	}
	type addIn struct {
		PageID  string `json:"pageId"`
		Type    string `json:"type"`
		Heading string `json:"heading"`
	}
	type pageIn struct {
		PageID string `json:"pageId"`
	}
	type updateIn struct {
		PageID string  `json:"pageId"`
		Title  *string `json:"title"`
		Status *string `json:"status"`
	}
	obj := func(s string) json.RawMessage { return json.RawMessage(s) }
	// Mutating tools are Exclusive: two addSection calls in one step must
	// run in order, or the sections' order would depend on scheduling.
	exclusive := func(t agentloop.Tool) agentloop.Tool { t.Exclusive = true; return t }
	return []agentloop.Tool{
		exclusive(agentloop.NewTool("createPage", "Create a draft page. Returns the page with its ID.",
			obj(`{"type":"object","properties":{"title":{"type":"string","minLength":1},"slug":{"type":"string","pattern":"^[a-z0-9-]+$"}},"required":["title"],"additionalProperties":false}`),
			func(ctx context.Context, in createIn) (any, error) {
				c.mu.Lock()
				defer c.mu.Unlock()
				if in.Slug == "" {
					in.Slug = slugify(in.Title)
				}
				p := &cmsPage{ID: c.newID("pg", in.Title), Title: in.Title, Slug: in.Slug, Status: "draft", UpdatedAt: c.now()}
				c.pages[p.ID] = p
				c.order = append(c.order, p.ID)
				return map[string]any{"page": p}, nil
			})),
		exclusive(agentloop.NewTool("addSection", "Add a section (hero, text, team, gallery, contact) at the end of a page.",
			obj(`{"type":"object","properties":{"pageId":{"type":"string"},"type":{"type":"string","enum":["hero","text","team","gallery","contact"]},"heading":{"type":"string"}},"required":["pageId","type","heading"],"additionalProperties":false}`),
			func(ctx context.Context, in addIn) (any, error) {
				c.mu.Lock()
				defer c.mu.Unlock()
				p, err := c.page(in.PageID)
				if err != nil {
					return nil, err
				}
				s := &cmsSection{ID: c.newID("sec", in.Heading), PageID: p.ID, Type: in.Type, Heading: in.Heading, Order: len(p.Sections) + 1}
				p.Sections = append(p.Sections, s)
				p.UpdatedAt = c.now()
				return map[string]any{"section": s}, nil
			})),
		agentloop.NewTool("listSections", "List the sections of a page, in order.",
			obj(`{"type":"object","properties":{"pageId":{"type":"string"}},"required":["pageId"],"additionalProperties":false}`),
			func(ctx context.Context, in pageIn) (any, error) {
				c.mu.Lock()
				defer c.mu.Unlock()
				p, err := c.page(in.PageID)
				if err != nil {
					return nil, err
				}
				return map[string]any{"pageId": p.ID, "sections": p.Sections, "total": len(p.Sections)}, nil
			}),
		exclusive(agentloop.NewTool("updatePage", "Change a page's title or status (draft, published).",
			obj(`{"type":"object","properties":{"pageId":{"type":"string"},"title":{"type":"string","minLength":1},"status":{"type":"string","enum":["draft","published"]}},"required":["pageId"],"additionalProperties":false}`),
			func(ctx context.Context, in updateIn) (any, error) {
				c.mu.Lock()
				defer c.mu.Unlock()
				p, err := c.page(in.PageID)
				if err != nil {
					return nil, err
				}
				if in.Title != nil {
					p.Title = *in.Title
				}
				if in.Status != nil {
					p.Status = *in.Status
				}
				p.UpdatedAt = c.now()
				return map[string]any{"page": p}, nil
			})),
		agentloop.NewTool("listPages", "List every page.",
			obj(`{"type":"object","properties":{},"additionalProperties":false}`),
			func(ctx context.Context, _ struct{}) (any, error) {
				c.mu.Lock()
				defer c.mu.Unlock()
				out := make([]*cmsPage, 0, len(c.order))
				for _, id := range c.order {
					out = append(out, c.pages[id])
				}
				return map[string]any{"pages": out}, nil
			}),
	}
}
