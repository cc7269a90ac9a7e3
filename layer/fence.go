package layer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Fence wraps untrusted text in an XML-style block, <tag>\ntext\n</tag>, so
// that the text cannot end the block early or open a block of the same
// name: every '<' inside text that starts a tag of that name — "<tag",
// "</tag", "< / TAG" and the like, in any letter case and with any
// whitespace around the '/' — is replaced by "&lt;". Nothing else is
// changed, so code and JSON stay readable, and the output ends with the
// only closing tag. tag should be a plain name such as "working_memory".
func Fence(tag, text string) string {
	var b strings.Builder
	b.Grow(len(text) + 2*len(tag) + 8)
	b.WriteByte('<')
	b.WriteString(tag)
	b.WriteString(">\n")
	writeDefanged(&b, tag, text)
	b.WriteString("\n</")
	b.WriteString(tag)
	b.WriteByte('>')
	return b.String()
}

// writeDefanged writes text with every '<' that opens a tag named tag made
// inert.
func writeDefanged(b *strings.Builder, tag, text string) {
	for {
		i := strings.IndexByte(text, '<')
		if i < 0 {
			b.WriteString(text)
			return
		}
		b.WriteString(text[:i])
		rest := text[i+1:]
		if opensTag(rest, tag) {
			b.WriteString("&lt;")
		} else {
			b.WriteByte('<')
		}
		text = rest
	}
}

// opensTag reports whether s (what follows a '<') is, after optional
// whitespace, an optional '/' and more whitespace, the name tag under
// Unicode case folding.
func opensTag(s, tag string) bool {
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	s = strings.TrimPrefix(s, "/")
	s = strings.TrimLeftFunc(s, unicode.IsSpace)
	return hasFoldPrefix(s, tag)
}

// hasFoldPrefix reports whether s begins with prefix under Unicode simple
// case folding (so the Kelvin sign matches 'k').
func hasFoldPrefix(s, prefix string) bool {
	for prefix != "" {
		if s == "" {
			return false
		}
		pr, pn := utf8.DecodeRuneInString(prefix)
		sr, sn := utf8.DecodeRuneInString(s)
		if pr != sr && !strings.EqualFold(prefix[:pn], s[:sn]) {
			return false
		}
		prefix, s = prefix[pn:], s[sn:]
	}
	return true
}
