package layer

import "strings"

// Fence wraps untrusted text in an XML-style block, <tag>\ntext\n</tag>, so
// that the text cannot end the block early or open a block of the same
// name: every "<tag" and "</tag" inside text, in any letter case, has its
// '<' replaced by "&lt;". Nothing else is changed, so code and JSON stay
// readable. tag should be a plain name such as "working_memory".
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

// writeDefanged writes text with every "<tag" or "</tag" (case-insensitive)
// made inert.
func writeDefanged(b *strings.Builder, tag, text string) {
	for {
		i := strings.IndexByte(text, '<')
		if i < 0 {
			b.WriteString(text)
			return
		}
		b.WriteString(text[:i])
		rest := text[i+1:]
		name := strings.TrimLeft(strings.TrimPrefix(rest, "/"), " \t\r\n")
		if len(name) >= len(tag) && strings.EqualFold(name[:len(tag)], tag) {
			b.WriteString("&lt;")
		} else {
			b.WriteByte('<')
		}
		text = rest
	}
}
