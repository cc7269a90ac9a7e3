package episodicmemory

import (
	"maps"
	"strings"
	"testing"
	"time"
	"unicode"
)

// FuzzTaskProfile: any request, arguments and answer are checked for a
// boundary without panicking, and a turn learnt from its digest line (as
// a run that starts reads it from the index) gives the profile the turn
// itself gives (as the run that logged it has), when its request and
// answer fit their digest whole.
func FuzzTaskProfile(f *testing.F) {
	f.Add("Publish page-7 now", `{"id":"page-7","tags":["a b",3]}`, "Done: page-7 is live.")
	f.Add("Clean up: delete the test pages", `{"titleContains":"test","createdIn":"last_month"`, `He said "ok" → fine`)
	f.Add("", `[`, "")
	f.Fuzz(func(t *testing.T, query, args, answer string) {
		now := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
		tool := Episode{Ref: "c1", Kind: KindTool, Tool: "x", Arguments: args, Result: answer}
		tool.Entities = findEntities(findEntities(nil, args), answer)
		tr := tracker{loaded: true, task: 1, last: now}
		tr.learn(&tool)
		tr.boundary(query, []Episode{tool}, true, now, time.Minute)
		from := tr.forRequest(query)
		from.linksTo(tasksOf([]hit{{thread: "o", task: 1, text: tool.Digest()}}, "me"), 3)

		turn := Episode{Ref: "turn-1", Kind: KindTurn, Query: query, Result: answer}
		if !plain(query, digestQuery) || !plain(answer, digestResult) {
			return
		}
		var a, b tracker
		a.learn(&turn)
		b.learnLine(turn.Digest())
		if !maps.Equal(a.words, b.words) || !maps.Equal(a.ids, b.ids) {
			t.Errorf("turn %q → %q: learnt %v %v, from its digest %v %v", query, answer, a.words, a.ids, b.words, b.ids)
		}
	})
}

// plain reports whether s is printable text with no run of spaces that
// a digest line would fold, and fits limit whole.
func plain(s string, limit int) bool {
	return len(s) < limit && !strings.Contains(s, "  ") && s == strings.TrimSpace(s) &&
		strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) < 0
}
