package jsonx

import (
	"unicode/utf16"
	"unicode/utf8"
)

// The lexical pieces the strict decoder and the forgiving scanner share:
// white space, \u escapes and the decoding of string bodies.

// Lexical classes of lexClass.
const (
	lxSpace  = 1 << iota // JSON white space
	lxSep                // ',' and ':', which Next skips
	lxNumber             // the bytes of a number: digits, '-', '+', '.', 'e', 'E'
	lxWord               // a-z, the bytes of true, false and null
)

// lexClass holds the lexical classes of each byte; startKind the kind of
// value a byte starts (KindBad for none), and tokenKind the kind of the
// one-byte token a bracket is for Next.
var lexClass, startKind, tokenKind = lexTables()

func lexTables() (class [256]uint8, start, token [256]Kind) {
	const digits = "0123456789"
	for _, c := range []struct {
		bits uint8
		set  string
	}{
		{lxSpace, " \t\n\r"},
		{lxSep, ",:"},
		{lxNumber, digits + "-+.eE"},
		{lxWord, "abcdefghijklmnopqrstuvwxyz"},
	} {
		for i := 0; i < len(c.set); i++ {
			class[c.set[i]] |= c.bits
		}
	}
	for i := 0; i < len(digits); i++ {
		start[digits[i]] = KindNumber
	}
	start['-'], start['"'], start['{'], start['['] = KindNumber, KindString, KindObject, KindArray
	start['t'], start['f'], start['n'] = KindBool, KindBool, KindNull
	token['{'], token['['], token['}'], token[']'] = KindObject, KindArray, KindEnd, KindEnd
	return class, start, token
}

// skipClass returns the index of the first byte at or after d[i] that is
// not of the lexical classes bits.
func skipClass(d []byte, i int, bits uint8) int {
	for i < len(d) && lexClass[d[i]]&bits != 0 {
		i++
	}
	return i
}

func skipSpace(d []byte, i int) int { return skipClass(d, i, lxSpace) }

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
			var bad bool
			if buf, i, bad = unescapeOne(buf, s, i, strict); bad {
				return buf[:n], start, start
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			buf = utf8.AppendRune(buf, r)
			i += size
		}
		appendPos(pos, start, len(buf)-n)
	}
	return buf, len(s), -1
}

// appendPos appends to *pos, when pos is not nil, n times the index
// start: where the n bytes unescape appended come from.
func appendPos(pos *[]int, start, n int) {
	if pos == nil {
		return
	}
	for range n {
		*pos = append(*pos, start)
	}
}

// unescapeOne appends to buf what the escape at s[i] stands for and
// returns the index after it. A cut escape ends s; a bad one is U+FFFD,
// or, strict, bad.
func unescapeOne(buf, s []byte, i int, strict bool) (out []byte, next int, bad bool) {
	if i+1 >= len(s) {
		return buf, len(s), strict
	}
	e := s[i+1]
	switch {
	case simpleEscape[e] != 0:
		return append(buf, simpleEscape[e]), i + 2, false
	case e == 'u':
		r, next, ok := unicodeEscape(s, i+2)
		return utf8.AppendRune(buf, r), next, !ok && strict
	}
	return utf8.AppendRune(buf, utf8.RuneError), i + 2, strict
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
		v := hexValue[c]
		if v < 0 {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

// hexValue is the value of each hex digit, -1 for every other byte.
var hexValue = hexValues()

func hexValues() (t [256]int8) {
	for c := range t {
		t[c] = -1
	}
	for v := range int8(16) {
		t["0123456789abcdef"[v]], t["0123456789ABCDEF"[v]] = v, v
	}
	return t
}
