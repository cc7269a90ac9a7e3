package jsonx

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// The forgiving scanner: a small JSON reader for entity extraction, which
// looks at a handful of fields of a few objects, so instead of decoding the whole result (encoding/json
// takes tens of microseconds for a 2 KB payload) it indexes one object at a
// time and leaves nested values as raw spans until they are visited. It
// never recurses while skipping, so deep nesting costs no stack, and it
// treats truncated input as the end of the document rather than an error.

// Kind is the kind of a scanned Value.
type Kind uint8

// The kinds of value; KindBad is no value (end of input, or a byte that
// starts none). KindEnd is no value either: the closing bracket [Next]
// returns as a token of its own.
const (
	KindBad Kind = iota
	KindNull
	KindBool
	KindNumber
	KindString
	KindObject
	KindArray
	KindEnd
)

// Value is one JSON value as a span of the input: strings keep their quotes,
// objects and arrays their brackets (the closing one may be missing when the
// input was cut).
type Value struct {
	Raw  []byte
	Kind Kind
}

// Field is one member of an object: its key with the quotes removed
// (escapes left as they are: keys that matter never have any) and value.
// An object's fields hold each key once: when a key appears more than
// once, the last member wins, as in encoding/json (see lastWins).
type Field struct {
	Key   []byte
	Value Value
}

// maxFields bounds how many members of one object Fields returns (every
// member is read, so that the last of duplicate keys wins), and maxElems
// how many elements of one array Elems visits; the rest is skipped.
const (
	maxFields = 256
	maxElems  = 64
)

// skipString returns the index just past the string whose opening quote is
// at d[i], or len(d) when it is not closed. A backslash escapes the byte
// after it: a quote preceded by an odd number of backslashes is skipped.
func skipString(d []byte, i int) int {
	i++
	for {
		k := bytes.IndexByte(d[i:], '"')
		if k < 0 {
			return len(d)
		}
		j := i + k
		n := 0
		for k := j - 1; k >= i && d[k] == '\\'; k-- {
			n++
		}
		i = j + 1
		if n%2 == 0 {
			return i
		}
	}
}

// class sorts bytes for skipping containers: quote, open, close, other.
var class = func() (c [256]uint8) {
	c['"'] = 1
	c['{'], c['['] = 2, 2
	c['}'], c[']'] = 3, 3
	return c
}()

// skipContainer returns the index just past the object or array opening at
// d[i], or len(d) when it is not closed.
func skipContainer(d []byte, i int) int { return skipRest(d, i+1) }

// ScanValue returns the value starting at d[i] (after white space) and the
// index just past it.
func ScanValue(d []byte, i int) (Value, int) {
	i = skipSpace(d, i)
	if i >= len(d) {
		return Value{}, i
	}
	k := startKind[d[i]]
	if k == KindBad {
		return Value{}, len(d)
	}
	end := valueEnd(d, i, k)
	return Value{Raw: d[i:end], Kind: k}, end
}

// valueEnd returns the index just past the value of kind k at d[i]: a
// number or literal (true, false, null) runs on while its bytes do.
func valueEnd(d []byte, i int, k Kind) int {
	switch k {
	case KindString:
		return skipString(d, i)
	case KindObject, KindArray:
		return skipContainer(d, i)
	case KindNumber:
		return skipClass(d, i, lxNumber)
	}
	return skipClass(d, i, lxWord)
}

// Next returns the token of a JSON document at d[i] or after it, skipping
// white space, commas and colons, and the index just past it: a string,
// number, true, false or null as ScanValue reads them, an opening bracket
// alone (KindObject or KindArray, Raw "{" or "["), or a closing one
// (KindEnd); KindBad at the end of d. On valid JSON the tokens come in
// document order, which is how package redact walks a document without
// decoding it (a key is the string after an object's opening bracket or
// after one of its values).
func Next(d []byte, i int) (Value, int) {
	i = skipClass(d, i, lxSpace|lxSep)
	if i >= len(d) {
		return Value{}, i
	}
	if k := tokenKind[d[i]]; k != KindBad {
		return Value{Raw: d[i : i+1], Kind: k}, i + 1
	}
	return ScanValue(d, i)
}

// Fields returns the members of an object value in buf: each key once (the
// last member with it wins), at most maxFields of them.
func (v Value) Fields(buf []Field) []Field {
	buf = buf[:0]
	if v.Kind != KindObject {
		return buf
	}
	d := v.Raw
	for i := 1; ; i++ {
		f, end, ok := field(d, i)
		if !ok {
			break // '}' or malformed: stop
		}
		buf = append(buf, f)
		if i = skipSpace(d, end); !byteAt(d, i, ',') {
			break
		}
	}
	buf = lastWins(buf)
	return buf[:min(len(buf), maxFields)]
}

// field reads the member of an object at d[i] (after white space) and
// returns it and the index just past it, or false when there is none.
func field(d []byte, i int) (Field, int, bool) {
	i = skipSpace(d, i)
	if !byteAt(d, i, '"') {
		return Field{}, i, false
	}
	end := skipString(d, i)
	if end > len(d) || end-i < 2 {
		return Field{}, i, false
	}
	key := d[i+1 : end-1]
	if i = skipSpace(d, end); !byteAt(d, i, ':') {
		return Field{}, i, false
	}
	val, i := ScanValue(d, i+1)
	return Field{Key: key, Value: val}, i, val.Kind != KindBad
}

// byteAt reports whether d[i] is c.
func byteAt(d []byte, i int, c byte) bool { return i < len(d) && d[i] == c }

// lastWins removes the members of fs whose key appears again later, so
// that the last one wins, as in encoding/json; the others keep their
// order. Keys are compared as written (escapes included).
func lastWins(fs []Field) []Field {
	var sb [32]bool
	shadowed := sb[:]
	if len(fs) > len(sb) {
		shadowed = make([]bool, len(fs))
	}
	if !markShadowed(fs, shadowed) {
		return fs
	}
	out := fs[:0]
	for i := range fs {
		if !shadowed[i] {
			out = append(out, fs[i])
		}
	}
	return out
}

// markShadowed sets shadowed[i] for each member of fs whose key appears
// again later, and reports whether there was one: comparing each pair of
// a few members, indexing the keys of more.
func markShadowed(fs []Field, shadowed []bool) bool {
	if len(fs) > 32 {
		return markShadowedIndexed(fs, shadowed)
	}
	dup := false
	for j := range fs {
		for i := range j {
			if string(fs[i].Key) == string(fs[j].Key) {
				shadowed[i], dup = true, true
			}
		}
	}
	return dup
}

// markShadowedIndexed is markShadowed with a map of the keys.
func markShadowedIndexed(fs []Field, shadowed []bool) bool {
	dup := false
	last := make(map[string]int, len(fs))
	for j, f := range fs {
		if i, ok := last[string(f.Key)]; ok {
			shadowed[i], dup = true, true
		}
		last[string(f.Key)] = j
	}
	return dup
}

// elems calls fn for up to maxElems elements of an array value, stopping
// early when fn returns false.
func (v Value) Elems(fn func(Value) bool) {
	if v.Kind != KindArray {
		return
	}
	d := v.Raw
	for n, i := 0, 1; n < maxElems; n++ {
		var e Value
		e, i = ScanValue(d, i) // KindBad at ']' or the end
		if i = skipSpace(d, i); e.Kind == KindBad || !fn(e) || !byteAt(d, i, ',') {
			return
		}
		i++
	}
}

// empty reports whether v is null, false, "", 0, {} or [].
func (v Value) Empty() bool {
	switch v.Kind {
	case KindBad, KindNull:
		return true
	case KindBool:
		return string(v.Raw) == "false"
	case KindString:
		return len(v.Raw) <= 2
	case KindNumber:
		f, err := strconv.ParseFloat(string(v.Raw), 64)
		return err == nil && f == 0
	default:
		return len(bytes.TrimSpace(v.Raw[1:])) <= 1
	}
}

// MaxScalar caps how much of one string is decoded; names are cut far
// shorter later.
const MaxScalar = 4096

// scalar returns the text of a string or number value ("" for others).
// Numbers that are whole are written without exponent or fraction, so 123,
// 123.0 and 1.23e2 all give "123".
func (v Value) Scalar() string {
	switch v.Kind {
	case KindString:
		return Unquote(v.Raw)
	case KindNumber:
		raw := v.Raw
		if !bytes.ContainsAny(raw, ".eE") {
			return string(raw)
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return string(raw)
		}
		if f == float64(int64(f)) && f < 1e18 && f > -1e18 {
			return strconv.FormatInt(int64(f), 10)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return ""
}

// Unquote decodes a JSON string span (quotes included; the closing one may
// be missing), at most MaxScalar bytes of it. Bad escapes and invalid
// UTF-8 become U+FFFD.
func Unquote(raw []byte) string {
	if len(raw) < 1 {
		return ""
	}
	if len(raw) > MaxScalar+2 {
		raw = raw[:MaxScalar+2]
	}
	return string(decodeString(raw))
}

// UnquoteBytes decodes a whole JSON string span.
func UnquoteBytes(raw []byte) []byte {
	if len(raw) < 1 {
		return nil
	}
	return decodeString(raw)
}

// UnquoteOffsets decodes the whole JSON string span lit (its quotes
// included) as UnquoteBytes does, and returns with it, for each byte of
// the value, the offset in lit of the byte or escape it comes from, then
// the offset of the closing quote: value[i:j] is written lit[pos[i]:pos[j]]
// when neither i nor j falls inside what one escape or character wrote.
// It is how a redactor that searched the value masks the literal in place.
func UnquoteOffsets(lit []byte) (value []byte, pos []int) {
	if len(lit) < 2 {
		return nil, []int{len(lit)}
	}
	pos = make([]int, 0, len(lit))
	value, _, _ = unescape(make([]byte, 0, len(lit)), lit[1:len(lit)-1], false, &pos)
	for i := range pos {
		pos[i]++ // offsets in the body → in lit
	}
	return value, append(pos, len(lit)-1)
}

func decodeString(raw []byte) []byte {
	s := raw[1:]
	if n := len(s); n > 0 && s[n-1] == '"' {
		bs := 0
		for k := n - 2; k >= 0 && s[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			s = s[:n-1]
		}
	}
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return s
	}
	out, _, _ := unescape(make([]byte, 0, len(s)), s, false, nil)
	return out
}

// skipRest skips to the end of the container that d[i] is inside: it
// returns the index just past the bracket that closes it, or len(d).
func skipRest(d []byte, i int) int {
	depth := 1
	for i < len(d) {
		switch class[d[i]] {
		case 0:
			i++
		case 1:
			i = skipString(d, i)
		case 2:
			depth++
			i++
		default:
			depth--
			i++
			if depth == 0 {
				return i
			}
		}
	}
	return len(d)
}
