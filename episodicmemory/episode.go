package episodicmemory

import (
	"bytes"
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/memlayer/memlayer/internal/jsonx"
)

// Kind says what an [Episode] records.
type Kind string

// The kinds of episode.
const (
	// KindTool is one tool invocation.
	KindTool Kind = "tool"
	// KindTurn is the outcome of a turn: the user's request and the
	// model's answer, recorded at the step that ends the turn (a model
	// response without tool calls).
	KindTurn Kind = "turn"
	// KindNote is a memory write the agent routed to the log (see
	// [Layer.Note]): Tool holds the write's kind ("outcome"), Result its
	// text.
	KindNote Kind = "note"
)

// kinds are the kinds of episode this package writes.
var kinds = []Kind{KindTool, KindTurn, KindNote}

// Episode is one entry of the log: a tool invocation or a turn's outcome.
type Episode struct {
	// Ref is the episode's reference: the tool call ID of a tool
	// episode, "turn-<seq>" of a turn, "note-<seq>-<n>" of a note.
	// Recall shows it; [Layer.Read] and the read tool take it.
	Ref  string `json:"ref"`
	Kind Kind   `json:"kind"`
	// Thread is the thread the episode happened in.
	Thread string `json:"thread,omitempty"`
	// Step is the model call of the run the episode belongs to.
	Step int       `json:"step"`
	Time time.Time `json:"time"`
	// Tool and Arguments are the tool's name and its raw JSON
	// arguments (tool episodes).
	Tool      string `json:"tool,omitempty"`
	Arguments string `json:"args,omitempty"`
	// Query is the user's request (turn episodes).
	Query string `json:"query,omitempty"`
	// Result is what the tool returned, or the error text when IsError,
	// or the model's answer of a turn. It is kept whole up to
	// Config.MaxResultBytes.
	Result  string `json:"result,omitempty"`
	IsError bool   `json:"error,omitempty"`
	// Size is the length in bytes of the full result when Result holds
	// only its beginning (cut at Config.MaxResultBytes, or in a
	// snapshot); zero when Result is whole.
	Size     int           `json:"size,omitempty"`
	Duration time.Duration `json:"durationNs,omitempty"`
	// Entities are the IDs and names the call touched, found in its
	// arguments and result.
	Entities []string `json:"entities,omitempty"`
	// Task is the task episode the entry belongs to: the entries of one
	// thread are grouped into tasks numbered from 1 (see [Layer.Task]).
	// Zero in records written before tasks were.
	Task int `json:"task,omitempty"`

	seq  int64 // the segment the episode is stored in; -1 until appended
	toks int   // rawTokens, counted once; 0 until counted
}

// Digest is the one-line form of an episode that compaction keeps once
// the episode's raw form is folded away.
type Digest struct {
	Ref    string    `json:"ref"`
	Thread string    `json:"thread,omitempty"`
	Step   int       `json:"step"`
	Time   time.Time `json:"time"`
	// Text is the episode's digest line (see [Episode.Digest]).
	Text string `json:"text"`
	// Seq is the segment that held the raw episode (not in snapshots).
	Seq int64 `json:"seq,omitempty"`
	// Task is the episode's task (see [Episode.Task]).
	Task int `json:"task,omitempty"`
}

// Limits of a digest line's parts, in bytes.
const (
	digestArgs   = 120
	digestResult = 160
	digestQuery  = 120
)

// Digest returns the episode's one-line digest: the reference in
// brackets, the step, the tool with its arguments (or the quoted
// request), the outcome (or the answer), and the IDs and names found in
// the result — or, when none were found, the start of the result —
// white space collapsed and long parts cut:
//
//	[call-7] step 2 cms_createPage {"title":"About"} → ok, 812 bytes: page-123, About
//	[call-8] step 3 fetch_url {"url":"https://example.com"} → ok, 5120 bytes; <!doctype html><html>…
//	[turn-9] step 4 "Create an About page" → Done, page-123 is live.
//
// A turn's line has no more framing than its reference, step, quotes
// and arrow, so that it costs no more than the two messages it replaces
// do: a short chat turn told in its line is barely longer than told as
// the request and the answer.
//
// The start of a result whose IDs and names were found would repeat them
// in every prompt the digest is recalled into; the full result is one
// read-tool call away.
func (e *Episode) Digest() string {
	var b strings.Builder
	b.Grow(e.digestLen())
	b.WriteByte('[')
	b.WriteString(oneLine(e.Ref, 128))
	b.WriteString("] step ")
	b.WriteString(strconv.Itoa(e.Step))
	b.WriteByte(' ')
	switch e.Kind {
	case KindNote:
		b.WriteString("note (")
		b.WriteString(oneLine(e.Tool, 64))
		b.WriteString("): ")
		b.WriteString(oneLine(e.Result, digestResult))
	case KindTurn:
		b.WriteString(strconv.Quote(oneLine(e.Query, digestQuery)))
		b.WriteString(" → ")
		b.WriteString(oneLine(e.Result, digestResult))
	default:
		e.writeCall(&b)
	}
	return b.String()
}

// digestLen is at most the length of the episode's digest line, give or
// take the few bytes of a number, so that Digest builds it in one
// allocation: each part cut to its limit (with "…", 3 bytes), plus the
// framing.
func (e *Episode) digestLen() int {
	part := func(s string, limit int) int { return min(len(s), limit+3) }
	n := 40 + part(e.Ref, 128) + part(e.Tool, 64) + part(e.Result, digestResult)
	switch e.Kind {
	case KindTurn:
		n += 2 * part(e.Query, digestQuery) // strconv.Quote may escape
	case KindNote:
	default:
		n += part(e.Arguments, digestArgs)
	}
	return n
}

// writeCall writes a tool episode's part of its digest line: the tool
// with its arguments, and the outcome.
func (e *Episode) writeCall(b *strings.Builder) {
	b.WriteString(oneLine(e.Tool, 64))
	if e.Arguments != "" {
		b.WriteByte(' ')
		b.WriteString(oneLine(e.Arguments, digestArgs))
	}
	if e.IsError {
		b.WriteString(" → error: ")
		b.WriteString(oneLine(e.Result, digestResult))
		return
	}
	b.WriteString(" → ok, ")
	b.WriteString(strconv.Itoa(cmp.Or(e.Size, len(e.Result))))
	b.WriteString(" bytes")
	switch {
	case len(e.Entities) > 0:
		b.WriteString(": ")
		b.WriteString(oneLine(strings.Join(e.Entities, ", "), digestResult))
	case e.Result != "":
		b.WriteString("; ")
		b.WriteString(oneLine(e.Result, digestResult))
	}
}

// digest returns the episode's digest record.
func (e *Episode) digest() Digest {
	return Digest{Ref: e.Ref, Thread: e.Thread, Step: e.Step, Time: e.Time, Text: e.Digest(), Seq: e.seq, Task: e.Task}
}

// oneLine returns s with every run of white space (newlines included)
// and control characters made one space, cut to at most limit bytes at
// a rune boundary with "…" added when cut.
func oneLine(s string, limit int) string {
	var b strings.Builder
	b.Grow(min(len(s), limit+3))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			b.WriteString("…")
			return b.String()
		}
		b.WriteRune(r)
	}
	return b.String()
}

// maxEntities bounds the IDs and names recorded for one call.
const maxEntities = 12

// entityDepth bounds how deep into nested objects and arrays the scan
// goes.
const entityDepth = 4

// nameKeys are the keys whose values name an entity.
var nameKeys = map[string]bool{"name": true, "title": true, "slug": true, "filename": true, "heading": true, "label": true}

// findEntities appends to dst the IDs and names in a JSON document
// (arguments or a tool result, possibly cut short): the string or number
// values of keys named "id" or ending in "id" ("pageId", "page_id") and
// of name-like keys (name, title, slug, filename, heading, label), at
// most entityDepth levels deep, de-duplicated, at most maxEntities. Text
// that is not JSON yields nothing.
func findEntities(dst []string, doc string) []string {
	v, _ := jsonx.ScanValue([]byte(doc), 0)
	s := entityScan{found: dst}
	s.walk(v, 0)
	return s.found
}

// entityScan is the state of findEntities: the IDs and names found.
type entityScan struct{ found []string }

// walk scans v, depth levels deep in the document.
func (s *entityScan) walk(v jsonx.Value, depth int) {
	if depth > entityDepth || len(s.found) >= maxEntities {
		return
	}
	switch v.Kind {
	case jsonx.KindObject:
		s.object(v, depth)
	case jsonx.KindArray:
		v.Elems(func(e jsonx.Value) bool {
			s.walk(e, depth+1)
			return len(s.found) < maxEntities
		})
	}
}

// object takes the IDs and names among the fields of object v, then
// walks the objects and arrays it holds.
func (s *entityScan) object(v jsonx.Value, depth int) {
	fields := v.Fields(nil)
	for _, f := range fields {
		if (f.Value.Kind == jsonx.KindString || f.Value.Kind == jsonx.KindNumber) && entityKey(f.Key) {
			s.add(oneLine(f.Value.Scalar(), 128))
		}
	}
	for _, f := range fields {
		if f.Value.Kind == jsonx.KindObject || f.Value.Kind == jsonx.KindArray {
			s.walk(f.Value, depth+1)
		}
	}
}

// add records name, unless it is empty, already found or one too many.
func (s *entityScan) add(name string) {
	if name != "" && !slices.Contains(s.found, name) && len(s.found) < maxEntities {
		s.found = append(s.found, name)
	}
}

// entityKey reports whether a key names an ID or a name: "id", "*Id",
// "*_id", "*-id" or one of nameKeys, compared without case.
func entityKey(key []byte) bool {
	k := strings.ToLower(string(key))
	if nameKeys[k] || k == "id" {
		return true
	}
	return len(k) <= 32 && strings.HasSuffix(k, "id") && len(k) > 2 &&
		(bytes.HasSuffix(key, []byte("Id")) || bytes.HasSuffix(key, []byte("ID")) || k[len(k)-3] == '_' || k[len(k)-3] == '-')
}

// cutResult returns s cut to at most limit bytes at a rune boundary, and
// the full size when it was cut (0 when not). A negative limit keeps s
// whole.
func cutResult(s string, limit int) (string, int) {
	if limit < 0 || len(s) <= limit {
		return s, 0
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], len(s)
}

// Times JSON can hold: RFC 3339 has four-digit years.
var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// clampTime returns t in UTC, moved into years 0-9999 if outside, without
// its monotonic reading.
func clampTime(t time.Time) time.Time {
	t = t.UTC().Round(0)
	switch {
	case t.Before(minTime):
		return minTime
	case t.After(maxTime):
		return maxTime
	}
	return t
}
