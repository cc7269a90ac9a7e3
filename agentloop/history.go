package agentloop

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/fence"
)

// Defaults of [HistoryConfig].
const (
	// DefaultHistoryTurns is HistoryConfig.MaxTurns when zero.
	DefaultHistoryTurns = 4
	// DefaultSummarizeAfter is HistoryConfig.SummarizeAfter when zero.
	DefaultSummarizeAfter = 2
	// DefaultSummaryTokens is HistoryConfig.SummaryTokens when zero.
	DefaultSummaryTokens = 500
)

// SummaryLayerID is the ID of the built-in layer that shows the rolling
// summary in the system prompt (its template variable is
// historySummary).
const SummaryLayerID = "history-summary"

// SlotHistorySummary is the slot of the history-summary layer: after the
// scratchpad and entity memory, before episodic memory.
const SlotHistorySummary = 200

// HistoryConfig says what of a thread's history the model is sent. The
// zero value is the windowed default: the last DefaultHistoryTurns turns
// and a rolling summary of the older ones.
//
// A turn is a user message and everything up to the next one, so a tool
// call is never separated from its result. A request holds the current
// turn, the MaxTurns turns before it, and the older turns the summary
// does not hold yet: once SummarizeAfter of those have gathered they are
// summarized (when a step is recorded), so a request holds at most
// MaxTurns+SummarizeAfter turns and no turn leaves the prompt before the
// summary holds it. When the window does not fit its token budget, its
// oldest turns are summarized at once, for the step at hand (the current
// turn is always sent; if it alone does not fit, its oldest steps are
// left out, as with Full).
type HistoryConfig struct {
	// Full sends the whole history (within the context window, newest
	// first), with no window and no summary: the behaviour before
	// version 4.
	Full bool
	// MaxTurns is how many recent turns the window keeps whole. Zero is
	// DefaultHistoryTurns.
	MaxTurns int
	// MaxTokens caps the window's tokens below the history's share of
	// the context window. Zero means that share.
	MaxTokens int
	// SummarizeAfter is how many turns may leave the window before they
	// are summarized. Zero is DefaultSummarizeAfter.
	SummarizeAfter int
	// SummaryTokens is the budget of the history-summary layer, taken
	// from the history's share of the window (at most half of it), and
	// the size the default summarizer keeps its summary within. Zero is
	// DefaultSummaryTokens.
	SummaryTokens int
	// Summarizer writes the summary. Nil is a [DeterministicSummarizer]
	// counting with Config.Counter, which needs no model. A
	// DeterministicSummarizer runs when a step is recorded (it takes
	// well under a millisecond, and keeps the prompts of a thread
	// reproducible); any other runs in the background, the steps
	// meanwhile use the previous summary, and a run waits for it before
	// it returns.
	Summarizer Summarizer
	// RetainMessages bounds the stored transcript. When a summary is
	// stored, the segments whose messages are all older than the last
	// RetainMessages messages and covered by the summary are deleted,
	// and in those the summary comes to cover that are kept, each text,
	// tool-call arguments and tool result over [ElideAbove] bytes is
	// elided: cut to a stub that keeps its size and SHA-256 ([Elided]),
	// so a thread's records stay bounded however large the model's
	// arguments. The messages the summary does not cover (the window)
	// are never touched. What is dropped is dropped from the
	// transcript only: the summary, the layers' own records (the
	// scratchpad, the episodic log, which keeps each result whole) and
	// the audit trail keep theirs. Zero is DefaultRetainMessages;
	// negative keeps every message whole. With Full there is no
	// summary, so nothing is dropped.
	RetainMessages int
}

func (h HistoryConfig) withDefaults(c prompt.Counter) HistoryConfig {
	if h.MaxTurns <= 0 {
		h.MaxTurns = DefaultHistoryTurns
	}
	if h.SummarizeAfter <= 0 {
		h.SummarizeAfter = DefaultSummarizeAfter
	}
	if h.SummaryTokens <= 0 {
		h.SummaryTokens = DefaultSummaryTokens
	}
	if h.Summarizer == nil {
		h.Summarizer = &DeterministicSummarizer{MaxTokens: h.SummaryTokens, Counter: c}
	}
	if h.RetainMessages == 0 {
		h.RetainMessages = DefaultRetainMessages
	}
	return h
}

// Summarizer writes a thread's rolling summary.
//
// Summarize returns the new summary of a thread whose older messages
// previous summarizes (empty for the first) and msgs follow. It may be
// called from a goroutine of its own, never concurrently for one run.
// An error keeps the previous summary; the messages are summarized at
// the next threshold.
type Summarizer interface {
	Summarize(ctx context.Context, previous string, msgs []StoredMessage) (string, error)
}

// DefaultSummaryPrompt is the prompt [NewModelSummarizer] uses when given
// none. It is followed by the previous summary and the messages.
const DefaultSummaryPrompt = `Update the summary of the conversation below for the assistant that continues it.
Keep every user request, every tool called with the IDs and names of what it created, changed or found, and each outcome.
Never drop an ID. Be brief: one line per request. Answer with the summary only.`

// ModelSummarizer is a [Summarizer] that asks a langchaingo model.
type ModelSummarizer struct {
	model  llms.Model
	prompt string
}

// NewModelSummarizer returns a Summarizer that sends model prompt (empty
// is DefaultSummaryPrompt), the previous summary and the messages as
// text, and takes its answer as the summary.
func NewModelSummarizer(model llms.Model, prompt string) *ModelSummarizer {
	if prompt == "" {
		prompt = DefaultSummaryPrompt
	}
	return &ModelSummarizer{model: model, prompt: prompt}
}

// Summarize asks the model.
func (s *ModelSummarizer) Summarize(ctx context.Context, previous string, msgs []StoredMessage) (string, error) {
	var b strings.Builder
	if previous != "" {
		b.WriteString("Summary so far:\n" + previous + "\n\n")
	}
	b.WriteString("Messages:\n")
	for _, m := range msgs {
		writeMessage(&b, m)
	}
	resp, err := s.model.GenerateContent(ctx, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, s.prompt),
		llms.TextParts(llms.ChatMessageTypeHuman, b.String()),
	})
	if err != nil {
		return "", fmt.Errorf("agentloop: summarize: %w", err)
	}
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil || strings.TrimSpace(resp.Choices[0].Content) == "" {
		return "", fmt.Errorf("agentloop: summarize: %w", ErrEmptyResponse)
	}
	return strings.TrimSpace(resp.Choices[0].Content), nil
}

// writeMessage writes a message as one or more lines of text.
func writeMessage(b *strings.Builder, m StoredMessage) {
	if m.Text != "" {
		b.WriteString(m.Role + ": " + m.Text + "\n")
	}
	for _, c := range m.ToolCalls {
		b.WriteString("tool call " + c.ID + ": " + c.Name + " " + c.Arguments + "\n")
	}
	for _, r := range m.ToolResults {
		b.WriteString("tool result " + r.CallID + " (" + r.Name + "): " + r.Content + "\n")
	}
}

// DeterministicSummarizer is the [Summarizer] that needs no model. Each
// turn becomes one line: the user's request, each tool called with its
// call ID and the IDs and names of the entities its arguments and result
// mention (read
// with a forgiving JSON scanner, so a truncated result still gives its
// IDs), whether it failed, and the answer's start. The previous summary
// is kept and the new lines added; when the summary passes MaxTokens,
// its oldest lines are folded into one "Entities seen earlier" line that
// keeps every ID (with its name), so a summary never drops an ID; only
// when that line alone passes the limit are its oldest IDs dropped.
type DeterministicSummarizer struct {
	// MaxTokens bounds the summary, counted by Counter. Zero is
	// DefaultSummaryTokens.
	MaxTokens int
	// Counter counts tokens; nil is the default estimate.
	Counter interface{ Count(string) int }
}

// entitiesHeader starts the line that keeps the IDs of folded lines.
const entitiesHeader = "Entities seen earlier: "

// maxRequest and maxAnswer bound the quoted request and answer of a
// line, in bytes.
const (
	maxRequest = 200
	maxAnswer  = 120
)

// Summarize adds a line per turn of msgs to previous.
func (s *DeterministicSummarizer) Summarize(_ context.Context, previous string, msgs []StoredMessage) (string, error) {
	var lines []string
	if previous != "" {
		lines = strings.Split(previous, "\n")
	}
	var cur *strings.Builder
	flush := func() {
		if cur != nil && cur.Len() > 0 {
			lines = append(lines, cur.String())
		}
		cur = &strings.Builder{}
	}
	flush()
	names := map[string]string{} // call ID -> tool name
	args := map[string]string{}  // call ID -> arguments
	for _, m := range msgs {
		switch m.Role {
		case RoleUser:
			flush()
			cur.WriteString("- User: " + summaryText(m.Text, maxRequest))
		case RoleAssistant:
			for _, c := range m.ToolCalls {
				names[c.ID], args[c.ID] = c.Name, c.Arguments
			}
			if m.Text != "" && len(m.ToolCalls) == 0 {
				cur.WriteString(" | answer: " + summaryText(m.Text, maxAnswer))
			}
		case RoleTool:
			for _, r := range m.ToolResults {
				name := r.Name
				if name == "" {
					name = names[r.CallID]
				}
				cur.WriteString(" | " + summaryID(name) + " (call " + summaryID(r.CallID) + ")")
				if strings.HasPrefix(r.Content, "error: ") {
					cur.WriteString(" failed")
				}
				ents := entities(args[r.CallID])
				for _, e := range entities(r.Content) {
					if !slices.Contains(ents, e) {
						ents = append(ents, e)
					}
				}
				if len(ents) > 0 {
					cur.WriteString(" → " + strings.Join(ents, ", "))
				}
			}
		}
	}
	flush()
	return s.fit(lines), nil
}

// fit folds the oldest lines into the entities line until the summary
// fits MaxTokens.
func (s *DeterministicSummarizer) fit(lines []string) string {
	limit := s.MaxTokens
	if limit <= 0 {
		limit = DefaultSummaryTokens
	}
	count := func(t string) int {
		if s.Counter != nil {
			return s.Counter.Count(t)
		}
		return layer.Query{}.Count(t)
	}
	var seen []string // the entities line's items, oldest first
	if len(lines) > 0 && strings.HasPrefix(lines[0], entitiesHeader) {
		seen = strings.Split(strings.TrimPrefix(lines[0], entitiesHeader), "; ")
		lines = lines[1:]
	}
	// Each line is counted once: the summary's count is the sum of its
	// lines' (the newlines between them count nothing more than the
	// estimate's rounding).
	counts := make([]int, len(lines))
	total := 0
	for i, l := range lines {
		counts[i] = count(l)
		total += counts[i]
	}
	seenTokens := func() int {
		if len(seen) == 0 {
			return 0
		}
		return count(entitiesHeader + strings.Join(seen, "; "))
	}
	st := seenTokens()
	for total+st > limit && len(lines) > 0 {
		for _, e := range lineEntities(lines[0]) {
			seen = addEntity(seen, e)
		}
		total -= counts[0]
		lines, counts = lines[1:], counts[1:]
		st = seenTokens()
	}
	// The list alone passes the budget: drop entities from it, those
	// without a name first (nothing refers back to them by name), the
	// oldest first.
	for len(seen) > 0 && st > limit {
		if i := slices.IndexFunc(seen, func(e string) bool { _, named := entityID(e); return !named }); i >= 0 {
			seen = slices.Delete(seen, i, i+1)
		} else {
			seen = seen[1:]
		}
		st = seenTokens()
	}
	out := strings.Join(lines, "\n")
	if len(seen) > 0 {
		out = entitiesHeader + strings.Join(seen, "; ") + "\n" + out
	}
	return strings.TrimSpace(out)
}

// addEntity adds e (an ID, alone or followed by its quoted name) to the
// entities line's items once per ID: an ID already listed keeps its
// place and takes e's name if e has one (the newer name), so a bare
// reference to an entity listed with its name adds nothing.
func addEntity(seen []string, e string) []string {
	id, named := entityID(e)
	for i, s := range seen {
		if sid, _ := entityID(s); sid == id {
			if named {
				seen[i] = e
			}
			return seen
		}
	}
	return append(seen, e)
}

// lineEntities returns the entities a summary line lists after its "→"
// marks.
func lineEntities(line string) []string {
	var out []string
	for _, part := range strings.Split(line, " → ")[1:] {
		if i := strings.Index(part, " | "); i >= 0 {
			part = part[:i]
		}
		out = append(out, strings.Split(part, ", ")...)
	}
	return out
}

// maxEntities bounds the entities listed for one result.
const maxEntities = 8

// entities returns the IDs that a tool result or arguments mention, read
// with jsonx's forgiving scanner to a depth of three: an object's own ID
// (its "id" member) with its name (title, name, slug, filename, heading
// or label) next to it, and the IDs it refers to ("…Id" and "…_id"
// members) alone, so a reference is never paired with the name of the
// object that holds it. Request, trace and correlation IDs are left out:
// nothing refers back to them.
func entities(content string) []string {
	v, _ := jsonx.ScanValue([]byte(content), 0)
	var out []string
	add := func(e string) {
		if len(out) < maxEntities && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	var walk func(v jsonx.Value, depth int)
	walk = func(v jsonx.Value, depth int) {
		if len(out) >= maxEntities || depth > 3 {
			return
		}
		switch v.Kind {
		case jsonx.KindArray:
			v.Elems(func(e jsonx.Value) bool { walk(e, depth+1); return len(out) < maxEntities })
		case jsonx.KindObject:
			var id, name string
			var refs []string
			for _, f := range v.Fields(nil) {
				k := string(f.Key)
				switch {
				case f.Value.Kind == jsonx.KindObject || f.Value.Kind == jsonx.KindArray:
					walk(f.Value, depth+1)
				case k == "id" || k == "ID":
					id = f.Value.Scalar()
				case strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "ID"):
					if !untracked(k) {
						if r := f.Value.Scalar(); r != "" {
							refs = append(refs, summaryID(clip(oneLine(r), 80)))
						}
					}
				case name == "" && (k == "title" || k == "name" || k == "slug" || k == "filename" || k == "heading" || k == "label"):
					name = f.Value.Scalar()
				}
			}
			if id != "" {
				e := summaryID(clip(oneLine(id), 80))
				if name != "" {
					e += " " + quoteName(clip(oneLine(name), 60))
				}
				add(e)
			}
			for _, r := range refs {
				add(r)
			}
		}
	}
	walk(v, 0)
	return out
}

// untracked reports whether an ID key names something no later turn
// refers to: a request, trace, correlation or idempotency ID.
func untracked(key string) bool {
	k := strings.ToLower(key)
	for _, p := range []string{"request", "trace", "correlation", "idempotency", "span"} {
		if strings.HasPrefix(k, p) || strings.HasPrefix(k, "x_"+p) || strings.HasPrefix(k, "x-"+p) {
			return true
		}
	}
	return false
}

// quoteName quotes a name for a summary line, without the separators the
// line uses or a quote that would end it early.
func quoteName(s string) string {
	return `"` + nameSeparators.Replace(s) + `"`
}

// nameSeparators replaces in a name the separators of summary lines and
// its quotes. "; " goes before ";", so that it cannot become ", ".
var nameSeparators = strings.NewReplacer("; ", " ", ";", ",", ", ", " ", "→", "->", "|", "/", `"`, "'")

// textSeparators replaces in a request or an answer the separators that
// delimit a line's segments and entity lists.
var textSeparators = strings.NewReplacer("→", "->", "|", "/")

// summaryText is a user's request or a model's answer as a summary line
// quotes it: on one line, clipped to n bytes, without the separators of
// the line's segments (" | ") and entity lists (" → "), so that it cannot
// imitate a tool call, an entity or an answer.
func summaryText(s string, n int) string {
	return textSeparators.Replace(clip(oneLine(s), n))
}

// summaryID is an ID, a call ID or a tool name as a summary line writes
// it: bare when it is one word of letters, digits and the punctuation IDs
// use, else quoted as a Go string literal (which strconv.Unquote reads
// back exactly) in which the line's separators '|', '→', ',' and ';' are
// escaped too, with every character that is not printable or is a
// formatting control. No value can so end its item, its list or its
// segment, or start a line: whatever a tool result or the model puts in
// an ID stays that one ID.
func summaryID(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool { return !bareIDRune(r) }) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '|' || r == '→' || r == ',' || r == ';' || r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' || unicode.Is(unicode.Cf, r):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// bareIDRune reports whether r may appear in an ID written bare: a letter,
// a digit, or punctuation that no separator of a summary line uses.
func bareIDRune(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_.:/#@+=~!?*&$%^'[]{}", r)
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// entityID returns the ID of an item of an entities list ("page_1",
// followed by its quoted name, or a quoted ID with or without a name) and
// whether a name follows it.
func entityID(e string) (id string, named bool) {
	if strings.HasPrefix(e, `"`) {
		for i := 1; i < len(e); i++ {
			switch e[i] {
			case '\\':
				i++
			case '"':
				return e[:i+1], i+1 < len(e)
			}
		}
	}
	id, _, named = strings.Cut(e, " ")
	return id, named
}

// oneLine joins the fields of s with single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts s to n bytes at a rune boundary, marking the cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return truncate(s, n) + "…"
}

// summaryLayer is the built-in history-summary layer of a run: its
// block is the summary the step uses, set by the run before the layers
// are recalled (atomically: a Recall that outlived its timeout may still
// read it).
type summaryLayer struct {
	text   atomic.Pointer[string]
	tokens int

	// mu guards the parts of the summary last split, for Candidates and
	// block: a summary changes far less often than a step recalls it.
	mu     sync.Mutex
	split  string
	parts  []summaryPart
	corpus *lexical.Corpus
}

// partsOf returns the parts of summary s and a BM25 corpus of them, split
// once per summary (the run stores each step's summary anew, the same
// text until a new summary is committed).
func (l *summaryLayer) partsOf(s *string) ([]summaryPart, *lexical.Corpus) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.corpus == nil || l.split != *s {
		l.split, l.parts, l.corpus = *s, summaryParts(*s), &lexical.Corpus{}
		for _, p := range l.parts {
			l.corpus.Add(p.key, p.text)
		}
	}
	return l.parts, l.corpus
}

// Spec is the layer's spec: execution scope, a budget of SummaryTokens
// (the run takes it from the history's share, not the layers').
//
// The budget is SummaryTokens plus what the block's header and fence
// take, so a summary that fills SummaryTokens is never left out.
func (l *summaryLayer) Spec() layer.Spec {
	return layer.Spec{ID: SummaryLayerID, Slot: SlotHistorySummary, Scope: layer.ScopeExecution,
		Budget: layer.Budget{Max: l.tokens + summaryOverhead}}
}

// summaryHeader introduces the summary block.
const summaryHeader = "Summary of the earlier conversation, older than the messages below (IDs are exact):\n"

// summaryOverhead is what the header and the fence add to a summary, by
// the default estimate, with room for a counter that counts them higher.
var summaryOverhead = 2 * layer.Query{}.Count(summaryHeader+fence.Wrap(fence.Tag(SummaryLayerID), ""))

// Recall returns the summary the step uses, if there is one.
func (l *summaryLayer) Recall(_ context.Context, q layer.Query) ([]layer.Item, error) {
	text := l.whole()
	if text == "" {
		return nil, nil
	}
	return []layer.Item{{Text: text, Tokens: q.Count(text)}}, nil
}

// whole is the summary's block: its header and the fenced summary; empty
// when there is no summary.
func (l *summaryLayer) whole() string {
	s := l.text.Load()
	if s == nil || *s == "" {
		return ""
	}
	return summaryHeader + fence.Wrap(fence.Tag(SummaryLayerID), *s)
}

// summaryPart is one candidate of the summary in scored assembly: a
// line of it, or one entity of its "Entities seen earlier" line.
type summaryPart struct {
	key    string // "line-<n>" or "entity-<n>", n its place in the summary
	text   string
	entity bool
}

// summaryParts splits a summary into its candidates, in its order: the
// entities of a leading "Entities seen earlier" line one by one, then
// every other non-empty line.
func summaryParts(text string) []summaryPart {
	var parts []summaryPart
	for i, ln := range strings.Split(text, "\n") {
		switch {
		case i == 0 && strings.HasPrefix(ln, entitiesHeader):
			for _, e := range strings.Split(strings.TrimPrefix(ln, entitiesHeader), "; ") {
				if e != "" {
					parts = append(parts, summaryPart{key: "entity-" + strconv.Itoa(len(parts)), text: e, entity: true})
				}
			}
		case strings.TrimSpace(ln) != "":
			parts = append(parts, summaryPart{key: "line-" + strconv.Itoa(len(parts)), text: ln})
		}
	}
	return parts
}

// Candidates offers the summary to scored assembly (see AssemblyConfig)
// in parts, so that when the shared pool is short the parts most like the
// user's message stay: each entity of the "Entities seen earlier" line
// (an ID and its name) and each other line is a candidate. Similarity is
// BM25 over the parts, divided by the query's top score; importance is
// 1, the most a fact can have (the summary's IDs are how the agent
// resolves what the window no longer shows; at 0.5 the 50-turn CMS
// conversation lost references at budgets where it loses none at 1);
// the run gives them the step's time (the summary is as recent as the
// conversation it is part of). The
// parts won are shown in the summary's own order (see block), so the
// summary still reads from oldest to newest.
func (l *summaryLayer) Candidates(_ context.Context, q layer.Query) ([]prompt.Candidate, error) {
	s := l.text.Load()
	if s == nil || *s == "" {
		return nil, nil
	}
	parts, corpus := l.partsOf(s)
	sim := make([]float64, len(parts))
	for _, h := range corpus.Rank(q.Text) {
		sim[h.Doc] = h.Similarity
	}
	out := make([]prompt.Candidate, len(parts))
	for i, p := range parts {
		// A part takes its separator with it: "; " after an entity, a
		// line break after a line.
		sep := "\n"
		if p.entity {
			sep = "; "
		}
		out[i] = prompt.Candidate{Layer: SummaryLayerID, Key: p.key, Text: p.text, Tokens: q.Count(p.text + sep),
			Similarity: sim[i], Importance: 1, Source: "summary"}
	}
	return out, nil
}

// frame is what the summary's block takes beyond its parts cs, as
// Candidates counted them: the header, the fence and the separators
// (negative when counting the parts one by one rounds up more than they
// add).
func (l *summaryLayer) frame(q layer.Query, cs []prompt.Candidate) int {
	won := make(map[string]bool, len(cs))
	n := 0
	for _, c := range cs {
		won[c.Key] = true
		n += c.Tokens
	}
	return q.Count(l.block(won)) - n
}

// block renders the parts of the summary whose keys won, in the
// summary's order, as Recall renders the whole: the entities first on one
// line, then the other lines. It is empty when none did.
func (l *summaryLayer) block(won map[string]bool) string {
	s := l.text.Load()
	if s == nil {
		return ""
	}
	parts, _ := l.partsOf(s)
	var ents, lines []string
	for _, p := range parts {
		switch {
		case !won[p.key]:
		case p.entity:
			ents = append(ents, p.text)
		default:
			lines = append(lines, p.text)
		}
	}
	if len(ents) > 0 {
		lines = slices.Insert(lines, 0, entitiesHeader+strings.Join(ents, "; "))
	}
	if len(lines) == 0 {
		return ""
	}
	return summaryHeader + fence.Wrap(fence.Tag(SummaryLayerID), strings.Join(lines, "\n"))
}

// OnSpawn gives a child agent no summary: its history is its own.
func (l *summaryLayer) OnSpawn(context.Context, layer.Env) (layer.Layer, error) { return nil, nil }

// latest is the summary the next prompt uses: one made for the current
// step (its window did not fit), else the committed one.
func (th *thread) latest() Summary {
	if th.pending != nil {
		return *th.pending
	}
	return th.summary
}

// windowed reports whether the run sends a window and a summary.
func (r *run) windowed() bool { return r.thread != nil && !r.a.cfg.History.Full }

// stored returns the thread's messages from index from up to upTo as
// stored: the loaded records (never compacted), then the run's own
// messages, masked.
func (r *run) stored(from, upTo int) ([]StoredMessage, error) {
	out := make([]StoredMessage, 0, upTo-from)
	for i := from - r.base; i < upTo-r.base; i++ {
		if i < len(r.loadedStored) {
			out = append(out, r.loadedStored[i])
			continue
		}
		m, err := storedMessage(r.msgs[i])
		if err != nil {
			return nil, err
		}
		out = append(out, r.a.redact.message(m, nil))
	}
	return out, nil
}

// turnStarts returns the indices in r.msgs of the user messages from
// index from on.
func (r *run) turnStarts(from int) []int {
	var out []int
	for i := from; i < len(r.msgs); i++ {
		if r.msgs[i].Role == llms.ChatMessageTypeHuman {
			out = append(out, i)
		}
	}
	return out
}

// summarizeTo makes a pending summary that covers the thread's messages
// up to upTo (an index in the thread), synchronously.
func (r *run) summarizeTo(ctx context.Context, upTo int) error {
	th := r.thread
	prev := th.latest()
	if upTo <= prev.Covers {
		return nil
	}
	part, err := r.stored(prev.Covers, upTo)
	if err != nil {
		return err
	}
	start := time.Now()
	text, err := r.a.cfg.History.Summarizer.Summarize(ctx, prev.Text, part)
	if err != nil {
		return err
	}
	th.pending = &Summary{Version: prev.Version + 1, Covers: upTo, Text: text}
	r.a.emit(ctx, Event{Kind: EventSummary, ThreadID: r.threadID, Step: r.res.Steps, Duration: time.Since(start)})
	return nil
}

// summaryDue returns the index in the thread up to which the messages
// are due to be summarized, or 0.
func (r *run) summaryDue() int {
	h := r.a.cfg.History
	covers := r.thread.latest().Covers
	starts := r.turnStarts(covers - r.base)
	out := len(starts) - h.MaxTurns
	if out < h.SummarizeAfter {
		return 0
	}
	return r.base + starts[out]
}

// background is a summary being made off the critical path.
type background struct {
	done chan struct{}
	sum  *Summary
	err  error
	took time.Duration
}

// maybeSummarize runs before a step's checkpoint: it takes a finished
// background summary as the pending one, and starts (or, inline, makes)
// a summary when enough turns have left the window.
func (r *run) maybeSummarize(ctx context.Context) {
	if !r.windowed() {
		return
	}
	th := r.thread
	if bg := r.bg; bg != nil {
		select {
		case <-bg.done:
			r.adopt()
		default:
			return
		}
	}
	upTo := r.summaryDue()
	if upTo == 0 {
		return
	}
	// A DeterministicSummarizer runs inline, as the step is recorded.
	if _, inline := r.a.cfg.History.Summarizer.(*DeterministicSummarizer); inline {
		if err := r.summarizeTo(ctx, upTo); err != nil {
			r.a.logSummaryError(ctx, r.threadID, err)
		}
		return
	}
	prev := th.latest()
	part, err := r.stored(prev.Covers, upTo)
	if err != nil {
		r.a.logSummaryError(ctx, r.threadID, err)
		return
	}
	bg := &background{done: make(chan struct{})}
	r.bg = bg
	sctx := context.WithoutCancel(ctx)
	go func() {
		defer close(bg.done)
		defer func() {
			if p := recover(); p != nil {
				bg.err = r.a.recovered(sctx, "summarizer", p)
			}
		}()
		start := time.Now()
		text, err := r.a.cfg.History.Summarizer.Summarize(sctx, prev.Text, part)
		bg.sum, bg.err, bg.took = &Summary{Version: prev.Version + 1, Covers: upTo, Text: text}, err, time.Since(start)
	}()
}

// adopt takes the finished background summary as the pending one.
func (r *run) adopt() {
	bg := r.bg
	r.bg = nil
	if bg.err != nil {
		r.a.logSummaryError(context.Background(), r.threadID, bg.err)
		return
	}
	if bg.sum.Covers > r.thread.latest().Covers {
		r.thread.pending = bg.sum
		r.a.emit(context.Background(), Event{Kind: EventSummary, ThreadID: r.threadID, Step: r.res.Steps, Duration: bg.took})
	}
}

// flushSummary waits for a background summary when a run ends and
// stores it.
func (r *run) flushSummary(ctx context.Context) error {
	if r.bg == nil {
		return nil
	}
	sctx, cancel := r.saveContext(ctx)
	defer cancel()
	select {
	case <-r.bg.done:
		r.adopt()
	case <-sctx.Done():
		return nil
	}
	if r.thread.pending == nil {
		return nil
	}
	return r.checkpoint(sctx)
}

// window returns the messages of r.msgs the summary does not cover,
// first summarizing, at once, the oldest turns of a window that does not
// fit budget tokens (the current turn is kept).
func (r *run) window(ctx context.Context, budget int) ([]llms.MessageContent, error) {
	h := r.a.cfg.History
	if h.MaxTokens > 0 {
		budget = min(budget, h.MaxTokens)
	}
	from := r.thread.latest().Covers - r.base
	counts := r.est.counts(r.a.cfg.Counter, r.msgs)
	total := 0
	for _, n := range counts[from:] {
		total += n
	}
	if total <= budget {
		return r.msgs[from:], nil
	}
	starts := r.turnStarts(from)
	if len(starts) < 2 {
		return r.msgs[from:], nil
	}
	// Drop whole turns, oldest first, until the rest fits or only the
	// current turn is left.
	cut := starts[len(starts)-1]
	rest := total
	for i := from; i < cut; i++ {
		rest -= counts[i]
		if j, ok := slices.BinarySearch(starts, i+1); ok && rest <= budget {
			cut = starts[j]
			break
		}
	}
	if r.bg != nil {
		select {
		case <-r.bg.done:
			r.adopt()
		case <-ctx.Done():
			return r.msgs[from:], nil
		}
	}
	if err := r.summarizeTo(ctx, r.base+cut); err != nil {
		// Without a summary the turns are not dropped: the projection
		// keeps the newest messages that fit.
		r.a.logSummaryError(ctx, r.threadID, err)
		return r.msgs[from:], nil
	}
	return r.msgs[r.thread.latest().Covers-r.base:], nil
}

// logSummaryError reports a failed summary.
func (a *Agent) logSummaryError(ctx context.Context, threadID string, err error) {
	a.emit(ctx, Event{Kind: EventSummary, ThreadID: threadID, Err: err})
}
