package jsonx

import (
	"unicode/utf16"
	"unicode/utf8"
)

// The lexical pieces the strict decoder and the forgiving scanner share:
// white space, \u escapes and the decoding of string bodies.

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func skipSpace(d []byte, i int) int {
	for i < len(d) && isSpace(d[i]) {
		i++
	}
	return i
}

// unescape appends to buf the text of the string body s (what follows the
// opening quote), up to its first unescaped quote or the end of s, and
// returns it with the index of that quote (len(s) when there is none).
// Invalid UTF-8 becomes U+FFFD, and so does a lone surrogate, as in
// encoding/json. Strict, it stops at the first thing JSON forbids (a
// control character, a bad or cut escape) and returns its index as bad;
// forgiving, it keeps control characters, turns bad escapes into U+FFFD
// and goes on (bad is -1 either way when there is nothing wrong). Given
// pos, it also appends to *pos, for each byte it appends to buf, the index
// in s of the byte or escape that byte comes from.
func unescape(buf, s []byte, strict bool, pos *[]int) (out []byte, end, bad int) {
	i := 0
	for i < len(s) {
		c, start, n := s[i], i, len(buf)
		switch {
		case c == '"' && strict:
			return buf, i, -1
		case c < 0x20 && strict:
			return buf, i, i
		case c == '\\':
			if i+1 >= len(s) {
				if strict {
					return buf, i, i
				}
				return buf, len(s), -1
			}
			e := s[i+1]
			i += 2
			switch {
			case simpleEscape[e] != 0:
				buf = append(buf, simpleEscape[e])
			case e == 'u':
				r, next, ok := unicodeEscape(s, i)
				if !ok && strict {
					return buf, i - 2, i - 2
				}
				i = next
				buf = utf8.AppendRune(buf, r)
			default:
				if strict {
					return buf, i - 2, i - 2
				}
				buf = utf8.AppendRune(buf, utf8.RuneError)
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			buf = utf8.AppendRune(buf, r)
			i += size
		}
		if pos != nil {
			for range len(buf) - n {
				*pos = append(*pos, start)
			}
		}
	}
	return buf, len(s), -1
}

// simpleEscape maps the byte after a backslash to the byte it stands
// for, or to 0 when the escape is not a one-byte one.
var simpleEscape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// unicodeEscape decodes the \u escape whose hex digits start at s[i], and
// a low surrogate's escape after a high one. It returns the rune (U+FFFD
// for a bad escape or a lone surrogate), the index after what it read,
// and false when the four hex digits are bad.
func unicodeEscape(s []byte, i int) (rune, int, bool) {
	r, ok := hex4(s, i)
	i += 4
	if !ok {
		return utf8.RuneError, i, false
	}
	if !utf16.IsSurrogate(r) {
		return r, i, true
	}
	r2, ok := rune(-1), false
	if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
		r2, ok = hex4(s, i+2)
	}
	if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
		return dec, i + 6, true
	}
	return utf8.RuneError, i, true
}

// hex4 decodes the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
