package route

import (
	"strings"
	"unicode"

	"github.com/memlayer/memlayer/layer"
)

// The item types of the memory orchestrator, as kinds of a [layer.Write].
const (
	KindUserMessage = "user_message"
	KindToolResult  = "tool_result"
	KindThought     = "thought"
	KindAction      = "action"
	KindPlan        = "plan"
	KindSkill       = "skill"
	KindSummary     = "summary"
	KindFact        = "fact"
	KindMetric      = "metric"
	KindObservation = "observation"
)

// byKind is the table of the package doc: a kind's sort of keeper.
// KindUserMessage is not in it: its route depends on its text.
var byKind = map[string]string{}

func init() {
	for sort, kinds := range map[string][]string{
		layer.KeepsScratchpad: {"reasoning", "transient", KindThought, KindPlan, "scratch"},
		layer.KeepsEpisodic: {"outcome", KindAction, "result", "event", "task",
			KindToolResult, KindObservation, KindMetric, KindSummary},
		layer.KeepsSemantic: {KindFact, "preference", "profile", "decision", "note", "instruction", "goal", "constraint",
			KindSkill},
	} {
		for _, k := range kinds {
			byKind[k] = sort
		}
	}
}

// reasons are the audit's words for each route of the table.
var reasons = map[string]string{
	layer.KeepsScratchpad: "transient reasoning goes to the scratchpad",
	layer.KeepsEpisodic:   "an actionable outcome goes to the episode log",
	layer.KeepsSemantic:   "a durable fact goes to semantic memory",
}

// Normalize returns kind in the form the table knows: trimmed,
// lowercased, camel case and '-' or ' ' turned into '_'
// ("ToolResult", "TOOL_RESULT", "tool-result" and "tool result" give
// "tool_result"), and a plural of a known kind singular ("skills" gives
// "skill", "summaries" gives "summary").
func Normalize(kind string) string {
	kind = strings.TrimSpace(kind)
	var b strings.Builder
	b.Grow(len(kind) + 2)
	prev := rune(0)
	for _, r := range kind {
		switch {
		case r == '-' || r == ' ':
			r = '_'
		case unicode.IsUpper(r):
			if unicode.IsLower(prev) || unicode.IsDigit(prev) {
				b.WriteByte('_')
			}
			prev, r = r, unicode.ToLower(r)
			b.WriteRune(r)
			continue
		}
		b.WriteRune(r)
		prev = r
	}
	return singular(b.String())
}

// singular returns k, or the kind of the table (or KindUserMessage) of
// which it is the plural.
func singular(k string) string {
	if _, ok := byKind[k]; ok || !strings.HasSuffix(k, "s") {
		return k
	}
	if one := k[:len(k)-1]; byKind[one] != "" || one == KindUserMessage {
		return one
	}
	if one, ok := strings.CutSuffix(k, "ies"); ok && byKind[one+"y"] != "" {
		return one + "y"
	}
	return k
}
