package jsonx

import (
	"cmp"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// Append appends the encoding of the tree value v to b: compact when
// indent is "", else one member per line, indented by indent per level
// (like json.MarshalIndent with an empty prefix). Object keys are sorted,
// as they are in the tree. A value that is not of a JSON type encodes as
// null, so that the output stays valid.
func Append(b []byte, v any, indent string) []byte { return appendJSON(b, v, indent, 0) }

func appendJSON(b []byte, v any, indent string, level int) []byte {
	switch v := v.(type) {
	case *Object:
		return appendItems(b, '{', '}', len(v.Members), indent, level, func(b []byte, i int) []byte {
			b = append(AppendString(b, v.Members[i].Key), ':')
			if indent != "" {
				b = append(b, ' ')
			}
			return appendJSON(b, v.Members[i].Value, indent, level+1)
		})
	case []any:
		return appendItems(b, '[', ']', len(v), indent, level, func(b []byte, i int) []byte {
			return appendJSON(b, v[i], indent, level+1)
		})
	}
	return appendScalar(b, v)
}

// appendItems appends an object or array of n members or elements
// between open and end, each written by item, one a line when indented.
func appendItems(b []byte, open, end byte, n int, indent string, level int, item func(b []byte, i int) []byte) []byte {
	b = append(b, open)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = item(newline(b, indent, level+1), i)
	}
	if n > 0 {
		b = newline(b, indent, level)
	}
	return append(b, end)
}

// appendScalar appends the JSON of v, a value that is neither an object
// nor an array: null when it is not of a JSON type (normalize prevents
// this) or a float64 JSON cannot hold, so that the output stays valid.
func appendScalar(b []byte, v any) []byte {
	switch v := v.(type) {
	case bool:
		return strconv.AppendBool(b, v)
	case string:
		return AppendString(b, v)
	case json.Number:
		return append(b, cmp.Or(string(v), "0")...)
	case float64:
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			return strconv.AppendFloat(b, v, 'g', -1, 64)
		}
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	}
	return append(b, "null"...)
}

func newline(b []byte, indent string, level int) []byte {
	if indent == "" {
		return b
	}
	b = append(b, '\n')
	for range level {
		b = append(b, indent...)
	}
	return b
}

const hexDigits = "0123456789abcdef"

// plain[c] is true for the ASCII bytes a JSON string holds as they are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// shortEscapes maps the bytes JSON writes as a two-byte escape to the
// byte after the backslash.
var shortEscapes = [utf8.RuneSelf]byte{'"': '"', '\\': '\\', '\n': 'n', '\r': 'r', '\t': 't'}

// appendEscape appends the escape of the ASCII byte c that a JSON string
// cannot hold as it is.
func appendEscape(b []byte, c byte) []byte {
	if e := shortEscapes[c]; e != 0 {
		return append(b, '\\', e)
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// runeEscape returns the escape AppendString writes for the non-ASCII
// rune r of size bytes, or "": an invalid byte (RuneError of one byte)
// as U+FFFD, and the line and paragraph separators.
func runeEscape(r rune, size int) string {
	switch {
	case size == 1:
		return `\ufffd`
	case r == '\u2028':
		return `\u2028`
	case r == '\u2029':
		return `\u2029`
	}
	return ""
}

// AppendString appends s as a JSON string. It escapes what JSON requires
// and U+2028/U+2029; invalid UTF-8 becomes U+FFFD. HTML characters are
// left alone: the prompt is not HTML, and the block is fenced separately.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = appendEscape(append(b, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if esc := runeEscape(r, size); esc != "" {
			b = append(b, s[start:i]...)
			b = append(b, esc...)
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
