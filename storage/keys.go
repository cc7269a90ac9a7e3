package storage

import (
	"fmt"
	"strings"
)

// Escape encodes one part of a key so that it contains no '/', is never
// "." or "..", and holds only printable ASCII: bytes outside
// [A-Za-z0-9._-] become %XX, a part made only of dots has its dots encoded,
// and the empty part becomes "%". Escape is injective, so two different
// parts never share an escaped form, and [Unescape] reverses it.
func Escape(part string) string {
	if part == "" {
		return "%"
	}
	allDots := strings.Trim(part, ".") == ""
	clean := !allDots
	if clean {
		for i := 0; i < len(part); i++ {
			if !unreserved(part[i]) {
				clean = false
				break
			}
		}
	}
	if clean {
		return part
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(part) * 3)
	for i := 0; i < len(part); i++ {
		c := part[i]
		if unreserved(c) && !(allDots && c == '.') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// Unescape reverses [Escape]. It fails with an error that is
// [ErrInvalidKey] on text Escape cannot produce (a bad or non-canonical
// escape such as "%2f" or "%41", a raw byte Escape would have encoded, "",
// "." or ".."), so every accepted part has exactly one escaped form and two
// different stored parts never decode to the same value.
func Unescape(s string) (string, error) {
	var out string
	if !strings.Contains(s, "%") {
		out = s
	} else if s == "%" {
		out = ""
	} else {
		var b strings.Builder
		b.Grow(len(s))
		for i := 0; i < len(s); i++ {
			if s[i] != '%' {
				b.WriteByte(s[i])
				continue
			}
			if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
				return "", fmt.Errorf("storage: bad escape in %s: %w", Quote(s), ErrInvalidKey)
			}
			b.WriteByte(byte(unhex(s[i+1])<<4 | unhex(s[i+2])))
			i += 2
		}
		out = b.String()
	}
	if Escape(out) != s {
		return "", fmt.Errorf("storage: %s is not an escaped key part: %w", Quote(s), ErrInvalidKey)
	}
	return out, nil
}

func unreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// LayerPrefix is the prefix of every key of one layer in one scope:
// "layers/{layerID}/{scopeKey}/", with both parts escaped.
func LayerPrefix(layerID, scopeKey string) string {
	return "layers/" + Escape(layerID) + "/" + Escape(scopeKey) + "/"
}

// LayerKey is the key of one named value of a layer in a scope:
// "layers/{layerID}/{scopeKey}/{name}", every part escaped.
func LayerKey(layerID, scopeKey, name string) string {
	return LayerPrefix(layerID, scopeKey) + Escape(name)
}

// ThreadPrefix is the prefix of every key of one thread's checkpoints:
// "threads/{threadID}/".
func ThreadPrefix(threadID string) string {
	return "threads/" + Escape(threadID) + "/"
}

// ThreadKey is the key of one named value of a thread, such as its
// checkpoint: "threads/{threadID}/{name}", every part escaped.
func ThreadKey(threadID, name string) string {
	return ThreadPrefix(threadID) + Escape(name)
}
