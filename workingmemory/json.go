package workingmemory

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// This file holds the JSON codec of the scratchpad. Inside the package a
// JSON value is *object (members sorted by key, keys unique), []any,
// string, json.Number, bool or nil; [toGo] converts to the map[string]any
// form that callers and jsonschema see. Sorted members make the hot path
// (decode, merge, validate, encode) a series of linear merge-joins with no
// map hashing, iteration or key sorting; the codec is hand-written because
// encoding/json spends more than the whole update budget on reflection.
// Objects encode with sorted keys, so equal states encode to equal bytes.

// object is a JSON object: members sorted by key, keys unique. Objects in
// a state are immutable once built.
type object struct {
	m []member
}

type member struct {
	key string
	val any
}

// get returns the value of key.
func (o *object) get(key string) (any, bool) {
	if o == nil {
		return nil, false
	}
	i, ok := o.find(key)
	if !ok {
		return nil, false
	}
	return o.m[i].val, true
}

func (o *object) find(key string) (int, bool) {
	lo, hi := 0, len(o.m)
	for lo < hi {
		h := int(uint(lo+hi) >> 1)
		if o.m[h].key < key {
			lo = h + 1
		} else {
			hi = h
		}
	}
	return lo, lo < len(o.m) && o.m[lo].key == key
}

// sortMembers sorts members by key in place (stable, so that of duplicate
// keys the last one wins) and drops duplicates, returning the prefix of
// ms that holds the result.
func sortMembers(ms []member) []member {
	sorted := true
	for i := 1; i < len(ms); i++ {
		if ms[i-1].key >= ms[i].key {
			sorted = false
			break
		}
	}
	if sorted {
		return ms
	}
	if len(ms) <= 32 {
		// Insertion sort: objects are small, and this avoids the
		// comparator calls of the generic sort.
		for i := 1; i < len(ms); i++ {
			for j := i; j > 0 && ms[j].key < ms[j-1].key; j-- {
				ms[j], ms[j-1] = ms[j-1], ms[j]
			}
		}
	} else {
		slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	}
	out := ms[:0]
	for i, e := range ms {
		if i+1 < len(ms) && ms[i+1].key == e.key {
			continue // a later duplicate wins
		}
		out = append(out, e)
	}
	clear(ms[len(out):])
	return out
}

// errSyntax is the cause of every decoding failure; the message says where.
var errSyntax = errors.New("invalid JSON")

// sortedCopy returns the members sorted by key with duplicates dropped
// (the last one wins), in a new slice of the exact size. It sorts an index
// array rather than the members themselves, so that each member is
// written once: member writes are pointer writes, which cost a GC write
// barrier each while a collection runs.
func sortedCopy(ms []member) []member {
	sorted := true
	for i := 1; i < len(ms); i++ {
		if ms[i-1].key >= ms[i].key {
			sorted = false
			break
		}
	}
	if sorted || len(ms) > 64 {
		return sortMembers(slices.Clone(ms))
	}
	var buf [64]uint8
	idx := buf[:len(ms)]
	for i := range idx {
		idx[i] = uint8(i)
	}
	for i := 1; i < len(idx); i++ { // stable insertion sort
		for j := i; j > 0 && ms[idx[j]].key < ms[idx[j-1]].key; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	n := 0
	for i := range idx {
		if i+1 < len(idx) && ms[idx[i+1]].key == ms[idx[i]].key {
			continue // a later duplicate wins
		}
		idx[n] = idx[i]
		n++
	}
	out := make([]member, n)
	for i, k := range idx[:n] {
		out[i] = ms[k]
	}
	return out
}

type decoder struct {
	data     []byte
	src      string // data as one string: unescaped strings are substrings of it
	pos      int
	depth    int
	maxDepth int
	intern   map[string]string // known keys, to share their strings
	members  []member          // scratch stack of the objects being decoded
	elems    []any             // scratch stack of the arrays being decoded
	spans    []int32           // when not nil, where the root's member values are
}

// decodeJSON parses data as exactly one JSON value. Nesting deeper than
// maxDepth (objects and arrays) fails with ErrTooDeep.
func decodeJSON(data []byte, maxDepth int) (any, error) {
	return decodeInterned(data, maxDepth, nil)
}

// decodeInterned is decodeJSON sharing the strings of object keys found
// in intern instead of allocating them.
func decodeInterned(data []byte, maxDepth int, intern map[string]string) (any, error) {
	d := decoderPool.Get().(*decoder)
	defer d.release()
	return d.decode(data, maxDepth, intern)
}

func (d *decoder) decode(data []byte, maxDepth int, intern map[string]string) (any, error) {
	d.data, d.src, d.maxDepth, d.intern = data, string(data), maxDepth, intern
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.errorf("unexpected data after the value")
	}
	return v, nil
}

// release returns d to the pool.
func (d *decoder) release() {
	// Objects and arrays clear their part of the stacks when they end;
	// after an error some may be left.
	clear(d.members)
	clear(d.elems)
	*d = decoder{members: d.members[:0], elems: d.elems[:0]}
	decoderPool.Put(d)
}

// decoderPool keeps decoders' scratch stacks between calls.
var decoderPool = sync.Pool{New: func() any { return new(decoder) }}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", errSyntax, d.pos, fmt.Sprintf(format, args...))
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.errorf("unexpected end of input")
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.string()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	default:
		return nil, d.errorf("unexpected character %q", c)
	}
}

func (d *decoder) literal(word string) error {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return d.errorf("invalid literal, want %s", word)
	}
	d.pos += len(word)
	return nil
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > d.maxDepth {
		return fmt.Errorf("%w: more than %d levels of nesting", ErrTooDeep, d.maxDepth)
	}
	return nil
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '{'
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return &object{}, nil
	}
	base := len(d.members)
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errorf("want a quoted object key")
		}
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf("want ':' after object key")
		}
		d.pos++
		d.skipSpace()
		start := d.pos
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		if d.spans != nil && d.depth == 1 {
			d.spans = append(d.spans, int32(start), int32(d.pos))
		}
		d.members = append(d.members, member{k, v})
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end of input in object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			ms := sortedCopy(d.members[base:])
			clear(d.members[base:])
			d.members = d.members[:base]
			return &object{m: ms}, nil
		default:
			return nil, d.errorf("want ',' or '}' in object")
		}
	}
}

// key decodes an object key, sharing the string of a known key.
func (d *decoder) key() (string, error) {
	if d.intern != nil {
		for i := d.pos + 1; i < len(d.data); i++ {
			c := d.data[i]
			if c == '"' {
				if k, ok := d.intern[string(d.data[d.pos+1:i])]; ok {
					d.pos = i + 1
					return k, nil
				}
				break
			}
			if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				break
			}
		}
	}
	v, err := d.string()
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '['
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return []any{}, nil
	}
	base := len(d.elems)
	for {
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.elems = append(d.elems, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unexpected end of input in array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.depth--
			a := slices.Clone(d.elems[base:])
			clear(d.elems[base:])
			d.elems = d.elems[:base]
			return a, nil
		default:
			return nil, d.errorf("want ',' or ']' in array")
		}
	}
}

func (d *decoder) number() (any, error) {
	start := d.pos
	p := d.pos
	if d.data[p] == '-' {
		p++
	}
	digits := func() int {
		n := 0
		for p < len(d.data) && d.data[p] >= '0' && d.data[p] <= '9' {
			p++
			n++
		}
		return n
	}
	if p < len(d.data) && d.data[p] == '0' {
		p++
	} else if digits() == 0 {
		d.pos = p
		return nil, d.errorf("invalid number")
	}
	if p < len(d.data) && d.data[p] == '.' {
		p++
		if digits() == 0 {
			d.pos = p
			return nil, d.errorf("invalid number: no digits after '.'")
		}
	}
	exp := false
	if p < len(d.data) && (d.data[p] == 'e' || d.data[p] == 'E') {
		exp = true
		p++
		if p < len(d.data) && (d.data[p] == '+' || d.data[p] == '-') {
			p++
		}
		if digits() == 0 {
			d.pos = p
			return nil, d.errorf("invalid number: no digits in exponent")
		}
	}
	lit := d.src[start:p]
	if exp || len(lit) > 308 {
		// Out of float64 range: most JSON readers (encoding/json among
		// them) cannot read it back, so refuse it here.
		if f, err := strconv.ParseFloat(lit, 64); err != nil && math.IsInf(f, 0) {
			d.pos = start
			return nil, d.errorf("number %.20s… out of range", lit)
		}
	}
	d.pos = p
	return json.Number(lit), nil
}

// string decodes a quoted string; it returns any so that the common case
// boxes once. Invalid UTF-8 becomes U+FFFD, as in encoding/json.
func (d *decoder) string() (any, error) {
	d.pos++ // opening quote
	start := d.pos
	// Fast path: no escapes, valid ASCII or UTF-8.
	for i := start; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			if !utf8.Valid(d.data[start:i]) {
				break
			}
			d.pos = i + 1
			return d.src[start:i], nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	buf := make([]byte, 0, 32)
	i := start
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return string(buf), nil
		case c < 0x20:
			d.pos = i
			return nil, d.errorf("control character in string")
		case c == '\\':
			if i+1 >= len(d.data) {
				d.pos = i
				return nil, d.errorf("unexpected end of input in string")
			}
			e := d.data[i+1]
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
				r, ok := hex4(d.data, i)
				if !ok {
					d.pos = i
					return nil, d.errorf("invalid \\u escape")
				}
				i += 4
				if utf16.IsSurrogate(r) {
					r2, ok := rune(-1), false
					if i+6 <= len(d.data) && d.data[i] == '\\' && d.data[i+1] == 'u' {
						r2, ok = hex4(d.data, i+2)
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
				d.pos = i - 1
				return nil, d.errorf("invalid escape '\\%c'", e)
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(d.data[i:])
			buf = utf8.AppendRune(buf, r)
			i += size
		}
	}
	d.pos = len(d.data)
	return nil, d.errorf("unexpected end of input in string")
}

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

// appendJSON appends the encoding of v to b: compact when indent is "",
// else one member per line, indented by indent per level (like
// json.MarshalIndent with an empty prefix). Object keys are sorted.
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
		return appendString(b, v)
	case json.Number:
		if v == "" {
			return append(b, '0')
		}
		return append(b, v...)
	case float64:
		return appendFloat(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case *object:
		if len(v.m) == 0 {
			return append(b, "{}"...)
		}
		b = append(b, '{')
		for i, e := range v.m {
			if i > 0 {
				b = append(b, ',')
			}
			b = newline(b, indent, level+1)
			b = appendString(b, e.key)
			b = append(b, ':')
			if indent != "" {
				b = append(b, ' ')
			}
			b = appendJSON(b, e.val, indent, level+1)
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

func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

const hexDigits = "0123456789abcdef"

// plain[c] is true for the ASCII bytes a JSON string holds as they are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a JSON string. It escapes what JSON requires
// and U+2028/U+2029; invalid UTF-8 becomes U+FFFD. HTML characters are
// left alone: the prompt is not HTML, and the block is fenced separately.
func appendString(b []byte, s string) []byte {
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
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// toGo returns v in the form encoding/json decodes to with UseNumber:
// objects become map[string]any. The result shares no map or slice with
// v.
func toGo(v any) any {
	switch v := v.(type) {
	case *object:
		m := make(map[string]any, len(v.m))
		for _, e := range v.m {
			m[e.key] = toGo(e.val)
		}
		return m
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = toGo(e)
		}
		return a
	default:
		return v
	}
}

// fromGo is the inverse of toGo: map[string]any becomes *object. The
// result shares no map or slice with v.
func fromGo(v any) any {
	switch v := v.(type) {
	case map[string]any:
		ms := make([]member, 0, len(v))
		for k, e := range v {
			ms = append(ms, member{k, fromGo(e)})
		}
		return &object{m: sortMembers(ms)}
	case []any:
		a := make([]any, len(v))
		for i, e := range v {
			a[i] = fromGo(e)
		}
		return a
	default:
		return v
	}
}

// normalize turns any Go value into the JSON types the scratchpad works
// with, by a JSON round trip when it is not already made of them. The
// result shares nothing with v.
func normalize(v any, maxDepth int) (any, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return decodeJSON(v, maxDepth)
	case []byte:
		return decodeJSON(v, maxDepth)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(b, maxDepth)
}

// sameValue reports whether a and b are the same value in the sense that
// matters for reusing work: the same object or array (states share
// unchanged subtrees), or equal scalars.
func sameValue(a, b any) bool {
	switch a := a.(type) {
	case *object:
		bo, ok := b.(*object)
		return ok && a == bo
	case []any:
		ba, ok := b.([]any)
		return ok && len(a) == len(ba) && (len(a) == 0 || &a[0] == &ba[0])
	case string:
		bs, ok := b.(string)
		return ok && a == bs
	case json.Number:
		bn, ok := b.(json.Number)
		return ok && a == bn
	case bool:
		bb, ok := b.(bool)
		return ok && a == bb
	case nil:
		return b == nil
	}
	return false
}

// isEmpty reports whether a state shows nothing: nil, "", or {}. Zero and
// false are values, not emptiness.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case *object:
		return len(v.m) == 0
	}
	return false
}
