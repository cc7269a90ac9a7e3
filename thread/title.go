package thread

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// DerivedTitleRunes bounds a title [DeriveTitle] makes, in runes, the
// ellipsis included.
const DerivedTitleRunes = 60

// DeriveTitle returns a short title for a thread from its first user
// request: the text with its runs of white space made single spaces and
// its control and format characters dropped, cut on a word boundary to
// at most DerivedTitleRunes runes, with "…" when cut. A word longer than
// the whole title is cut inside. It is deterministic: the same text
// always gives the same title.
//
// A [Writer] stores the title it derives from the first user message of
// a new thread, as stored: the text the run redacted, so the title
// holds no more than the message does.
func DeriveTitle(text string) string {
	var words []string
	for _, w := range strings.FieldsFunc(text, unicode.IsSpace) {
		if w = strings.Map(dropInvisible, strings.ToValidUTF8(w, "")); w != "" {
			words = append(words, w)
		}
	}
	whole := strings.Join(words, " ")
	if utf8.RuneCountInString(whole) <= DerivedTitleRunes {
		return whole
	}
	room := DerivedTitleRunes - 1 // for the ellipsis
	var b strings.Builder
	n := 0 // runes in b
	for _, w := range words {
		wn := utf8.RuneCountInString(w)
		if n > 0 && n+1+wn > room {
			break
		}
		if n == 0 && wn > room { // one word longer than a title: cut inside it
			w, wn = string([]rune(w)[:room]), room
		}
		if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += wn
	}
	return b.String() + "…"
}

// dropInvisible drops control and format characters (bidirectional
// overrides, zero-width joiners) from a title.
func dropInvisible(r rune) rune {
	if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
		return -1
	}
	return r
}

// firstRequestTitle returns the title of the first user message of msgs
// that has text, or "".
func firstRequestTitle(msgs []Message) string {
	for _, m := range msgs {
		if m.Role == RoleUser && strings.TrimSpace(m.Text) != "" {
			return DeriveTitle(m.Text)
		}
	}
	return ""
}
