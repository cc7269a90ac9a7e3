package main

import (
	"fmt"
	"strings"
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
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		s = s[n:]
	}
	return b.String()
}

// unsafeRune reports whether safe escapes r.
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c: // LRM, RLM, ALM
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // embeddings, overrides, isolates
		return true
	case r == 0x2028, r == 0x2029, r == utf8.RuneError:
		return true
	}
	return false
}
