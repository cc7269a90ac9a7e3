package layer

import "unicode/utf8"

// Count returns the tokens in text counted with q.Counter or, when
// q.Counter is nil (a Query built by hand), with the default estimate
// (prompt.Estimate, which documents its measured error):
//
//	tokens = ceil((wordBytes + 2·punctBytes) / 4) + nonASCIIRunes
//
// where wordBytes are ASCII letters, digits and spaces, punctBytes every
// other ASCII byte, and every non-ASCII rune (or invalid UTF-8 byte)
// counts as a whole token.
func (q Query) Count(text string) int {
	if q.Counter != nil {
		return q.Counter.Count(text)
	}
	word, punct, other := 0, 0, 0
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ' {
				word++
			} else {
				punct++
			}
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		other++
		i += n
	}
	return (word+2*punct+3)/4 + other
}
