package agentloop

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// FuzzReplayableCall: whatever a model sends, the stored call is what
// every client accepts on replay: arguments that decode into a JSON
// object (as the Anthropic and Google clients decode them) and a name
// providers accept; valid arguments are kept as sent (trimmed).
func FuzzReplayableCall(f *testing.F) {
	for _, s := range [][2]string{
		{"createPage", `{"title":"About"}`},
		{"working-memory/update", "```json\n{\"a\":1}\n```"},
		{"", ""},
		{"x", " [1,2] "},
		{"é", `{"a":`},
		{"t", "null"},
		{"t", "\t{\"k\":[{}]}\n"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, args string) {
		fc := llms.FunctionCall{Name: name, Arguments: args}
		bad := replayableCall(&fc)
		var obj map[string]any
		if err := json.Unmarshal([]byte(fc.Arguments), &obj); err != nil || obj == nil {
			t.Fatalf("stored arguments %q (from %q) are not a JSON object: %v", fc.Arguments, args, err)
		}
		if err := ValidateToolName(fc.Name); err != nil {
			t.Fatalf("stored name %q (from %q): %v", fc.Name, name, err)
		}
		if ValidateToolName(name) == nil && fc.Name != name {
			t.Fatalf("valid name %q renamed %q", name, fc.Name)
		}
		// Arguments are trimmed of Unicode white space first, like
		// checkArgs does; white space alone means {}.
		trimmed := strings.TrimSpace(args)
		var v map[string]any
		valid := json.Unmarshal([]byte(trimmed), &v) == nil && v != nil
		if trimmed != "" && bad == valid {
			t.Fatalf("args %q: badArgs %v, but encoding/json says valid=%v", args, bad, valid)
		}
	})
}

// FuzzUsageFrom: believed usage is never negative, never above
// maxCallTokens per field, and totals at least prompt + completion.
func FuzzUsageFrom(f *testing.F) {
	f.Add(80.0, 20.0, 100.0, int64(0))
	f.Add(-5000.0, 10.0, -4990.0, int64(1))
	f.Add(1e300, 1e300, 1e300, int64(2))
	f.Add(0.0, 0.0, 0.0, int64(3))
	f.Add(math.NaN(), 1.0, 1.0, int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, p, c, tot float64, i int64) {
		for _, info := range []map[string]any{
			{"PromptTokens": p, "CompletionTokens": c, "TotalTokens": tot},
			{"input_tokens": p, "output_tokens": c},
			{"PromptTokens": int(p), "CompletionTokens": i, "TotalTokens": int32(tot)},
		} {
			u, ok := usageFrom(info)
			if !ok {
				continue
			}
			if u.PromptTokens < 0 || u.CompletionTokens < 0 || u.TotalTokens < u.PromptTokens+u.CompletionTokens ||
				u.PromptTokens > maxCallTokens || u.CompletionTokens > maxCallTokens || u.TotalTokens > 2*maxCallTokens || u.TotalTokens == 0 {
				t.Fatalf("usageFrom(%v) = %+v", info, u)
			}
		}
	})
}
