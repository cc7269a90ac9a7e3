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
	words := titleWords(text)
	whole := strings.Join(words, " ")
	if utf8.RuneCountInString(whole) <= DerivedTitleRunes {
		return whole
	}
	return cutWords(words, DerivedTitleRunes-1) + "…"
}

// titleWords returns the words of text, without the characters a title
// drops.
func titleWords(text string) []string {
	var words []string
	for _, w := range strings.FieldsFunc(text, unicode.IsSpace) {
		if w = strings.Map(dropInvisible, strings.ToValidUTF8(w, "")); w != "" {
			words = append(words, w)
		}
	}
	return words
}

// cutWords joins the first words that fit in room runes, or cuts the
// first word to room when it is longer.
func cutWords(words []string, room int) string {
	if first := []rune(words[0]); len(first) >= room {
		return string(first[:room])
	}
	n := 0
	for i, w := range words {
		n += utf8.RuneCountInString(w) + min(i, 1)
		if n > room {
			return strings.Join(words[:i], " ")
		}
	}
	return strings.Join(words, " ")
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
