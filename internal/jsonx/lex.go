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
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(s, i)
				i += 4
				switch {
				case !ok && strict:
					return buf, i - 6, i - 6
				case !ok:
					r = utf8.RuneError
				case utf16.IsSurrogate(r):
					r2, ok := rune(-1), false
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						r2, ok = hex4(s, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
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
