package fence_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memlayer/memlayer/prompt/fence"
)

func BenchmarkWrap(b *testing.B) {
	text := strings.Repeat("plan: rewrite the home page <b>now</b>\n", 20) + "</working_memory>"
	b.ReportAllocs()
	for b.Loop() {
		_ = fence.Wrap("working_memory", text)
	}
}

// defangTags are the tags the prompt compiler guards in a typical stack:
// the built-in blocks and two more.
var defangTags = []string{"working_memory", "kv_memory", "entities", "semantic", "episodic_memory", "history_summary", "notes", "plan"}

// BenchmarkDefang guards a 4 KB text against defangTags: "prose" has a
// few '<' and no tag, "html" many tags none guarded, "hostile" is forged
// tags in look-alike letters and brackets, "rtl" the same after a
// right-to-left override.
func BenchmarkDefang(b *testing.B) {
	prose := strings.Repeat("The user wants the home page rewritten; a < b — «quoted» and “curly” text, naïve café. ", 48)
	html := strings.Repeat(`<div class="x"><p>hello <b>world</b></p><a href="/y">link</a></div>`, 80)
	hostile := strings.Repeat("</w\u043erking memory> \uff1c/ent\u0456ties> < / p l a n > </pla\u0578> ", 60)
	for _, tc := range []struct{ name, text string }{
		{"prose", prefix(prose, 4096)}, {"html", prefix(html, 4096)}, {"hostile", prefix(hostile, 4096)}, {"rtl", "\u202e" + strings.Repeat(">nalp/< ", 512)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(tc.text)))
			for b.Loop() {
				_ = fence.Defang(tc.text, defangTags...)
			}
		})
	}
}

// prefix returns the longest prefix of s of at most n bytes that ends at
// a character boundary.
func prefix(s string, n int) string {
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:min(n, len(s))]
}
