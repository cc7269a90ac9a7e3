package layer

import "unicode/utf8"

// Count returns the tokens in text counted with q.Counter, or with
// [EstimateTokens] when q.Counter is nil.
func (q Query) Count(text string) int {
	if q.Counter != nil {
		return q.Counter.Count(text)
	}
	return EstimateTokens(text)
}

// EstimateTokens is the default token count, cheap and with no tokenizer
// data:
//
//	tokens = ceil((wordBytes + 2·punctBytes) / 4) + nonASCIIRunes
//
// wordBytes are ASCII letters, digits and spaces.
// punctBytes are every other ASCII byte: punctuation, brackets, quotes, tabs and newlines.
// Every non-ASCII rune counts as a whole token, and so does every invalid UTF-8 byte.
// Punctuation counts double because tokenizers split it into short tokens,
// which makes JSON and code denser in tokens than prose.
//
// The estimate over-counts English, Go and JSON in total.
// A single item can be under-counted, so keep a margin or use an exact
// counter (package prompt/tiktoken) when budgets are tight.
// BENCHMARKS.md gives its measured error.
func EstimateTokens(text string) int {
	word, punct, other := 0, 0, 0
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if wordByte(c) {
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

// wordByte reports whether the ASCII byte c counts as a word character
// in EstimateTokens: a letter, a digit or the space.
func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' '
}
