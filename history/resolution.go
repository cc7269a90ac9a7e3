package history

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
)

// Resolution is how finely a summary tells a part of the history. A
// summary tells its newest turns step by step, older turns in one short
// line each, and the oldest in one line for them all; each coarser form
// keeps the IDs and names the finer one held, as far as its budget
// allows.
type Resolution int

// The resolutions, finest first.
const (
	// Steps tells a turn step by step, in the line it is first
	// summarized into: the request, each tool with its call ID, whether
	// it failed and the entities (IDs, with their names) its arguments
	// and result mention, and the start of the answer:
	//
	//	- User: Create the About page | createPage (call c1) → page_101 "About" | answer: Created page_101.
	Steps Resolution = iota
	// Turn tells a turn in one shorter line: the start of the request,
	// the entities of all its steps once each, whether a step failed, and
	// the start of the answer. The tools and call IDs are left out:
	//
	//	- Turn: Create the About page → page_101 "About" | answer: Created page_101.
	Turn
	// Thread tells a span of turns in one line for them all, their
	// entities, each ID once with its newest name:
	//
	//	Entities seen earlier: page_101 "About"; page_7 "Team"
	Thread
)

// String returns "steps", "turn" or "thread".
func (r Resolution) String() string {
	switch r {
	case Steps:
		return "steps"
	case Turn:
		return "turn"
	case Thread:
		return "thread"
	}
	return "resolution(" + strconv.Itoa(int(r)) + ")"
}

// The starts of the lines of each resolution.
const (
	stepsPrefix = "- User: "
	turnPrefix  = "- Turn: "
)

// Limits of a turn line's quoted request and answer, in bytes.
const (
	turnRequest = 60
	turnAnswer  = 40
)

// LineResolution returns the resolution of a line of a summary: Thread
// for the entities line, Turn for a turn line, Steps for any other (a
// turn's steps, or a line a model wrote).
func LineResolution(line string) Resolution {
	switch {
	case strings.HasPrefix(line, entitiesHeader):
		return Thread
	case strings.HasPrefix(line, turnPrefix):
		return Turn
	}
	return Steps
}

// coarsenLine returns a line of steps told as a turn (see [Turn]): its
// request and answer shortened, the entities of its steps merged (each ID
// once, with its newest name), whether a step failed. A line that is not
// a turn's steps (a turn line, or one a model wrote) is returned as it
// is.
func coarsenLine(line string) string {
	if !strings.HasPrefix(line, stepsPrefix) && !strings.HasPrefix(line, " | ") {
		return line
	}
	var t turnParts
	for _, seg := range strings.Split(line, " | ") {
		t.add(seg)
	}
	return t.line()
}

// turnParts are what a turn line tells, read from the segments of a
// line of steps.
type turnParts struct {
	request, answer string
	ents            []string
	failed          bool
}

// add reads one segment of a line of steps: the request, a tool call
// (whether it failed, and its entities) or the answer.
func (t *turnParts) add(seg string) {
	if req, ok := strings.CutPrefix(seg, stepsPrefix); ok {
		t.request = req
		return
	}
	if ans, ok := strings.CutPrefix(seg, "answer: "); ok {
		t.answer = ans
		return
	}
	call, list, _ := strings.Cut(seg, " → ")
	t.failed = t.failed || strings.HasSuffix(call, ") failed")
	for _, e := range strings.Split(list, ", ") {
		t.ents = addEntity(t.ents, e)
	}
}

// line returns the turn line.
func (t *turnParts) line() string {
	segs := []string{turnPrefix + shorter(t.request, turnRequest)}
	if len(t.ents) > 0 {
		segs[0] += " → " + strings.Join(t.ents, ", ")
	}
	if t.failed {
		segs = append(segs, "failed")
	}
	if t.answer != "" {
		segs = append(segs, "answer: "+shorter(t.answer, turnAnswer))
	}
	return strings.Join(segs, " | ")
}

// shorter returns s clipped to n bytes (see clip) when that makes it
// shorter.
func shorter(s string, n int) string {
	if c := clip(s, n); len(c) < len(s) {
		return c
	}
	return s
}

// Coarsen returns summary with every part told at resolution r or a
// coarser one: at Turn each line of steps becomes its turn line; at
// Thread every line is folded into the entities line. Steps returns the
// summary as it is. Coarsen has no budget: every ID and name is kept.
func Coarsen(summary string, r Resolution) string {
	if r <= Steps || summary == "" {
		return summary
	}
	seen, lines := splitEntitiesLine(strings.Split(strings.TrimSpace(summary), "\n"))
	seen = slices.DeleteFunc(seen, func(e string) bool { return strings.TrimSpace(e) == "" })
	if r == Thread {
		return joinSummary(fold(seen, lines), nil)
	}
	for i, ln := range lines {
		lines[i] = coarsenLine(ln)
	}
	return joinSummary(seen, lines)
}

// fold returns the entities seen with those of lines added.
func fold(seen, lines []string) []string {
	for _, ln := range lines {
		for _, e := range lineEntities(ln) {
			seen = addEntity(seen, e)
		}
	}
	return seen
}

// Fit returns summary within limit tokens (counted with c; nil is the
// default estimate), each part at the finest resolution that fits, the
// newest parts the finest. The newest lines that fit in half of what the
// entities line leaves stay as they are; while the summary does not
// fit, the older lines of steps become turn lines, oldest first, then
// the oldest lines are folded into the entities line; then the newest
// lines likewise. Only when the entities line alone passes the limit
// does it drop IDs, those without a name first. A summary that fits
// keeps its lines; a limit below 1 is 1. It is what
// [DeterministicSummarizer] does when its summary passes MaxTokens, and
// what [Layer.Recall] does with a summary that does not fit the step's
// budget.
func Fit(summary string, limit int, c interface{ Count(string) int }) string {
	if summary == "" {
		return ""
	}
	return (&DeterministicSummarizer{MaxTokens: max(limit, 1), Counter: c}).fit(strings.Split(summary, "\n"))
}

// fitting is the state of DeterministicSummarizer.fit: the entities
// line's items and its tokens, the lines with their tokens and their
// total, and the limit.
type fitting struct {
	count       func(string) int
	limit       int
	seen, lines []string
	counts      []int
	total, st   int
}

// over reports whether the summary still passes the limit.
func (f *fitting) over() bool { return f.total+f.st > f.limit }

// newest returns how many of the newest lines fit in tokens.
func (f *fitting) newest(tokens int) int {
	n, sum := 0, 0
	for i := len(f.counts) - 1; i >= 0 && sum+f.counts[i] <= tokens; i-- {
		sum += f.counts[i]
		n++
	}
	return n
}

// coarsen turns the oldest lines of steps into turn lines, oldest first,
// while the summary passes the limit, leaving the newest keep lines as
// they are. A turn line no shorter than its steps is not made.
func (f *fitting) coarsen(keep int) {
	if f.st >= f.limit {
		return // the entities line alone passes it: every line is folded
	}
	for i := 0; i < len(f.lines)-keep && f.over(); i++ {
		if LineResolution(f.lines[i]) != Steps {
			continue
		}
		c := coarsenLine(f.lines[i])
		if n := f.count(c); n <= f.counts[i] {
			f.total += n - f.counts[i]
			f.lines[i], f.counts[i] = c, n
		}
	}
}

// fold folds the oldest lines into the entities line while the summary
// passes the limit, leaving the newest keep lines.
func (f *fitting) fold(keep int) {
	for f.over() && len(f.lines) > keep {
		f.seen = fold(f.seen, f.lines[:1])
		f.total -= f.counts[0]
		f.lines, f.counts = f.lines[1:], f.counts[1:]
		f.st = entitiesTokens(f.count, f.seen)
	}
}

// fitWhole returns the summary of the entities seen and lines within
// limit tokens, the summary counted whole: the lines' counts add up to
// the whole's only within the counter's rounding. While it passes the
// limit, the oldest line of steps becomes its turn line, else the
// oldest line is folded into the entities line, else the entities line
// drops an entity (see dropEntity).
func fitWhole(count func(string) int, limit int, seen, lines []string) string {
	out := joinSummary(seen, lines)
	for count(out) > limit {
		switch {
		case coarsenFirst(lines):
		case len(lines) > 0:
			seen, lines = fold(seen, lines[:1]), lines[1:]
		case len(seen) > 0:
			seen = dropEntity(seen)
		default:
			return out
		}
		out = joinSummary(seen, lines)
	}
	return out
}

// coarsenFirst turns the oldest line of steps whose turn line is
// shorter into its turn line, and reports whether there was one.
func coarsenFirst(lines []string) bool {
	i := slices.IndexFunc(lines, func(ln string) bool { return LineResolution(ln) == Steps && len(coarsenLine(ln)) < len(ln) })
	if i >= 0 {
		lines[i] = coarsenLine(lines[i])
	}
	return i >= 0
}

// fitted is the block Layer.Recall last showed, kept with what it
// depends on (the summary, the budget and the counter), so that the
// steps that recall the same summary on the same budget count and fit
// it once.
type fitted struct {
	mu      sync.Mutex
	text    string
	budget  int
	counter interface{ Count(string) int }
	block   string
	tokens  int
}

// within returns the block of summary s within q.Budget, and its
// tokens: whole, the block when it fits, else the summary fitted (see
// [Fit]) to what the budget leaves beside the block's header and fence;
// nothing when no fitted block fits.
func (f *fitted) within(s string, q layer.Query) (string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.text != s || f.budget != q.Budget || !sameCounter(f.counter, q.Counter) {
		f.text, f.budget, f.counter = s, q.Budget, q.Counter
		f.block, f.tokens = fitBlock(s, q)
	}
	return f.block, f.tokens
}

// fitBlock returns the block of summary s within q.Budget and its tokens
// (see fitted.within).
func fitBlock(s string, q layer.Query) (string, int) {
	block := summaryBlock(s)
	if tokens := q.Count(block); q.Budget <= 0 || tokens <= q.Budget {
		return block, tokens
	}
	frame := q.Count(summaryHeader + fence.Wrap(fence.Tag(SummaryLayerID), ""))
	// The parts' counts add up to the block's within the counter's
	// rounding: a block that still passes the budget is fitted a little
	// tighter, a few times at most, then left out.
	for limit := q.Budget - frame; limit > 0 && limit > q.Budget-frame-fitRetries; limit-- {
		if b := summaryBlock(Fit(s, limit, q.Counter)); q.Count(b) <= q.Budget {
			return b, q.Count(b)
		}
	}
	return "", 0
}

// sameCounter reports whether a and b are the same counter: equal, and
// of a type that can be compared.
func sameCounter(a, b interface{ Count(string) int }) bool {
	if a == nil || b == nil {
		return a == b
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// fitRetries bounds the limits within tries below a budget's.
const fitRetries = 8

// summaryBlock is the block that shows summary s: its header and the
// fenced summary; empty when s is.
func summaryBlock(s string) string {
	if s == "" {
		return ""
	}
	return summaryHeader + fence.Wrap(fence.Tag(SummaryLayerID), s)
}
