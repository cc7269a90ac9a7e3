package redact

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/memlayer/memlayer/internal/jsonx"
)

// A text that is one JSON object or array is redacted value by value, not
// as text, so that the mask never cuts across its syntax and identifiers
// are known by their keys at every depth:
//
//   - a string value is decoded and redacted as text, and the masks are
//     written back in place of what they replace, escaped as the string
//     needs; every other byte of the document stays as it was (escapes,
//     numbers, white space, the order of members);
//   - a string value that holds a JSON document itself (a tool result
//     carrying another service's response as an escaped string) is
//     redacted as a document, to any depth;
//   - a number is read as written, never as a float64, and masked whole,
//     as a JSON string, when the rules find a card number (or a secret
//     under a secret's key) in it;
//   - the values under a key that names an identifier (see
//     isIdentifierName), and the elements of an array under one, are
//     looked at only for e-mail addresses and IBANs (a login ID may be an
//     address; a numeric ID may pass a card's checks); the string or number under a key that names a secret
//     ("api_key", "password", "client_secret", ...) is masked whole when
//     it has 8 bytes or more;
//   - keys are redacted as text (a map keyed by e-mail address).

// isDocument reports whether text is one JSON object or array. The
// brackets at both ends are checked first, so that text which is not one
// costs no copy for json.Valid.
func isDocument(text string) bool {
	t := strings.Trim(text, " \t\n\r")
	if len(t) < 2 || !bracketed(t) {
		return false
	}
	return json.Valid([]byte(text))
}

// closers maps each bracket that opens a JSON container to the one that
// closes it.
var closers = map[byte]byte{'{': '}', '[': ']'}

// bracketed reports whether t starts with '{' or '[' and ends with the
// bracket that closes it.
func bracketed(t string) bool {
	c, ok := closers[t[0]]
	return ok && t[len(t)-1] == c
}

// keyKind is what a member's key says about its value.
type keyKind uint8

const (
	plainKey keyKind = iota
	idKey
	secretKey
)

func kindOfKey(key string) keyKind {
	if isIdentifierName(key) {
		return idKey
	}
	l := strings.ToLower(key)
	for _, s := range secretKeys {
		if strings.HasSuffix(l, s) {
			return secretKey
		}
	}
	return plainKey
}

// frame is an open object or array of the document being redacted.
type frame struct {
	object  bool
	wantKey bool    // an object's next string is a key
	key     keyKind // an object's current member's key; for an array, its own key's
}

// document returns the spans to mask in doc, a valid JSON object or
// array, in order. It walks doc's tokens (jsonx.Next) with a stack of the
// open containers, so deep nesting costs no recursion, and decodes only
// the strings that have escapes.
func (r *rules) document(doc string, keep []string) []span {
	d := []byte(doc)
	var (
		stack []frame
		found []span
	)
	for i := 0; ; {
		v, next := jsonx.Next(d, i)
		start := next - len(v.Raw)
		i = next
		switch v.Kind {
		case jsonx.KindBad: // the end
			return found
		case jsonx.KindObject, jsonx.KindArray:
			stack = append(stack, openFrame(stack, v.Kind))
		case jsonx.KindEnd:
			stack = stack[:len(stack)-1]
			valueDone(stack)
		default:
			found = append(found, r.scalar(doc, start, next, v.Kind, &stack[len(stack)-1], keep)...)
		}
	}
}

// openFrame returns the frame of an object or array (kind) opened inside
// stack's innermost container: an array takes the kind of its own key.
func openFrame(stack []frame, kind jsonx.Kind) frame {
	if kind == jsonx.KindObject {
		return frame{object: true, wantKey: true}
	}
	if len(stack) == 0 {
		return frame{}
	}
	return frame{key: stack[len(stack)-1].key}
}

// scalar returns the spans to mask in doc[start:end], a key, string,
// number, boolean or null (kind) read in the container top, and notes
// what it read in top.
func (r *rules) scalar(doc string, start, end int, kind jsonx.Kind, top *frame, keep []string) []span {
	if top.wantKey {
		s, pos := unquote(doc, start, end)
		top.wantKey, top.key = false, kindOfKey(s)
		return inString(start, s, pos, r.text(s, keep))
	}
	top.wantKey = top.object // an object's next string is a key again
	switch kind {
	case jsonx.KindString:
		s, pos := unquote(doc, start, end)
		return r.stringValue(start, end, s, pos, top.key, keep)
	case jsonx.KindNumber:
		return r.number(doc[start:end], start, top.key, keep)
	}
	return nil
}

// valueDone notes that the current value of the innermost container has
// been read: an object's next string is a key again.
func valueDone(stack []frame) {
	if top := len(stack) - 1; top >= 0 && stack[top].object {
		stack[top].wantKey = true
	}
}

// unquote returns the value of the JSON string literal doc[start:end]
// and, when it differs from the literal's inside (escapes, invalid
// UTF-8), where each of its bytes was written (jsonx.UnquoteOffsets).
func unquote(doc string, start, end int) (string, []int) {
	lit := doc[start:end]
	if strings.IndexByte(lit, '\\') < 0 && utf8.ValidString(lit) {
		return lit[1 : len(lit)-1], nil
	}
	v, pos := jsonx.UnquoteOffsets([]byte(lit))
	return string(v), pos
}

// stringValue returns the spans to mask in the string literal
// doc[start:end], whose value is s, under a key of kind key.
func (r *rules) stringValue(start, end int, s string, pos []int, key keyKind, keep []string) []span {
	switch {
	case key == idKey:
		// An identifier's value keeps its numbers and tokens, but an
		// e-mail address or an IBAN in it is masked ("login_id").
		return inString(start, s, pos, r.textIn(s, keep, true))
	case key == secretKey && len(s) >= 8 && !holdsKept(s, keep) && s != r.mask(Secret, s):
		return []span{{Finding{Secret, start + 1, end - 1}, escape(r.mask(Secret, s))}}
	case isDocument(s):
		return inString(start, s, pos, r.document(s, keep))
	}
	return inString(start, s, pos, r.text(s, keep))
}

// number returns the span to mask for the JSON number num at start, under
// a key of kind key: the whole number, replaced by its mask as a string.
func (r *rules) number(num string, start int, key keyKind, keep []string) []span {
	if key == idKey || holdsKept(num, keep) {
		return nil
	}
	kind := Secret
	if key != secretKey || len(num) < 8 {
		in := r.text(num, keep)
		if len(in) == 0 {
			return nil
		}
		kind = in[0].Kind
	}
	return []span{{Finding{kind, start, start + len(num)}, `"` + escape(r.mask(kind, num)) + `"`}}
}

func holdsKept(s string, keep []string) bool {
	for _, k := range keep {
		if k != "" && strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// inString maps spans found in s, the value of the JSON string literal at
// start, to spans of the document, their replacements escaped as the
// literal needs. pos is where each byte of s was written in the literal
// (see unquote); nil when s is the literal's inside.
func inString(start int, s string, pos []int, in []span) []span {
	if len(in) == 0 {
		return nil
	}
	out := make([]span, len(in))
	for i, f := range in {
		a, b := start+1+f.Start, start+1+f.End
		if pos != nil {
			e := f.End
			for e < len(s) && pos[e] == pos[e-1] { // not inside what one escape wrote
				e++
			}
			a, b = start+pos[f.Start], start+pos[e]
		}
		out[i] = span{Finding{f.Kind, a, b}, escape(f.repl)}
	}
	return out
}

// escape returns s written as the inside of a JSON string.
func escape(s string) string {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf
	}
	if plain {
		return s
	}
	b := jsonx.AppendString(nil, s)
	return string(b[1 : len(b)-1])
}

// apply returns text with each span (sorted, disjoint) replaced.
func apply(text string, spans []span) string {
	var b strings.Builder
	b.Grow(len(text))
	at := 0
	for _, f := range spans {
		b.WriteString(text[at:f.Start])
		b.WriteString(f.repl)
		at = f.End
	}
	b.WriteString(text[at:])
	return b.String()
}
