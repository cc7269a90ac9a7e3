package prompt

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// nested returns n {{#with x}} blocks around body.
func nested(n int, body string) string {
	return strings.Repeat("{{#with x}}", n) + body + strings.Repeat("{{/with}}", n)
}

// TestTrust320_NestingBounded: New refuses a template whose blocks (and
// subexpressions) nest deeper than MaxBlockDepth, counting the blocks of
// the partials it includes where it includes them, with an error naming
// the limit, before anything renders. Before, 4,000 nested {{#with}}
// blocks were accepted and took about 70 MB to render.
func TestTrust320_NestingBounded(t *testing.T) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, err := New(Config{Template: nested(4000, "{{x}}")})
	runtime.ReadMemStats(&m1)
	if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "MaxBlockDepth") {
		t.Errorf("4,000 nested blocks: %v, want ErrTemplate naming MaxBlockDepth", err)
	}
	if mb := (m1.TotalAlloc - m0.TotalAlloc) >> 20; mb > 16 {
		t.Errorf("refusing 4,000 nested blocks allocated %d MB", mb)
	}
	half := MaxBlockDepth / 2
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"at the limit", Config{Template: nested(MaxBlockDepth, "{{x}}")}, true},
		{"one more", Config{Template: nested(MaxBlockDepth+1, "{{x}}")}, false},
		{"inverse blocks", Config{Template: strings.Repeat("{{^if x}}", MaxBlockDepth+1) + "y" + strings.Repeat("{{/if}}", MaxBlockDepth+1)}, false},
		{"else branches", Config{Template: strings.Repeat("{{#if x}}a{{else}}", MaxBlockDepth+1) + "y" + strings.Repeat("{{/if}}", MaxBlockDepth+1)}, false},
		{"siblings", Config{Template: strings.Repeat(nested(half, "{{x}}"), 50)}, true},
		{"through a partial", Config{Template: nested(half, "{{> p}}"), Partials: map[string]string{"p": nested(half+1, "{{x}}")}}, false},
		{"partial within the limit", Config{Template: nested(half, "{{> p}}"), Partials: map[string]string{"p": nested(half, "{{x}}")}}, true},
		{"partial chain", Config{Template: nested(half, "{{> p}}"), Partials: map[string]string{"p": "{{#if x}}{{> q}}{{/if}}", "q": nested(half, "{{x}}")}}, false},
		{"subexpressions", Config{Template: "{{x " + strings.Repeat("(lookup ", MaxBlockDepth+1) + "x" + strings.Repeat(" 'a')", MaxBlockDepth+1) + "}}"}, false},
	} {
		_, err := New(tc.cfg)
		if tc.ok && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.ok && (!errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), "MaxBlockDepth")) {
			t.Errorf("%s: %v, want ErrTemplate naming MaxBlockDepth", tc.name, err)
		}
	}
}
