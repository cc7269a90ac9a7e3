package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// safe returns stored text s as the table output prints it: on one line,
// with nothing a terminal acts on. Newlines, carriage returns and tabs
// become \n, \r and \t; other C0 controls, DEL and bytes that are not
// UTF-8 become \xNN; C1 controls (U+0080 to U+009F, which include the
// one-byte CSI), bidirectional overrides, embeddings, isolates and marks,
// and the line and paragraph separators become \uNNNN. So a stored value
// can neither send an escape sequence to the terminal nor forge a line of
// the output. Backslashes are left as they are, so JSON stays readable:
// a stored `\n` and an escaped newline print alike. -json output is
// not passed through safe: encoding/json escapes what JSON must.
func safe(s string) string {
	i := strings.IndexFunc(s, unsafeRune)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for s = s[i:]; s != ""; {
		r, n := utf8.DecodeRuneInString(s)
		switch short := shortEscapes[r]; {
		case short != "":
			b.WriteString(short)
		case r == utf8.RuneError && n == 1, r < 0x20, r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, s[0]) // the byte itself
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		s = s[n:]
	}
	return b.String()
}

// shortEscapes are the controls safe writes as Go does.
var shortEscapes = map[rune]string{'\n': `\n`, '\r': `\r`, '\t': `\t`}

// unsafeRune reports whether safe escapes r.
func unsafeRune(r rune) bool { return unicode.Is(unsafeRunes, r) }

// unsafeRunes are the runes safe escapes: C0 controls, DEL and C1
// controls; ALM, LRM and RLM; the line and paragraph separators with the
// embeddings and overrides that follow them; the isolates; and the
// replacement character (as a rune, and for bytes that are not UTF-8).
var unsafeRunes = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x0000, Hi: 0x001f, Stride: 1},
		{Lo: 0x007f, Hi: 0x009f, Stride: 1},
		{Lo: 0x061c, Hi: 0x061c, Stride: 1},
		{Lo: 0x200e, Hi: 0x200f, Stride: 1},
		{Lo: 0x2028, Hi: 0x202e, Stride: 1},
		{Lo: 0x2066, Hi: 0x2069, Stride: 1},
		{Lo: 0xfffd, Hi: 0xfffd, Stride: 1},
	},
	LatinOffset: 2,
}
