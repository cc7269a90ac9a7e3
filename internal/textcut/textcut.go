// Package textcut cuts text to a byte budget without splitting a UTF-8
// sequence.
package textcut

import "unicode/utf8"

// Prefix returns the longest prefix of s that is at most n bytes and does
// not end inside a UTF-8 sequence. It returns s when s fits, and "" when n
// is zero or negative.
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
