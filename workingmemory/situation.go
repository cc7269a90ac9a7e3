package workingmemory

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/memlayer/memlayer/layer"
)

// Situation returns the scratchpad's part of the run's situation
// ([layer.Situator]): for an object state, its "goal" and the last of its
// "plan" (the last element when the plan is a list), as "goal: …" and
// "plan: …" lines; for a text state, the text. It is empty when the
// state is. It changes nothing, and the same state gives the same text.
func (l *Layer) Situation(ctx context.Context, q layer.Query) (string, error) {
	switch v := l.State().(type) {
	case string:
		return strings.TrimSpace(v), nil
	case map[string]any:
		var lines []string
		if g := situationText(v["goal"]); g != "" {
			lines = append(lines, "goal: "+g)
		}
		plan := v["plan"]
		if list, ok := plan.([]any); ok {
			plan = nil
			if len(list) > 0 {
				plan = list[len(list)-1]
			}
		}
		if p := situationText(plan); p != "" {
			lines = append(lines, "plan: "+p)
		}
		return strings.Join(lines, "\n"), nil
	}
	return "", nil
}

// situationText renders a state value as text: a string as it is, any
// other value as JSON (object keys sorted, so the text is deterministic).
func situationText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return strings.Join(strings.Fields(v), " ")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

var _ layer.Situator = (*Layer)(nil)
