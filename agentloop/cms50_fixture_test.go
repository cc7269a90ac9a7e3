package agentloop_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/prompt"
)

// This file holds the 50-turn CMS conversation of
// testdata/conversations/cms50.json: its types, its loader, and the
// generator that wrote it (go test ./agentloop -run TestHistory50 -update-cms50).
// testdata/conversations/README.md documents the format.

var updateCMS50 = flag.Bool("update-cms50", false, "rewrite testdata/conversations/cms50.json from its generator")

// cms50Path is the fixture, in the repository's shared testdata.
var cms50Path = filepath.Join("..", "testdata", "conversations", "cms50.json")

// cmsFixture is the conversation: the agent's instructions, its tools,
// and one entry per user turn.
type cmsFixture struct {
	Description  string    `json:"description"`
	Instructions string    `json:"instructions"`
	Tools        []cmsTool `json:"tools"`
	Turns        []cmsTurn `json:"turns"`
}

type cmsTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// cmsTurn is one user turn: the user's message, the model's steps (each
// a list of tool calls made in one response), its final answer, and the
// references the turn makes by name, with the ID each must resolve to.
type cmsTurn struct {
	N     int         `json:"n"`
	User  string      `json:"user"`
	Steps [][]cmsCall `json:"steps"`
	Reply string      `json:"reply"`
	Refs  []cmsRef    `json:"refs,omitempty"`
}

// cmsCall is one tool call. A string value "$ref:<type>:<name>" anywhere
// in Args is a reference the model must resolve from its request; the
// other values are sent as they are. Result is what the tool returns.
type cmsCall struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Result json.RawMessage `json:"result"`
}

// cmsRef is a reference by name and what it must resolve to. The
// scripted model never reads it: only the tools (the test's side) do.
type cmsRef struct {
	Ref     string `json:"ref"`
	Want    string `json:"want"`
	Created int    `json:"created"`
}

// refPrefix starts a reference in a call's arguments.
const refPrefix = "$ref:"

func loadCMS50(t testing.TB) cmsFixture {
	t.Helper()
	data, err := os.ReadFile(cms50Path)
	if err != nil {
		t.Fatal(err)
	}
	var f cmsFixture
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%s: %v", cms50Path, err)
	}
	return f
}

// TestHistory50_CMS50Fixture: the fixture is what its generator writes
// (so it is deterministic and reviewable as code), has 50 turns, every
// tool result is JSON of 300 to 800 tokens, and enough references point
// 10 to 40 turns back.
func TestHistory50_CMS50Fixture(t *testing.T) {
	gen, err := json.MarshalIndent(generateCMS50(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	gen = append(gen, '\n')
	if *updateCMS50 {
		if err := os.WriteFile(cms50Path, gen, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := os.ReadFile(cms50Path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stored, gen) {
		t.Fatalf("%s differs from its generator; run go test ./agentloop -run TestHistory50 -update-cms50 and review the diff", cms50Path)
	}
	f := loadCMS50(t)
	if len(f.Turns) != 50 {
		t.Fatalf("%d turns, want 50", len(f.Turns))
	}
	exact := cl100k(t)
	far := 0
	lo, hi := 1<<30, 0
	for _, turn := range f.Turns {
		for _, step := range turn.Steps {
			for _, c := range step {
				res := compactJSON(t, c.Result)
				n, x := prompt.Estimate.Count(res), exact.Count(res)
				if n < 300 || n > 800 || x < 300 || x > 800 {
					t.Errorf("turn %d %s: result is %d tokens (estimate), %d (cl100k), want 300 to 800", turn.N, c.Tool, n, x)
				}
				lo, hi = min(lo, x), max(hi, x)
				if !json.Valid(c.Args) {
					t.Errorf("turn %d %s: arguments are not JSON", turn.N, c.Tool)
				}
			}
		}
		for _, r := range turn.Refs {
			if d := turn.N - r.Created; d >= 10 && d <= 40 {
				far++
			}
		}
	}
	t.Logf("tool results %d to %d tokens (cl100k); %d references 10 to 40 turns back", lo, hi, far)
	if far < 10 {
		t.Errorf("%d references point 10 to 40 turns back, want at least 10", far)
	}
}

func compactJSON(t testing.TB, raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// obj is a JSON object that keeps its keys in order, as a real API's
// response does (encoding/json sorts map keys).
type obj []fld

type fld struct {
	k string
	v any
}

// MarshalJSON writes the fields in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.k)
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.k, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ent is an entity the conversation creates.
type ent struct {
	typ, id, name string
	turn          int
	parent        *ent
	extra         obj
}

// cmsGen builds the fixture turn by turn.
type cmsGen struct {
	f     cmsFixture
	ents  map[string]*ent // by type + ":" + name
	turn  *cmsTurn
	clock time.Time
	seq   int
}

var idPrefix = map[string]string{
	"site": "site", "page": "page", "section": "sec", "asset": "asset", "menu": "menu",
	"menu_item": "mi", "blog_post": "post", "block": "blk", "redirect": "rdr",
	"translation": "tr", "revision": "rev", "request": "req", "schedule": "sch",
}

// id derives a stable ID of the CMS's shape (page_8f3a1c2d90b4) from the
// entity's type and name.
func cmsID(typ, name string) string {
	h := sha256.Sum256([]byte(typ + "/" + name))
	return idPrefix[typ] + "_" + hex.EncodeToString(h[:6])
}

func (g *cmsGen) now() string {
	g.seq++
	return g.clock.Add(time.Duration(g.seq) * 7 * time.Second).Format(time.RFC3339)
}

// make creates an entity in the current turn.
func (g *cmsGen) make(typ, name string, parent *ent) *ent {
	key := typ + ":" + name
	if _, dup := g.ents[key]; dup {
		panic("cms50: duplicate " + key)
	}
	e := &ent{typ: typ, id: cmsID(typ, name), name: name, turn: g.turn.N, parent: parent}
	g.ents[key] = e
	return e
}

// ref returns the placeholder for a reference by name to an entity
// created earlier, and records its expected ID.
func (g *cmsGen) ref(typ, name string) string {
	e, ok := g.ents[typ+":"+name]
	if !ok {
		panic("cms50: unknown " + typ + ":" + name)
	}
	g.turn.Refs = append(g.turn.Refs, cmsRef{Ref: typ + ":" + name, Want: e.id, Created: e.turn})
	return refPrefix + typ + ":" + name
}

func (g *cmsGen) get(typ, name string) *ent { return g.ents[typ+":"+name] }

// begin starts turn n+1.
func (g *cmsGen) begin(user, reply string) {
	g.f.Turns = append(g.f.Turns, cmsTurn{N: len(g.f.Turns) + 1, User: user, Reply: reply})
	g.turn = &g.f.Turns[len(g.f.Turns)-1]
	g.clock = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC).Add(time.Duration(g.turn.N) * 4 * time.Minute)
	g.seq = 0
}

// step adds one model response's tool calls to the current turn.
func (g *cmsGen) step(calls ...cmsCall) { g.turn.Steps = append(g.turn.Steps, calls) }

func call(tool string, args obj, result obj) cmsCall {
	a, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	r, err := json.Marshal(result)
	if err != nil {
		panic(err)
	}
	return cmsCall{Tool: tool, Args: a, Result: r}
}

const (
	apiBase = "https://api.northwind-cms.example/v2"
	editor  = "usr_5d21c9e07a3f"
)

// envelope wraps a resource the way the CMS API answers.
func (g *cmsGen) envelope(key string, v any) obj {
	g.seq++
	h := sha256.Sum256(fmt.Appendf(nil, "%d/%d/%s", g.turn.N, g.seq, key))
	return obj{{key, v},
		{"requestId", "req_" + hex.EncodeToString(h[:8])},
		{"rateLimit", obj{{"limit", 600}, {"remaining", 600 - g.turn.N*3 - g.seq}, {"resetAt", g.clock.Add(time.Hour).Format(time.RFC3339)}}},
		{"apiVersion", "2026-01-15"},
	}
}

func (g *cmsGen) revision(e *ent, n int) obj {
	h := sha256.Sum256([]byte(e.id + fmt.Sprint(n)))
	return obj{{"number", n}, {"etag", "W/\"" + hex.EncodeToString(h[:10]) + "\""}, {"createdAt", g.now()}, {"createdBy", editor}, {"message", "Edited in the assistant session"}}
}

func slugify(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	dash := false
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// pageObj renders a page with its sections.
func (g *cmsGen) pageObj(p *ent, status string, rev int) obj {
	site := g.get("site", "Northwind Outdoor")
	var secs []obj
	pos := 0
	for _, e := range g.sortedChildren(p) {
		pos++
		secs = append(secs, obj{{"id", e.id}, {"heading", e.name}, {"type", kindOf(e)}, {"position", pos}, {"visible", true}})
	}
	if secs == nil {
		secs = []obj{}
	}
	slug := slugify(p.name)
	if p.name == "Home" {
		slug = ""
	}
	published := any(nil)
	if status == "published" {
		published = g.now()
	}
	return obj{
		{"id", p.id}, {"title", p.name}, {"siteId", site.id}, {"slug", slug}, {"path", "/" + slug},
		{"status", status}, {"locale", "en-GB"}, {"template", templateOf(p)},
		{"sections", secs},
		{"seo", obj{{"metaTitle", p.name + " | Northwind Outdoor"}, {"metaDescription", "Northwind Outdoor: " + strings.ToLower(p.name) + " for hikers, climbers and trail runners across Europe."}, {"canonicalUrl", "https://www.northwind-outdoor.example/" + slug}, {"noindex", false}, {"ogImageId", p.extra.get("ogImageId")}}},
		{"translations", []obj{{{"locale", "de-DE"}, {"status", "missing"}}, {{"locale", "en-GB"}, {"status", "source"}}}},
		{"revision", g.revision(p, rev)},
		{"createdAt", g.clock.Add(-time.Duration(g.turn.N-p.turn) * 4 * time.Minute).Format(time.RFC3339)},
		{"updatedAt", g.now()}, {"publishedAt", published},
		{"permissions", obj{{"canEdit", true}, {"canPublish", true}, {"canDelete", p.name != "Home"}}},
		{"_links", obj{{"self", apiBase + "/sites/" + site.id + "/pages/" + p.id}, {"preview", "https://preview.northwind-cms.example/p/" + p.id}, {"sections", apiBase + "/pages/" + p.id + "/sections"}}},
	}
}

func (o obj) get(k string) any {
	for _, f := range o {
		if f.k == k {
			return f.v
		}
	}
	return nil
}

func (g *cmsGen) sortedChildren(p *ent) []*ent {
	var out []*ent
	for _, e := range g.ents {
		if e.parent == p && e.typ == "section" {
			out = append(out, e)
		}
	}
	// creation order: by turn, then name
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && (out[j].turn < out[j-1].turn || out[j].turn == out[j-1].turn && out[j].name < out[j-1].name); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func kindOf(e *ent) string {
	if k, ok := e.extra.get("type").(string); ok {
		return k
	}
	return "richText"
}

func templateOf(p *ent) string {
	if t, ok := p.extra.get("template").(string); ok {
		return t
	}
	return "standard"
}

// sectionObj renders a section with its content blocks.
func (g *cmsGen) sectionObj(s *ent, blocks []obj, rev int) obj {
	p := s.parent
	if blocks == nil {
		blocks = []obj{}
	}
	return obj{
		{"id", s.id}, {"heading", s.name}, {"type", kindOf(s)}, {"pageId", p.id},
		{"blocks", blocks},
		{"settings", obj{{"background", s.extra.get("background")}, {"layout", "contained"}, {"spacing", obj{{"top", "lg"}, {"bottom", "lg"}}}, {"anchor", "#" + slugify(s.name)}, {"theme", "light"}}},
		{"revision", g.revision(s, rev)},
		{"updatedAt", g.now()},
		{"page", obj{{"id", p.id}, {"title", p.name}, {"status", "draft"}, {"path", "/" + slugify(p.name)}}},
		{"_links", obj{{"self", apiBase + "/pages/" + p.id + "/sections/" + s.id}, {"page", apiBase + "/pages/" + p.id}}},
	}
}

func block(id, typ string, fields ...fld) obj {
	return append(obj{{"id", id}, {"type", typ}}, fields...)
}

func (g *cmsGen) blockID(s string) string { return cmsID("block", fmt.Sprintf("%d/%s", g.turn.N, s)) }

// assetObj renders an uploaded asset.
func (g *cmsGen) assetObj(a *ent, w, h, size int, alt string) obj {
	site := g.get("site", "Northwind Outdoor")
	ext := a.name[strings.LastIndexByte(a.name, '.')+1:]
	mime := map[string]string{"jpg": "image/jpeg", "png": "image/png", "svg": "image/svg+xml"}[ext]
	return obj{
		{"id", a.id}, {"filename", a.name}, {"siteId", site.id}, {"mimeType", mime}, {"size", size},
		{"width", w}, {"height", h}, {"alt", alt}, {"focalPoint", obj{{"x", 0.5}, {"y", 0.42}}},
		{"url", "https://cdn.northwind-cms.example/" + site.id + "/" + a.id + "/" + a.name},
		{"renditions", []obj{
			{{"name", "thumbnail"}, {"width", 320}, {"url", "https://cdn.northwind-cms.example/r/" + a.id + "/w_320.webp"}},
			{{"name", "medium"}, {"width", 960}, {"url", "https://cdn.northwind-cms.example/r/" + a.id + "/w_960.webp"}},
			{{"name", "large"}, {"width", 1920}, {"url", "https://cdn.northwind-cms.example/r/" + a.id + "/w_1920.webp"}},
		}},
		{"tags", []string{"upload", "assistant"}}, {"folder", "/marketing/2026"},
		{"uploadedAt", g.now()}, {"uploadedBy", editor},
		{"checksum", obj{{"algorithm", "sha256"}, {"value", hex.EncodeToString([]byte(a.id + a.name))[:48]}}},
		{"usage", obj{{"pages", 0}, {"sections", 0}}},
	}
}

// menuObj renders a menu and its items.
func (g *cmsGen) menuObj(m *ent, items []*ent, status string) obj {
	site := g.get("site", "Northwind Outdoor")
	list := []obj{}
	for i, it := range items {
		tgt := it.parent
		list = append(list, obj{{"id", it.id}, {"label", it.name}, {"position", i + 1}, {"pageId", tgt.id}, {"url", "/" + slugify(tgt.name)}, {"openInNewTab", false}, {"children", []obj{}}})
	}
	return obj{
		{"id", m.id}, {"name", m.name}, {"siteId", site.id}, {"location", m.extra.get("location")}, {"status", status},
		{"description", m.name + " of www.northwind-outdoor.example, managed by the content team"},
		{"items", list}, {"maxDepth", 2}, {"locales", []string{"en-GB", "de-DE"}},
		{"settings", obj{{"collapseOnMobile", true}, {"highlightActive", true}, {"cacheTtlSeconds", 300}, {"fallbackLocale", "en-GB"}}},
		{"permissions", obj{{"canEdit", true}, {"canPublish", true}, {"canDelete", false}}},
		{"createdAt", g.clock.Add(-time.Duration(g.turn.N-m.turn) * 4 * time.Minute).Format(time.RFC3339)}, {"createdBy", editor},
		{"revision", g.revision(m, len(items)+1)}, {"updatedAt", g.now()},
		{"_links", obj{{"self", apiBase + "/sites/" + site.id + "/menus/" + m.id}, {"items", apiBase + "/menus/" + m.id + "/items"}}},
	}
}

func (g *cmsGen) menuItems(m *ent) []*ent {
	var out []*ent
	for _, e := range g.ents {
		if e.typ == "menu_item" && e.extra.get("menu") == m.id {
			out = append(out, e)
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].extra.get("pos").(int) < out[j-1].extra.get("pos").(int); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// text snippets for section content.
var copyText = map[string]string{
	"Home Hero":             "Gear up for every trail. Waterproof shells, ultralight packs and boots tested on 4,000 km of European paths.",
	"Pricing Tiers":         "Three memberships: Trail (free), Summit (9 EUR a month) and Expedition (19 EUR a month), each with free repairs.",
	"Pricing FAQ":           "Answers about memberships, billing cycles, refunds, and what happens to your repairs credit when you cancel.",
	"Our Story":             "Founded in 2011 in Tromsø by two guides who were tired of gear that gave up before they did.",
	"Meet the Team":         "Forty-two people across Tromsø, Innsbruck and Lyon: designers, testers, repairers and support.",
	"Spring Sale Hero":      "Up to 40% off spring essentials: rain shells, trail runners and lightweight tents, until 31 March.",
	"Product Grid":          "Twelve featured products pulled from the Spring 2026 collection, sorted by discount.",
	"Contact Form":          "Send us a message: name, email, order number (optional) and your question. We answer within one working day.",
	"FAQ":                   "General questions about Northwind Outdoor, accounts, gift cards and our warranty.",
	"Shipping FAQ":          "Delivery times by country, customs for Switzerland and Norway, tracking, and free returns within 60 days.",
	"Enterprise Pricing":    "Volume pricing for guiding companies, schools and outdoor clubs from 25 members, invoiced yearly.",
	"Logo Wall":             "Trusted by Alpine guiding schools, national park rangers and 300 outdoor clubs.",
	"Legacy Pricing Table":  "2024 price table kept for reference; superseded by the 2026 memberships.",
	"Pricing FAQ (archive)": "Questions about the 2024 price table, kept for customers on grandfathered plans.",
}

func (g *cmsGen) textBlocks(s *ent) []obj {
	t := copyText[s.name]
	return []obj{
		block(g.blockID(s.name+"/h"), "heading", fld{"text", s.name}, fld{"level", 2}),
		block(g.blockID(s.name+"/p"), "paragraph", fld{"text", t}, fld{"format", "markdown"}),
	}
}

// Turn helpers.

func (g *cmsGen) createPage(user, title, template, reply string) {
	g.begin(user, reply)
	p := g.make("page", title, nil)
	p.extra = obj{{"template", template}}
	g.step(call("cms_createPage",
		obj{{"siteId", g.ref("site", "Northwind Outdoor")}, {"title", title}, {"template", template}},
		g.envelope("page", g.pageObj(p, "draft", 1))))
}

func (g *cmsGen) addSection(user, page, heading, typ, reply string) {
	g.begin(user, reply)
	p := g.get("page", page)
	s := g.make("section", heading, p)
	s.extra = obj{{"type", typ}}
	g.step(call("cms_addSection",
		obj{{"pageId", g.ref("page", page)}, {"heading", heading}, {"type", typ}},
		g.envelope("section", g.sectionObj(s, g.textBlocks(s), 1))))
}

func (g *cmsGen) upload(user, filename string, w, h, size int, alt, reply string) {
	g.begin(user, reply)
	a := g.make("asset", filename, nil)
	g.step(call("cms_uploadAsset",
		obj{{"filename", filename}, {"alt", alt}, {"folder", "/marketing/2026"}},
		g.envelope("asset", g.assetObj(a, w, h, size, alt))))
}

func (g *cmsGen) addMenuItems(menu string, pages ...string) cmsCall {
	m := g.get("menu", menu)
	n := len(g.menuItems(m))
	args := obj{{"menuId", g.ref("menu", menu)}}
	var items []obj
	for i, pg := range pages {
		p := g.get("page", pg)
		it := g.make("menu_item", menu+" → "+pg, p)
		it.name = pg
		it.extra = obj{{"menu", m.id}, {"pos", n + i + 1}}
		items = append(items, obj{{"pageId", g.ref("page", pg)}, {"label", pg}})
	}
	args = append(args, fld{"items", items})
	return call("cms_addMenuItems", args, g.envelope("menu", g.menuObj(m, g.menuItems(m), "draft")))
}

// generateCMS50 writes the conversation. Names that differ little are on
// purpose: pages "Pricing", "Pricing (old)" and "Enterprise"; sections
// "Pricing FAQ", "Pricing FAQ (archive)", "FAQ" and "Shipping FAQ"; pages
// "Spring Sale" and "Spring Sale 2025".
func generateCMS50() cmsFixture {
	g := &cmsGen{ents: map[string]*ent{}}
	g.f.Description = "A 50-turn session of a content editor with a CMS assistant: a site, pages, sections, assets, menus, a blog post, publishing. " +
		"Later turns refer back by name to what earlier turns created, among similar names. Generated by agentloop/cms50_fixture_test.go; see README.md."
	g.f.Instructions = "You are the content assistant of Northwind Outdoor's headless CMS. Use the cms_* tools to do what the editor asks. " +
		"Always address pages, sections, assets and menus by their exact IDs; never guess an ID."
	for _, t := range [][2]string{
		{"cms_createSite", "Create a site."},
		{"cms_createPage", "Create a draft page on a site."},
		{"cms_addSection", "Add a section to a page."},
		{"cms_updateSection", "Change a section's content or settings."},
		{"cms_addBlock", "Add a content block to a section."},
		{"cms_uploadAsset", "Upload an image or file to the media library."},
		{"cms_createMenu", "Create a navigation menu."},
		{"cms_addMenuItems", "Add items linking to pages to a menu."},
		{"cms_publishMenu", "Publish a menu."},
		{"cms_listPages", "List a site's pages."},
		{"cms_updatePage", "Change a page's title, slug or SEO settings."},
		{"cms_publishPage", "Publish a page and its sections."},
		{"cms_archivePage", "Archive a page (it stops being served)."},
		{"cms_createBlogPost", "Create a blog post draft."},
		{"cms_updateBlogPost", "Change a blog post."},
		{"cms_schedulePublish", "Schedule a blog post or page to be published."},
		{"cms_createTranslation", "Create a translation of a section."},
		{"cms_createRedirect", "Create a redirect from one path to another."},
	} {
		g.f.Tools = append(g.f.Tools, cmsTool{Name: t[0], Description: t[1]})
	}

	// 1
	g.begin("Create a new site called Northwind Outdoor, with English (UK) as the main language and German as a second one.",
		"Created the site Northwind Outdoor (en-GB, de-DE).")
	site := g.make("site", "Northwind Outdoor", nil)
	g.step(call("cms_createSite", obj{{"name", "Northwind Outdoor"}, {"locales", []string{"en-GB", "de-DE"}}},
		g.envelope("site", obj{{"id", site.id}, {"name", site.name}, {"domain", "www.northwind-outdoor.example"},
			{"locales", obj{{"default", "en-GB"}, {"available", []string{"en-GB", "de-DE"}}}},
			{"plan", obj{{"id", "plan_business"}, {"seats", 10}, {"environments", []string{"main", "staging"}}}},
			{"settings", obj{{"timezone", "Europe/Oslo"}, {"trailingSlash", false}, {"previewEnabled", true}, {"webhooks", []obj{}}}},
			{"createdAt", g.now()}, {"createdBy", editor},
			{"imported", obj{{"from", "wordpress"}, {"pages", 3}, {"note", "Legacy pages imported as drafts: Pricing (old), Legacy Home, Spring Sale 2025"}}},
			{"_links", obj{{"self", apiBase + "/sites/" + site.id}, {"pages", apiBase + "/sites/" + site.id + "/pages"}, {"assets", apiBase + "/sites/" + site.id + "/assets"}, {"menus", apiBase + "/sites/" + site.id + "/menus"}}},
		})))
	// The import brought three legacy pages (listed in turn 13) and two
	// legacy sections.
	for _, n := range []string{"Pricing (old)", "Legacy Home", "Spring Sale 2025"} {
		p := g.make("page", n, nil)
		p.extra = obj{{"template", "legacy"}}
	}
	s := g.make("section", "Legacy Pricing Table", g.get("page", "Pricing (old)"))
	s.extra = obj{{"type", "table"}}
	s = g.make("section", "Pricing FAQ (archive)", g.get("page", "Pricing (old)"))
	s.extra = obj{{"type", "faq"}}

	// 2-4
	g.createPage("Create the Home page.", "Home", "landing", "Created the Home page (draft).")
	g.addSection("Add a hero section to Home with the headline 'Gear up for every trail'.", "Home", "Home Hero", "hero", "Added the Home Hero section.")
	g.upload("Upload the hero image trail-hero.jpg.", "trail-hero.jpg", 2400, 1350, 812344, "Hikers on a ridge above a fjord at dawn", "Uploaded trail-hero.jpg.")
	// 5-7
	g.createPage("Create the Pricing page.", "Pricing", "standard", "Created the Pricing page (draft).")
	g.addSection("Add a section 'Pricing Tiers' to Pricing with our three memberships.", "Pricing", "Pricing Tiers", "pricingTable", "Added Pricing Tiers.")
	g.addSection("Add a 'Pricing FAQ' section to the Pricing page.", "Pricing", "Pricing FAQ", "faq", "Added the Pricing FAQ section.")
	// 8-10
	g.createPage("Create an About Us page.", "About Us", "standard", "Created About Us.")
	g.addSection("Add an 'Our Story' section to About Us.", "About Us", "Our Story", "richText", "Added Our Story.")
	g.addSection("Add a 'Meet the Team' section to About Us.", "About Us", "Meet the Team", "team", "Added Meet the Team.")
	// 11
	g.begin("Create the main navigation menu for the header.", "Created the Main Navigation menu.")
	mainNav := g.make("menu", "Main Navigation", nil)
	mainNav.extra = obj{{"location", "header"}}
	g.step(call("cms_createMenu", obj{{"siteId", g.ref("site", "Northwind Outdoor")}, {"name", "Main Navigation"}, {"location", "header"}},
		g.envelope("menu", g.menuObj(mainNav, nil, "draft"))))
	// 12
	g.begin("Add Home, Pricing and About Us to the main navigation.", "Added three items to Main Navigation.")
	g.step(g.addMenuItems("Main Navigation", "Home", "Pricing", "About Us"))
	// 13
	g.begin("List all pages of the site.", "The site has 6 pages, 3 of them imported from the old site.")
	var pages []obj
	for _, n := range []string{"Home", "Pricing", "About Us", "Pricing (old)", "Legacy Home", "Spring Sale 2025"} {
		p := g.get("page", n)
		pages = append(pages, obj{{"id", p.id}, {"title", p.name}, {"path", "/" + slugify(p.name)}, {"status", "draft"}, {"template", templateOf(p)}, {"sections", len(g.sortedChildren(p))}, {"updatedAt", g.now()}})
	}
	g.step(call("cms_listPages", obj{{"siteId", g.ref("site", "Northwind Outdoor")}, {"limit", 50}},
		obj{{"pages", pages}, {"pagination", obj{{"total", 6}, {"limit", 50}, {"cursor", nil}}}, {"requestId", "req_5e0c11aa73d2f4b8"}}))
	// 14-18: the spring sale.
	g.createPage("Create the Spring Sale landing page.", "Spring Sale", "landing", "Created the Spring Sale page (draft).")
	g.addSection("Add a hero to Spring Sale saying 'Up to 40% off spring essentials'.", "Spring Sale", "Spring Sale Hero", "hero", "Added Spring Sale Hero.")
	g.upload("Upload spring-sale-banner.jpg for the sale.", "spring-sale-banner.jpg", 2880, 1200, 1045882, "Rain shell in a spring meadow", "Uploaded spring-sale-banner.jpg.")
	g.begin("Use the banner as the background of the Spring Sale Hero.", "The Spring Sale Hero now uses the banner.")
	hero := g.get("section", "Spring Sale Hero")
	hero.extra = append(hero.extra, fld{"background", g.get("asset", "spring-sale-banner.jpg").id})
	g.step(call("cms_updateSection", obj{{"sectionId", g.ref("section", "Spring Sale Hero")}, {"settings", obj{{"backgroundAssetId", g.ref("asset", "spring-sale-banner.jpg")}}}},
		g.envelope("section", g.sectionObj(hero, g.textBlocks(hero), 2))))
	g.addSection("Add a 'Product Grid' section to Spring Sale.", "Spring Sale", "Product Grid", "productGrid", "Added Product Grid.")
	// 19-22: blog.
	g.createPage("Create a Blog page.", "Blog", "blogIndex", "Created the Blog page.")
	g.begin("Write a blog post draft titled 'Five trails for spring'.", "Created the draft post.")
	post := g.make("blog_post", "Five trails for spring", nil)
	postObj := func(cover any, status string, rev int) obj {
		return obj{{"id", post.id}, {"title", post.name}, {"slug", slugify(post.name)}, {"blogPageId", g.get("page", "Blog").id},
			{"status", status}, {"excerpt", "From the Lofoten coast to the Julian Alps: five routes that are at their best in April."},
			{"body", []obj{
				block(g.blockID("p1"), "paragraph", fld{"text", "Spring is the shoulder season: fewer people, long light, and snow only on the tops."}),
				block(g.blockID("p2"), "paragraph", fld{"text", "1. Reinebringen, Lofoten. 2. Via Alpina stage 12. 3. GR20 north. 4. Rota Vicentina. 5. Soča trail."}),
			}},
			{"coverAssetId", cover}, {"tags", []string{"trails", "spring", "guides"}}, {"author", editor},
			{"readingTimeMinutes", 6}, {"revision", g.revision(post, rev)}, {"updatedAt", g.now()},
			{"_links", obj{{"self", apiBase + "/posts/" + post.id}, {"preview", "https://preview.northwind-cms.example/b/" + post.id}}}}
	}
	g.step(call("cms_createBlogPost", obj{{"blogPageId", g.ref("page", "Blog")}, {"title", post.name}}, g.envelope("post", postObj(nil, "draft", 1))))
	g.upload("Upload five-trails-cover.jpg.", "five-trails-cover.jpg", 2000, 1333, 688120, "Trail runner on a coastal path", "Uploaded five-trails-cover.jpg.")
	g.begin("Set it as the cover of the blog post.", "The post now has its cover image.")
	g.step(call("cms_updateBlogPost", obj{{"postId", g.ref("blog_post", "Five trails for spring")}, {"coverAssetId", g.ref("asset", "five-trails-cover.jpg")}},
		g.envelope("post", postObj(g.get("asset", "five-trails-cover.jpg").id, "draft", 2))))
	// 23-26
	g.createPage("Create a Contact page.", "Contact", "standard", "Created Contact.")
	g.addSection("Add a 'Contact Form' section to Contact.", "Contact", "Contact Form", "form", "Added Contact Form.")
	g.begin("Create a footer menu.", "Created the Footer menu.")
	footer := g.make("menu", "Footer", nil)
	footer.extra = obj{{"location", "footer"}}
	g.step(call("cms_createMenu", obj{{"siteId", g.ref("site", "Northwind Outdoor")}, {"name", "Footer"}, {"location", "footer"}},
		g.envelope("menu", g.menuObj(footer, nil, "draft"))))
	g.begin("Add Contact and Blog to the footer.", "Added Contact and Blog to Footer.")
	g.step(g.addMenuItems("Footer", "Contact", "Blog"))
	// 27-29
	g.createPage("Create a Support page.", "Support", "standard", "Created Support.")
	g.addSection("Add an 'FAQ' section to Support.", "Support", "FAQ", "faq", "Added FAQ.")
	g.addSection("Add a 'Shipping FAQ' section to Support as well.", "Support", "Shipping FAQ", "faq", "Added Shipping FAQ.")
	// 30
	g.upload("Upload the team photo team-tromso.jpg.", "team-tromso.jpg", 3000, 2000, 1422330, "The Northwind team in front of the Tromsø workshop", "Uploaded team-tromso.jpg.")
	// 31: 22 back.
	g.begin("Use the team photo as the background of the Our Story section.", "Our Story now shows the team photo.")
	story := g.get("section", "Our Story")
	story.extra = append(story.extra, fld{"background", g.get("asset", "team-tromso.jpg").id})
	g.step(call("cms_updateSection", obj{{"sectionId", g.ref("section", "Our Story")}, {"settings", obj{{"backgroundAssetId", g.ref("asset", "team-tromso.jpg")}}}},
		g.envelope("section", g.sectionObj(story, g.textBlocks(story), 2))))
	// 32: 25 turns back, among "Pricing FAQ (archive)", "FAQ", "Shipping FAQ".
	addBlock := func(user, section, kind, reply string, fields ...fld) {
		g.begin(user, reply)
		s := g.get("section", section)
		b := block(g.blockID(section+"/"+kind), kind, fields...)
		g.step(call("cms_addBlock", append(obj{{"sectionId", g.ref("section", section)}, {"type", kind}}, fields...),
			g.envelope("section", g.sectionObj(s, append(g.textBlocks(s), b), 2))))
	}
	addBlock("Add a testimonial to the Pricing FAQ section: 'Switching to Summit paid for itself after one repair' by Ingrid, Bergen.", "Pricing FAQ", "testimonial",
		"Added the testimonial to Pricing FAQ.", fld{"quote", "Switching to Summit paid for itself after one repair."}, fld{"author", "Ingrid, Bergen"})
	// 33-36
	g.createPage("Create an Enterprise page for clubs and schools.", "Enterprise", "standard", "Created Enterprise.")
	g.addSection("Add an 'Enterprise Pricing' section to Enterprise.", "Enterprise", "Enterprise Pricing", "pricingTable", "Added Enterprise Pricing.")
	g.upload("Upload enterprise-logos.png.", "enterprise-logos.png", 1600, 400, 210455, "Logos of partner guiding schools", "Uploaded enterprise-logos.png.")
	g.addSection("Add a 'Logo Wall' section to Enterprise.", "Enterprise", "Logo Wall", "logoWall", "Added Logo Wall.")
	// 37: 31 back.
	g.begin("In Pricing Tiers, raise the Summit membership to 11 EUR a month.", "Summit is now 11 EUR a month in Pricing Tiers.")
	tiers := g.get("section", "Pricing Tiers")
	g.step(call("cms_updateSection", obj{{"sectionId", g.ref("section", "Pricing Tiers")}, {"patch", obj{{"plans.summit.price", "11 EUR"}}}},
		g.envelope("section", g.sectionObj(tiers, append(g.textBlocks(tiers),
			block(g.blockID("plans"), "plans", fld{"plans", []obj{{{"key", "trail"}, {"price", "0 EUR"}}, {{"key", "summit"}, {"price", "11 EUR"}}, {{"key", "expedition"}, {"price", "19 EUR"}}}})), 3))))
	// 38: the menu (27 back) and the page (24 back), among "Spring Sale 2025".
	g.begin("Add the Spring Sale page to the main navigation.", "Spring Sale is in Main Navigation.")
	g.step(g.addMenuItems("Main Navigation", "Spring Sale"))
	// 39: 36 back.
	g.begin("Create the German translation of the Home Hero section.", "Created the German draft of Home Hero.")
	hh := g.get("section", "Home Hero")
	tr := g.make("translation", "Home Hero/de-DE", hh)
	g.step(call("cms_createTranslation", obj{{"sectionId", g.ref("section", "Home Hero")}, {"locale", "de-DE"}},
		g.envelope("translation", obj{{"id", tr.id}, {"sectionId", hh.id}, {"locale", "de-DE"}, {"status", "machineTranslated"},
			{"fields", obj{{"heading", "Bereit für jeden Trail"}, {"body", "Wasserdichte Jacken, ultraleichte Rucksäcke und Schuhe, getestet auf 4.000 km europäischer Wege."}}},
			{"segments", []obj{{{"field", "heading"}, {"chars", 22}, {"confidence", 0.94}}, {{"field", "body"}, {"chars", 98}, {"confidence", 0.91}}}},
			{"glossary", obj{{"id", "gls_outdoor_de"}, {"terms", []string{"Trail", "Summit", "Expedition"}}, {"keepUntranslated", true}}},
			{"provider", "deepl"}, {"reviewRequired", true}, {"reviewers", []string{editor}}, {"billing", obj{{"characters", 120}, {"quotaRemaining", 498880}}}, {"createdAt", g.now()}, {"createdBy", editor},
			{"source", obj{{"id", hh.id}, {"heading", hh.name}, {"locale", "en-GB"}, {"revision", 1}}},
			{"_links", obj{{"self", apiBase + "/sections/" + hh.id + "/translations/de-DE"}}}})))
	// 40: 20 back.
	g.begin("Schedule 'Five trails for spring' for Monday 16 March at 09:00.", "Scheduled for 16 March, 09:00 CET.")
	sch := g.make("schedule", "post", post)
	g.step(call("cms_schedulePublish", obj{{"postId", g.ref("blog_post", "Five trails for spring")}, {"at", "2026-03-16T09:00:00+01:00"}},
		g.envelope("schedule", obj{{"id", sch.id}, {"targetId", post.id}, {"targetType", "blogPost"}, {"title", post.name}, {"publishAt", "2026-03-16T08:00:00Z"},
			{"timezone", "Europe/Oslo"}, {"status", "scheduled"}, {"createdAt", g.now()}, {"createdBy", editor},
			{"checks", []obj{{{"name", "links"}, {"ok", true}}, {{"name", "altText"}, {"ok", true}}, {{"name", "seo"}, {"ok", false}, {"message", "meta description missing"}}}},
			{"channels", []obj{{{"name", "web"}, {"enabled", true}}, {{"name", "newsletter"}, {"enabled", false}, {"reason", "no newsletter template selected"}}, {{"name", "rss"}, {"enabled", true}}}},
			{"cacheInvalidation", obj{{"paths", []string{"/blog", "/blog/" + slugify(post.name)}}, {"cdn", "fastly"}}},
			{"notify", []string{editor}}, {"_links", obj{{"self", apiBase + "/schedules/" + sch.id}, {"target", apiBase + "/posts/" + post.id}}}})))
	// 41: 12 back, among FAQ and Pricing FAQ.
	addBlock("Add a question about returns to the Shipping FAQ section: free returns within 60 days.", "Shipping FAQ", "faqItem",
		"Added the returns question to Shipping FAQ.", fld{"question", "Can I return an item?"}, fld{"answer", "Yes: free returns within 60 days, with the label in your account."})
	// 42: 37 back, among "Pricing (old)".
	publish := func(user, page, reply string) {
		g.begin(user, reply)
		p := g.get("page", page)
		g.step(call("cms_publishPage", obj{{"pageId", g.ref("page", page)}}, g.envelope("page", g.pageObj(p, "published", 4))))
	}
	publish("Publish the Pricing page.", "Pricing", "Pricing is live.")
	// 43: 42 back (listed in turn 13, 30 back).
	g.begin("Archive the Pricing (old) page.", "Pricing (old) is archived.")
	g.step(call("cms_archivePage", obj{{"pageId", g.ref("page", "Pricing (old)")}}, g.envelope("page", g.pageObj(g.get("page", "Pricing (old)"), "archived", 7))))
	// 44: 34 back.
	addBlock("In Meet the Team on About Us, add our two new hires: Lea (repairs, Innsbruck) and Tomás (support, Lyon).", "Meet the Team", "people",
		"Added Lea and Tomás to Meet the Team.", fld{"people", []obj{{{"name", "Lea"}, {"role", "Repairs, Innsbruck"}}, {{"name", "Tomás"}, {"role", "Support, Lyon"}}}})
	// 45
	g.begin("Create a redirect from /pricing-old to /pricing.", "Redirect created (301).")
	rd := g.make("redirect", "/pricing-old", nil)
	g.step(call("cms_createRedirect", obj{{"siteId", g.ref("site", "Northwind Outdoor")}, {"from", "/pricing-old"}, {"to", "/pricing"}, {"status", 301}},
		g.envelope("redirect", obj{{"id", rd.id}, {"from", "/pricing-old"}, {"to", "/pricing"}, {"status", 301}, {"preserveQuery", true},
			{"hits", 0}, {"createdAt", g.now()}, {"createdBy", editor}, {"conflicts", []obj{}},
			{"validation", obj{{"targetExists", true}, {"loop", false}, {"chainLength", 1}}},
			{"notes", "Keeps links to the 2024 price table working after the old page was archived."},
			{"matchType", "exact"}, {"caseSensitive", false}, {"locales", []string{"en-GB", "de-DE"}},
			{"sources", []obj{{{"path", "/pricing-old"}, {"inboundLinks", 14}, {"lastHit", "2026-02-27T17:42:11Z"}}, {{"path", "/de/pricing-old"}, {"inboundLinks", 3}, {"lastHit", "2026-02-19T08:03:55Z"}}}},
			{"target", obj{{"path", "/pricing"}, {"pageStatus", "published"}, {"httpCheck", 200}, {"checkedAt", g.now()}}},
			{"audit", []obj{{{"action", "redirect.created"}, {"by", editor}, {"at", g.now()}, {"via", "assistant"}}}},
			{"_links", obj{{"self", apiBase + "/redirects/" + rd.id}}}})))
	// 46-47
	g.upload("Upload spring-sale-og.png as the social image for the sale.", "spring-sale-og.png", 1200, 630, 302117, "Spring Sale: up to 40% off", "Uploaded spring-sale-og.png.")
	g.begin("Use it as the SEO image of the Spring Sale page.", "Spring Sale now has its social image.")
	sp := g.get("page", "Spring Sale")
	sp.extra = append(sp.extra, fld{"ogImageId", g.get("asset", "spring-sale-og.png").id})
	g.step(call("cms_updatePage", obj{{"pageId", g.ref("page", "Spring Sale")}, {"seo", obj{{"ogImageId", g.ref("asset", "spring-sale-og.png")}}}},
		g.envelope("page", g.pageObj(sp, "draft", 3))))
	// 48: 34 back, among "Spring Sale 2025".
	publish("Publish the Spring Sale landing page.", "Spring Sale", "Spring Sale is live.")
	// 49: 38 and 24 back, in one step.
	g.begin("Publish the main navigation and the footer menu.", "Both menus are published.")
	g.step(
		call("cms_publishMenu", obj{{"menuId", g.ref("menu", "Main Navigation")}}, g.envelope("menu", g.menuObj(mainNav, g.menuItems(mainNav), "published"))),
		call("cms_publishMenu", obj{{"menuId", g.ref("menu", "Footer")}}, g.envelope("menu", g.menuObj(footer, g.menuItems(footer), "published"))))
	// 50: 47, 36 and 48 back.
	g.begin("Link the Home Hero's button to the Spring Sale page, then publish Home.", "Home Hero links to Spring Sale and Home is live.")
	g.step(call("cms_updateSection", obj{{"sectionId", g.ref("section", "Home Hero")}, {"cta", obj{{"label", "Shop the sale"}, {"pageId", g.ref("page", "Spring Sale")}}}},
		g.envelope("section", g.sectionObj(hh, append(g.textBlocks(hh), block(g.blockID("cta"), "button", fld{"label", "Shop the sale"}, fld{"targetPageId", sp.id})), 2))))
	g.step(call("cms_publishPage", obj{{"pageId", g.ref("page", "Home")}}, g.envelope("page", g.pageObj(g.get("page", "Home"), "published", 3))))
	return g.f
}
