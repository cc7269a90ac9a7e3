package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/internal/textcut"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/thread"
)

// Defaults of [Config].
const (
	// DefaultTurns is Config.MaxTurns when zero.
	DefaultTurns = 4
	// DefaultSummarizeAfter is Config.SummarizeAfter when zero.
	DefaultSummarizeAfter = 2
	// DefaultSummaryTokens is Config.SummaryTokens when zero.
	DefaultSummaryTokens = 500
)

// SummaryLayerID is the ID of the built-in layer that shows the rolling
// summary in the system prompt (its template variable is
// historySummary).
// Its block's tag is the ID, <history_summary>. It stores nothing.
const SummaryLayerID = "history_summary"

// SlotHistorySummary is the slot of the history_summary layer: after the
// scratchpad and entity memory, before episodic memory.
const SlotHistorySummary = 200

// Config says what of a thread's history the model is sent. The zero
// value is the windowed default: the last DefaultTurns turns and a
// rolling summary of the older ones.
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
type Config struct {
	// Full sends the whole history (within the context window, newest
	// first), with no window and no summary.
	Full bool
	// MaxTurns is how many recent turns the window keeps whole. Zero is
	// DefaultTurns.
	MaxTurns int
	// MaxTokens caps the window's tokens below the history's share of
	// the context window. Zero means that share.
	MaxTokens int
	// SummarizeAfter is how many turns may leave the window before they
	// are summarized. Zero is DefaultSummarizeAfter.
	SummarizeAfter int
	// SummaryTokens is the budget of the history_summary layer, taken
	// from the history's share of the window (at most half of it), and
	// the size the default summarizer keeps its summary within. Zero is
	// DefaultSummaryTokens.
	SummaryTokens int
	// Summarizer writes the summary. Nil is a [DeterministicSummarizer]
	// counting with the agent's counter, which needs no model. A
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
	// tool-call arguments and tool result over [thread.ElideAbove] bytes is
	// elided: cut to a stub that keeps its size and SHA-256 ([thread.Elided]),
	// so a thread's records stay bounded however large the model's
	// arguments. The messages the summary does not cover (the window)
	// are never touched. What is dropped is dropped from the
	// transcript only: the summary, the layers' own records (the
	// scratchpad, the episodic log, which keeps each result whole) and
	// the audit trail keep theirs. Zero is thread.DefaultRetainMessages;
	// negative keeps every message whole. With Full there is no
	// summary, so nothing is dropped.
	RetainMessages int
}

// WithDefaults returns h with each zero field set to its default; the
// default summarizer counts with c.
func (h Config) WithDefaults(c prompt.Counter) Config {
	if h.MaxTurns <= 0 {
		h.MaxTurns = DefaultTurns
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
		h.RetainMessages = thread.DefaultRetainMessages
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
	Summarize(ctx context.Context, previous string, msgs []thread.Message) (string, error)
}

// ErrEmptySummary means a model asked for a summary returned no text.
var ErrEmptySummary = errors.New("history: summarize: the model returned no summary")

// DefaultSummaryPrompt is the prompt [NewModelSummarizer] uses when given
// none. It is followed by the previous summary and the messages.
const DefaultSummaryPrompt = `Update the summary of the conversation below for the assistant that continues it.
Keep every user request, every tool called with the IDs and names of what it created, changed or found, and each outcome.
Never drop an ID. Be brief: one line per request, as
- User: <request> | <tool> (call <call ID>) → <ID> "<name>", <ID> | answer: <outcome>
Keep the lines of the summary so far as they are. Answer with the summary only.`

// ModelSummarizer is a [Summarizer] that asks a langchaingo model.
//
// With MaxTokens set, a summary that passes it is told more coarsely by
// the model (see [DefaultCondensePrompt]): older turns in a line each,
// the oldest folded into one line of their IDs and names. What the
// model's answer still has beyond MaxTokens is fitted as [Fit] does.
type ModelSummarizer struct {
	model  llms.Model
	prompt string

	// MaxTokens bounds the summary, counted by Counter. Zero means no
	// bound: the history-summary layer fits the summary to each step's
	// budget when it shows it.
	MaxTokens int
	// Counter counts tokens; nil is the default estimate.
	Counter interface{ Count(string) int }
	// CondensePrompt is the prompt sent with a summary that passes
	// MaxTokens; "%d" in it is MaxTokens. Empty is DefaultCondensePrompt.
	CondensePrompt string
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
func (s *ModelSummarizer) Summarize(ctx context.Context, previous string, msgs []thread.Message) (string, error) {
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
		return "", fmt.Errorf("history: summarize: %w", err)
	}
	text, ok := answer(resp)
	if !ok {
		return "", ErrEmptySummary
	}
	return s.condense(ctx, text)
}

// answer returns the text of a model's answer, and false when it has none.
func answer(resp *llms.ContentResponse) (string, bool) {
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil || strings.TrimSpace(resp.Choices[0].Content) == "" {
		return "", false
	}
	return strings.TrimSpace(resp.Choices[0].Content), true
}

// writeMessage writes a message as one or more lines of text.
func writeMessage(b *strings.Builder, m thread.Message) {
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
// its older lines are told more coarsely (see [Fit]): each becomes a
// shorter turn line, then the oldest are folded into one "Entities seen
// earlier" line that keeps every ID (with its name), so a summary never
// drops an ID; only when that line alone passes the limit are its
// oldest IDs dropped.
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
func (s *DeterministicSummarizer) Summarize(_ context.Context, previous string, msgs []thread.Message) (string, error) {
	t := turnLines{names: map[string]string{}, args: map[string]string{}}
	if previous != "" {
		t.lines = strings.Split(previous, "\n")
	}
	for _, m := range msgs {
		t.add(m)
	}
	t.flush()
	return s.fit(t.lines), nil
}

// turnLines builds a summary's lines, one per turn: the line of the turn
// under way is cur, added to lines when the next turn starts.
type turnLines struct {
	lines       []string
	cur         strings.Builder
	names, args map[string]string // call ID -> tool name, arguments
}

// flush ends the line under way.
func (t *turnLines) flush() {
	if t.cur.Len() > 0 {
		t.lines = append(t.lines, t.cur.String())
	}
	t.cur.Reset()
}

// add adds what m says to the lines: a user's message starts a turn.
func (t *turnLines) add(m thread.Message) {
	switch m.Role {
	case thread.RoleUser:
		t.flush()
		t.cur.WriteString("- User: " + summaryText(m.Text, maxRequest))
	case thread.RoleAssistant:
		for _, c := range m.ToolCalls {
			t.names[c.ID], t.args[c.ID] = c.Name, c.Arguments
		}
		if m.Text != "" && len(m.ToolCalls) == 0 {
			t.cur.WriteString(" | answer: " + summaryText(m.Text, maxAnswer))
		}
	case thread.RoleTool:
		for _, r := range m.ToolResults {
			writeResult(&t.cur, r, cmp.Or(r.Name, t.names[r.CallID]), t.args[r.CallID])
		}
	}
}

// writeResult writes the part of a turn's line about one tool result:
// the tool's name and call ID, whether it failed, and the entities its
// arguments and result name.
func writeResult(b *strings.Builder, r thread.ToolResult, name, args string) {
	b.WriteString(" | " + summaryID(name) + " (call " + summaryID(r.CallID) + ")")
	if strings.HasPrefix(r.Content, "error: ") {
		b.WriteString(" failed")
	}
	ents := entities(args)
	for _, e := range entities(r.Content) {
		if !slices.Contains(ents, e) {
			ents = append(ents, e)
		}
	}
	if len(ents) > 0 {
		b.WriteString(" → " + strings.Join(ents, ", "))
	}
}

// fit makes the summary fit MaxTokens (see [Fit]): it turns the oldest
// lines of steps into turn lines and folds the oldest lines into the
// entities line, keeping the newest lines as steps as long as it can.
func (s *DeterministicSummarizer) fit(lines []string) string {
	limit := s.MaxTokens
	if limit <= 0 {
		limit = DefaultSummaryTokens
	}
	count := layer.Query{Counter: s.Counter}.Count
	seen, lines := splitEntitiesLine(lines) // the entities line's items, oldest first
	// Each line is counted once: the summary's count is the sum of its
	// lines' (the newlines between them count nothing more than the
	// estimate's rounding).
	f := fitting{count: count, limit: limit, seen: seen, lines: lines}
	f.counts, f.total = lineCounts(count, lines)
	f.st = entitiesTokens(count, seen)
	// The newest lines within half of what the entities line leaves stay
	// steps while older ones are told more coarsely; then they too.
	for _, keep := range []int{f.newest((limit - f.st) / 2), 0} {
		f.coarsen(keep)
		f.fold(keep)
	}
	seen, lines, st := f.seen, f.lines, f.st
	// The list alone passes the budget: drop entities from it, those
	// without a name first (nothing refers back to them by name), the
	// oldest first.
	for len(seen) > 0 && st > limit {
		seen = dropEntity(seen)
		st = entitiesTokens(count, seen)
	}
	return fitWhole(count, limit, seen, lines)
}

// lineCounts counts the tokens of each line, and of them all.
func lineCounts(count func(string) int, lines []string) (counts []int, total int) {
	counts = make([]int, len(lines))
	for i, l := range lines {
		counts[i] = count(l)
		total += counts[i]
	}
	return counts, total
}

// joinSummary returns a summary's text: the entities line listing seen,
// when there are any, then the lines.
func joinSummary(seen, lines []string) string {
	out := strings.Join(lines, "\n")
	if len(seen) > 0 {
		out = entitiesHeader + strings.Join(seen, "; ") + "\n" + out
	}
	return strings.TrimSpace(out)
}

// entitiesTokens counts the tokens of the entities line listing seen
// (none when there is none).
func entitiesTokens(count func(string) int, seen []string) int {
	if len(seen) == 0 {
		return 0
	}
	return count(entitiesHeader + strings.Join(seen, "; "))
}

// splitEntitiesLine returns the items of the entities line that starts
// a summary's lines, if there is one, and the other lines.
func splitEntitiesLine(lines []string) (seen, rest []string) {
	if len(lines) == 0 || !strings.HasPrefix(lines[0], entitiesHeader) {
		return nil, lines
	}
	return strings.Split(strings.TrimPrefix(lines[0], entitiesHeader), "; "), lines[1:]
}

// dropEntity removes one item from the entities line's items: the
// oldest without a name (nothing refers back to it by name), else the
// oldest.
func dropEntity(seen []string) []string {
	if i := slices.IndexFunc(seen, func(e string) bool { _, named := entityID(e); return !named }); i >= 0 {
		return slices.Delete(seen, i, i+1)
	}
	return seen[1:]
}

// addEntity adds e (an ID, alone or followed by its quoted name) to the
// entities line's items once per ID: an ID already listed keeps its
// place and takes e's name if e has one (the newer name), so a bare
// reference to an entity listed with its name adds nothing, and
// neither does an empty e.
func addEntity(seen []string, e string) []string {
	if strings.TrimSpace(e) == "" {
		return seen
	}
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
	var s entityScan
	s.walk(v, 0)
	return s.out
}

// entityScan collects the entities of one tool result or arguments.
type entityScan struct{ out []string }

// add adds e unless it is there or the list is full.
func (s *entityScan) add(e string) {
	if len(s.out) < maxEntities && !slices.Contains(s.out, e) {
		s.out = append(s.out, e)
	}
}

// walk reads v, at the given depth, into s.
func (s *entityScan) walk(v jsonx.Value, depth int) {
	if len(s.out) >= maxEntities || depth > 3 {
		return
	}
	switch v.Kind {
	case jsonx.KindArray:
		v.Elems(func(e jsonx.Value) bool { s.walk(e, depth+1); return len(s.out) < maxEntities })
	case jsonx.KindObject:
		s.object(v, depth)
	}
}

// object adds what the object v holds, after what its members hold: its
// own ID with its name, then the IDs it refers to.
func (s *entityScan) object(v jsonx.Value, depth int) {
	var id, name string
	var refs []string
	for _, f := range v.Fields(nil) {
		k := string(f.Key)
		switch {
		case f.Value.Kind == jsonx.KindObject || f.Value.Kind == jsonx.KindArray:
			s.walk(f.Value, depth+1)
		case k == "id" || k == "ID":
			id = f.Value.Scalar()
		case refKey(k):
			refs = appendRef(refs, k, f.Value.Scalar())
		case name == "" && nameKey(k):
			name = f.Value.Scalar()
		}
	}
	s.addObject(id, name, refs)
}

// appendRef appends to refs the ID r that an object's member k refers
// to, unless it is empty or untracked.
func appendRef(refs []string, k, r string) []string {
	if r == "" || untracked(k) {
		return refs
	}
	return append(refs, summaryID(clip(oneLine(r), 80)))
}

// addObject adds an object's own ID, with its name when it has one, then
// the IDs it refers to.
func (s *entityScan) addObject(id, name string, refs []string) {
	if id != "" {
		e := summaryID(clip(oneLine(id), 80))
		if name != "" {
			e += " " + quoteName(clip(oneLine(name), 60))
		}
		s.add(e)
	}
	for _, r := range refs {
		s.add(r)
	}
}

// refKey reports whether an object's member k holds the ID of something
// it refers to: "…Id", "…_id" or "…ID".
func refKey(k string) bool {
	return strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "ID")
}

// nameKey reports whether an object's member k names it.
func nameKey(k string) bool {
	switch k {
	case "title", "name", "slug", "filename", "heading", "label":
		return true
	}
	return false
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
		writeIDRune(&b, r)
	}
	b.WriteByte('"')
	return b.String()
}

// writeIDRune writes r into a quoted ID: '"' and '\\' after a
// backslash; a separator of the line, a character that is not printable
// or a formatting control as a \u or \U escape; anything else as it is.
func writeIDRune(b *strings.Builder, r rune) {
	switch {
	case r == '"' || r == '\\':
		b.WriteByte('\\')
		b.WriteRune(r)
	case escapedInID(r):
		if r > 0xffff {
			fmt.Fprintf(b, `\U%08x`, r)
		} else {
			fmt.Fprintf(b, `\u%04x`, r)
		}
	default:
		b.WriteRune(r)
	}
}

// escapedInID reports whether a quoted ID writes r as an escape: the
// line's separators '|', '→', ',' and ';', invalid UTF-8, and characters
// that are not printable (other than ' ') or are formatting controls.
func escapedInID(r rune) bool {
	switch r {
	case '|', '→', ',', ';', utf8.RuneError:
		return true
	}
	return !unicode.IsPrint(r) && r != ' ' || unicode.Is(unicode.Cf, r)
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
	return textcut.Prefix(s, n) + "…"
}
