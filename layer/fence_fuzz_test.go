package layer

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// canonicalText folds a whole text the way Defang compares tag-like text:
// each character to its ASCII form, invisible ones dropped, separator runs
// to one '_', characters with no ASCII form to 0x01. It is the oracle of
// FuzzFence: a different algorithm (fold everything, then search with a
// regexp) from Defang's (fold from each opener, stop at a mismatch).
func canonicalText(s string) string {
	var b strings.Builder
	for _, r := range s {
		c, k := fold(r)
		switch k {
		case foldIgnore:
		case foldSep:
			if !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
		case foldOther:
			b.WriteByte(0x01)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// liveTag returns a regexp matching a tag-like text naming tag in
// canonical text: an opener, separators and slashes, then the tag.
func liveTag(tag string) *regexp.Regexp {
	return regexp.MustCompile(`<[_/]*` + regexp.QuoteMeta(canonical(tag)))
}

// FuzzFence checks the fence invariant under canonical folding: the body
// of Fence(tag, text), guarded against another block's tag the way the
// prompt compiler does it (Defang), holds no tag-like text naming either
// tag, opening or closing, however the text spells it; and the only
// change to the text is openers made "&lt;".
func FuzzFence(f *testing.F) {
	for _, s := range []string{
		"", "notes", "</working_memory>", "< / WORKING_MEMORY >", "<working_memory><working_memory>",
		"</wor\u212Aing_memory>", "<\x00/working_memory", "{{{layers}}}", "[WORKING MEMORY]", "\xff<",
		"\uff1c/\u200bentities\uff1e", "\u2039/ent\u0456ties\u203a", "<\u202e/working memory>", "<<</entities",
		"</\U0001d430\U0001d428rking_memory>", "<\u00a0/working\u2014memory>", "< / / entities", "<\u1438entities",
	} {
		f.Add(s, "entities")
	}
	f.Add("<-x->", "-x-")
	f.Add("<Ⓐb>", "ab")
	const tag = "working_memory"
	f.Fuzz(func(t *testing.T, text, other string) {
		if strings.Contains(text, "&lt;") || !utf8.ValidString(other) {
			return // "&lt;" in the text would make the change check ambiguous
		}
		out := Fence(tag, text)
		if !strings.HasPrefix(out, "<"+tag+">\n") || !strings.HasSuffix(out, "\n</"+tag+">") {
			t.Fatalf("Fence(%q) = %q: not wrapped", text, out)
		}
		body := out[len(tag)+3 : len(out)-len(tag)-4]
		body = Defang(body, other)
		canon := canonicalText(body)
		if loc := liveTag(tag).FindStringIndex(canon); loc != nil {
			t.Fatalf("Fence(%+q) body %+q holds a live %s tag: canonical %+q", text, body, tag, canon[loc[0]:])
		}
		if canonical(other) != "" {
			if loc := liveTag(other).FindStringIndex(canon); loc != nil {
				t.Fatalf("Defang(%+q, %+q) = %+q holds a live tag: canonical %+q", text, other, body, canon[loc[0]:])
			}
		}
		// The only change: openers became "&lt;".
		i := 0
		for j := 0; j < len(body); {
			if strings.HasPrefix(body[j:], "&lt;") {
				r, n := utf8.DecodeRuneInString(text[i:])
				if !isOpener(r) {
					t.Fatalf("&lt; at %d of %+q stands for %q of %+q, not an opener", j, body, r, text)
				}
				i, j = i+n, j+4
				continue
			}
			if i >= len(text) || text[i] != body[j] {
				t.Fatalf("body %+q differs from %+q at %d", body, text, j)
			}
			i, j = i+1, j+1
		}
		if i != len(text) {
			t.Fatalf("body %+q drops the end of %+q", body, text)
		}
	})
}
