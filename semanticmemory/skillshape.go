package semanticmemory

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/memlayer/memlayer/internal/jsonx"
)

// The placeholders that stand for argument values in a skill's steps.
const (
	// PlaceholderID stands for an ID or a reference to an entity: a
	// value under a key that names one (id, pageId, slug, ref ...), or a
	// string with a digit in it.
	PlaceholderID = "<id>"
	// PlaceholderText stands for free text: a value under a key that
	// names text (title, name, heading, body ...), or a string that is
	// not one lowercase word.
	PlaceholderText = "<text>"
	// PlaceholderTime stands for a date or a time (RFC 3339 or
	// 2006-01-02).
	PlaceholderTime = "<time>"
	// PlaceholderURL stands for a URL or a path.
	PlaceholderURL = "<url>"
	// PlaceholderNumber stands for any number.
	PlaceholderNumber = "<number>"
)

// Bounds of a step's argument shape.
const (
	// maxShapeBytes caps the arguments a shape is read from, and the
	// shape itself: larger arguments are shaped as "{…}".
	maxShapeBytes = 16 << 10
	// maxShapeDepth is how deep objects and arrays are shaped; deeper
	// values are "…".
	maxShapeDepth = 4
	// maxEnumBytes is the longest string kept as a literal value.
	maxEnumBytes = 24
	// maxShapeOut caps a step's shape in the skill.
	maxShapeOut = 256
)

// idKeys and textKeys are the argument keys (lowercased, with '_' and
// '-' removed) whose string values are an ID and free text.
var (
	idKeys   = []string{"id", "ids", "ref", "refs", "slug", "key", "uuid", "handle", "parent", "target", "owner", "user", "author"}
	textKeys = []string{"title", "name", "text", "body", "content", "description", "summary", "message", "query", "q",
		"label", "heading", "subheading", "caption", "alt", "note", "comment", "subject", "question", "answer", "html", "markdown"}
)

// argShape returns the shape of a tool call's JSON arguments: the same
// JSON with object keys sorted and every value that varies from one use
// to the next replaced by a placeholder (see [PlaceholderID] and the
// others). Lowercase one-word strings of at most 24 bytes (an enum-like
// value such as "published"), booleans and null stay as they are. Arrays
// keep the distinct shapes of their elements. Arguments that are not a
// JSON object shape as "{}" when empty, else as their kind.
func argShape(args string) string {
	a := strings.TrimSpace(args)
	if a == "" || a == "{}" || a == "null" {
		return "{}"
	}
	if len(a) > maxShapeBytes {
		return "{…}"
	}
	v, _ := jsonx.ScanValue([]byte(a), 0)
	var b []byte
	b = appendShape(b, v, "", 0)
	if len(b) > maxShapeOut {
		return string(b[:maxShapeOut-len("…")]) + "…"
	}
	return string(b)
}

// appendShape appends the shape of v, the value of key, to b.
func appendShape(b []byte, v jsonx.Value, key string, depth int) []byte {
	if depth > maxShapeDepth {
		return append(b, `"…"`...)
	}
	switch v.Kind {
	case jsonx.KindObject:
		return appendObjectShape(b, v, depth)
	case jsonx.KindArray:
		return appendArrayShape(b, v, key, depth)
	case jsonx.KindString:
		return jsonx.AppendString(b, stringShape(key, v.Scalar()))
	case jsonx.KindNumber:
		return jsonx.AppendString(b, PlaceholderNumber)
	case jsonx.KindBool, jsonx.KindNull:
		if r := string(v.Raw); r == "true" || r == "false" || r == "null" {
			return append(b, r...)
		}
	}
	return append(b, `"…"`...)
}

func appendObjectShape(b []byte, v jsonx.Value, depth int) []byte {
	fs := v.Fields(nil)
	slices.SortFunc(fs, func(x, y jsonx.Field) int { return bytes.Compare(x.Key, y.Key) })
	b = append(b, '{')
	for i, f := range fs {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonx.AppendString(b, string(f.Key))
		b = append(b, ':')
		b = appendShape(b, f.Value, string(f.Key), depth+1)
	}
	return append(b, '}')
}

func appendArrayShape(b []byte, v jsonx.Value, key string, depth int) []byte {
	var seen []string
	v.Elems(func(e jsonx.Value) bool {
		s := string(appendShape(nil, e, key, depth+1))
		if !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
		return len(seen) < 4
	})
	b = append(b, '[')
	for i, s := range seen {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s...)
	}
	return append(b, ']')
}

// stringShape returns what a string value s of key stands for in a
// shape: a placeholder, or s itself when it is enum-like.
func stringShape(key, s string) string {
	k := normKey(key)
	switch {
	case isTime(s):
		return PlaceholderTime
	case strings.Contains(s, "://") || strings.HasPrefix(s, "/"):
		return PlaceholderURL
	case keyIs(k, idKeys):
		return PlaceholderID
	case keyIs(k, textKeys):
		return PlaceholderText
	case strings.ContainsFunc(s, unicode.IsDigit):
		return PlaceholderID
	case enumLike(s):
		return s
	}
	return PlaceholderText
}

// normKey lowercases key and drops '_' and '-'.
func normKey(key string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, key)
}

// keyIs reports whether the normalised key k is one of names or ends in
// one of them after a word (pageid, sectionids, posttitle).
func keyIs(k string, names []string) bool {
	for _, n := range names {
		if k == n || len(n) > 1 && strings.HasSuffix(k, n) {
			return true
		}
	}
	return false
}

// enumLike reports whether s is one lowercase word of at most
// maxEnumBytes bytes: a-z, then a-z, '_' or '-'.
func enumLike(s string) bool {
	return s != "" && len(s) <= maxEnumBytes && s[0] >= 'a' && s[0] <= 'z' && strings.Trim(s, enumBytes) == ""
}

// enumBytes are the bytes of an enum-like value.
const enumBytes = "abcdefghijklmnopqrstuvwxyz_-"

// isTime reports whether s is an RFC 3339 time or a date.
func isTime(s string) bool {
	if len(s) < len("2006-01-02") || s[0] < '0' || s[0] > '9' {
		return false
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly, "2006-01-02T15:04", "2006-01-02T15:04:05", time.DateTime} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// signature returns the identity of a step sequence: two sequences of
// the same steps (tools and argument shapes, in order) have the same
// signature, and so make one skill.
func signature(steps []SkillStep) string {
	h := sha256.New()
	for _, s := range steps {
		h.Write([]byte(s.Tool))
		h.Write([]byte{0})
		h.Write([]byte(s.Args))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}
