package jsonx

import (
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
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case string:
		return AppendString(b, v)
	case json.Number:
		if v == "" {
			return append(b, '0')
		}
		return append(b, v...)
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return append(b, "null"...)
		}
		return strconv.AppendFloat(b, v, 'g', -1, 64)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case *Object:
		if len(v.Members) == 0 {
			return append(b, "{}"...)
		}
		b = append(b, '{')
		for i, e := range v.Members {
			if i > 0 {
				b = append(b, ',')
			}
			b = newline(b, indent, level+1)
			b = AppendString(b, e.Key)
			b = append(b, ':')
			if indent != "" {
				b = append(b, ' ')
			}
			b = appendJSON(b, e.Value, indent, level+1)
		}
		b = newline(b, indent, level)
		return append(b, '}')
	case []any:
		if len(v) == 0 {
			return append(b, "[]"...)
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = newline(b, indent, level+1)
			b = appendJSON(b, e, indent, level+1)
		}
		b = newline(b, indent, level)
		return append(b, ']')
	default:
		// Not a JSON type (normalize prevents this); keep the output valid.
		return append(b, "null"...)
	}
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
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch {
		case r == utf8.RuneError && size == 1:
			esc = `\ufffd`
		case r == '\u2028':
			esc = `\u2028`
		case r == '\u2029':
			esc = `\u2029`
		}
		if esc != "" {
			b = append(b, s[start:i]...)
			b = append(b, esc...)
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
