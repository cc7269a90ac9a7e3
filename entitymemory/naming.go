package entitymemory

import "strings"

// words splits a tool name or a JSON key into lowercase words at every
// non-alphanumeric byte and at camelCase boundaries: "cms_createPage",
// "create_page", "createPage", "pages.create" and "get-section-content" give
// [cms create page], [create page], [create page], [pages create] and
// [get section content]. "HTMLPage" gives [html page].
func words(name string) []string {
	var out []string
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, strings.ToLower(name[start:end]))
		}
		start = -1
	}
	for i := 0; i < len(name); i++ {
		switch {
		case byteClass[name[i]] == 0:
			flush(i)
		case start < 0:
			start = i
		case startsCamelWord(name, i):
			flush(i)
			start = i
		}
	}
	flush(len(name))
	return out
}

// startsCamelWord reports whether the letter at i, inside a word, starts
// a new one: a capital after a lowercase letter or a digit ("createPage"),
// or the last capital of a run when a lowercase letter follows
// ("HTMLPage").
func startsCamelWord(name string, i int) bool {
	if byteClass[name[i]] != upperByte {
		return false
	}
	prev := byteClass[name[i-1]]
	nextLower := i+1 < len(name) && byteClass[name[i+1]] == lowerByte
	return prev != upperByte || nextLower
}

// Classes of the ASCII letters and digits; every other byte is 0 and
// separates words.
const (
	lowerByte = 1 + iota
	upperByte
	digitByte
)

// byteClass holds the class of each byte.
var byteClass = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = lowerByte, upperByte
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = digitByte
	}
	return t
}()

// verbs are the operation words tools put around the resource they act on.
var verbs = setOf(
	"get", "list", "create", "update", "delete", "remove", "add", "set", "fetch",
	"find", "search", "query", "read", "write", "edit", "patch", "put", "insert",
	"upsert", "save", "new", "make", "publish", "unpublish", "archive",
	"unarchive", "retrieve", "lookup", "load", "show", "view", "open", "duplicate",
	"copy", "move", "rename", "upload", "download", "attach", "detach",
	"generate", "modify", "change", "replace", "append", "describe", "inspect",
	"browse", "count", "sync", "import", "export", "restore", "clone", "fork",
	"merge", "close", "reopen", "assign", "schedule", "send", "reorder",
	"run", "execute", "call", "invoke", "perform", "trigger",
)

// stopWords are words that never name a resource type: vendor and protocol
// prefixes, prepositions, and the "content"/"details" tails of getters.
var stopWords = setOf(
	"cms", "api", "mcp", "tool", "tools", "wp", "v1", "v2", "v3", "v4", "v5",
	"by", "for", "from", "to", "in", "of", "on", "with", "and", "or", "a", "an",
	"the", "my", "all", "one", "many", "some", "batch", "bulk", "multiple",
	"content", "contents", "details", "detail", "info", "data", "id", "ids",
	"me", "current", "latest", "recent", "new", "it", "this", "that",
	"rest", "graphql", "admin", "json", "http", "https",
)

// compounds are two-word resource types kept whole.
var compounds = setOf(
	"pull_request", "merge_request", "blog_post", "line_item", "payment_intent",
	"setup_intent", "price_rule", "custom_field", "content_type", "draft_order",
	"check_run", "work_item", "user_story", "landing_page", "menu_item",
	"product_variant", "credit_note", "tax_rate", "web_hook", "api_key",
)

func setOf(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// TypeFromToolName guesses the entity type a tool works on from its name,
// for every common naming style: "cms_createPage", "create_page",
// "createPage", "pages.create" and "CreatePage" give "page";
// "get-section-content" gives "section"; "github_create_pull_request"
// gives "pull_request". Verbs and vendor prefixes are dropped, the noun
// after the verb (or, for "pages.create", before it) is singularised, and
// two-word types are joined with '_'. It returns "" when the name holds no
// noun.
func TypeFromToolName(name string) string {
	t, _ := typeFromToolName(name)
	return t
}

// typeFromToolName is TypeFromToolName, also reporting whether the name
// holds a verb: "create_page" says what it acts on; in "intercom_request"
// the noun may name the tool rather than a resource.
func typeFromToolName(name string) (string, bool) {
	ws := words(name)
	verb := -1
	for i, w := range ws {
		if verbs[w] {
			verb = i
			break
		}
	}
	if verb < 0 {
		return joinType(lastNouns(ws)), false
	}
	// The nouns right after the verb ("create_page_section" → page
	// section), else the ones before it ("pages.create").
	nouns := firstNouns(ws[verb+1:])
	if len(nouns) == 0 {
		nouns = lastNouns(ws[:verb])
	}
	return joinType(nouns), true
}

// firstNouns returns the first run of words of ws that are neither verbs
// nor stop words.
func firstNouns(ws []string) []string {
	var nouns []string
	for _, w := range ws {
		if !noun(w) {
			if len(nouns) > 0 {
				break
			}
			continue
		}
		nouns = append(nouns, w)
	}
	return nouns
}

// lastNouns returns the trailing run of words of ws that are neither verbs
// nor stop words.
func lastNouns(ws []string) []string {
	end := len(ws)
	for end > 0 && !noun(ws[end-1]) {
		end--
	}
	start := end
	for start > 0 && noun(ws[start-1]) {
		start--
	}
	return ws[start:end]
}

// noun reports whether the word w is neither a verb nor a stop word.
func noun(w string) bool { return !verbs[w] && !stopWords[w] }

// joinType turns the noun words of a name into a type: the last word
// singularised, or the last two joined when they form a known compound or
// when the last says only what sort of thing it is ("dns_records" is
// dns_record, "catalog_object" stays whole: "record" and "object" alone
// say nothing).
func joinType(nouns []string) string {
	switch len(nouns) {
	case 0:
		return ""
	case 1:
		return singular(nouns[0])
	}
	last := singular(nouns[len(nouns)-1])
	if c := nouns[len(nouns)-2] + "_" + last; compounds[c] || vagueNouns[last] {
		return c
	}
	return last
}

// vagueNouns name a sort of thing rather than what it is; the word before
// one is kept with it.
var vagueNouns = setOf("object", "item", "record", "entity", "resource", "node")

// NormalizeType turns a type named by a result or a rule ("Page",
// "BlogPost", "blog-posts", "drive#file") into the form used for grouping:
// lowercase words joined by '_', last word singular. It returns "" when
// nothing usable is left.
func NormalizeType(t string) string {
	if i := strings.LastIndexByte(t, '#'); i >= 0 {
		t = t[i+1:]
	}
	ws := words(t)
	if len(ws) == 0 || len(ws) > 4 {
		return ""
	}
	ws[len(ws)-1] = singular(ws[len(ws)-1])
	out := strings.Join(ws, "_")
	if len(out) > maxTypeLen {
		return ""
	}
	return out
}

const maxTypeLen = 40

var uncountable = setOf(
	"media", "data", "metadata", "news", "series", "species", "analytics",
	"information", "feedback", "software", "hardware", "equipment", "cms",
	"settings", "status", "access", "address", "business", "process", "class",
	"canvas", "alias", "chaos", "bus", "campus", "corpus", "virus", "bonus",
	"census", "focus", "radius", "analysis", "basis", "thesis", "axis",
)

var irregularSingular = map[string]string{
	"people": "person", "children": "child", "men": "man", "women": "woman",
	"indices": "index", "vertices": "vertex", "analyses": "analysis",
	"criteria": "criterion", "mice": "mouse", "heroes": "hero",
	"movies": "movie", "cookies": "cookie", "zombies": "zombie",
	"aliases": "alias", "statuses": "status", "caches": "cache",
	"niches": "niche", "buses": "bus", "campuses": "campus",
	"viruses": "virus", "bonuses": "bonus", "addresses": "address",
	"businesses": "business", "processes": "process", "classes": "class",
	"axes": "axis", "bases": "base", "databases": "database",
	"responses": "response", "courses": "course", "leaves": "leaf",
	"lives": "life", "knives": "knife", "wolves": "wolf", "halves": "half",
	"shelves": "shelf", "quizzes": "quiz", "echoes": "echo",
	"potatoes": "potato", "tomatoes": "tomato",
}

var irregularPlural = func() map[string]string {
	m := make(map[string]string, len(irregularSingular))
	for p, s := range irregularSingular {
		m[s] = p
	}
	return m
}()

// singular returns the singular of an English noun, good enough for API
// resource names: entries → entry, categories → category, media → media,
// matches → match, boxes → box, people → person, pages → page.
func singular(w string) string {
	if uncountable[w] {
		return w
	}
	if s, ok := irregularSingular[w]; ok {
		return s
	}
	n := len(w)
	switch {
	case n <= 3:
		return w
	case strings.HasSuffix(w, "ies") && n > 4:
		return w[:n-3] + "y"
	case hasSuffix(w, "sses", "shes", "ches", "xes", "zzes"):
		return w[:n-2]
	case hasSuffix(w, "ss", "us", "is"):
		return w
	case w[n-1] == 's':
		return w[:n-1]
	}
	return w
}

// plural returns the plural of a singular type's last word: page → pages,
// entry → entries, media → media, match → matches, person → people. The
// words before it ("blog_post" → "blog_posts") are kept.
func plural(t string) string {
	i := strings.LastIndexByte(t, '_') // -1 for a single word
	return t[:i+1] + pluralWord(t[i+1:])
}

// pluralWord returns the plural of the word w.
func pluralWord(w string) string {
	if uncountable[w] && !singularInS[w] {
		return w
	}
	if p, ok := irregularPlural[w]; ok {
		return p
	}
	n := len(w)
	switch {
	case n == 0:
		return w
	case hasSuffix(w, "s", "x", "z", "ch", "sh"):
		return w + "es"
	case n > 1 && w[n-1] == 'y' && !strings.ContainsRune("aeiou", rune(w[n-2])):
		return w[:n-1] + "ies"
	}
	return w + "s"
}

// singularInS are the words singular keeps as they are for ending in
// 's' that still have a plural ("statuses").
var singularInS = setOf("status", "address", "class", "process", "business", "access", "bus")

// hasSuffix reports whether w ends in any of the suffixes.
func hasSuffix(w string, suffixes ...string) bool {
	for _, suf := range suffixes {
		if strings.HasSuffix(w, suf) {
			return true
		}
	}
	return false
}
