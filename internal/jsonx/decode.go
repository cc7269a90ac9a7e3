package jsonx

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

var (
	// ErrSyntax is the cause of every decoding failure of invalid JSON;
	// the message says where.
	ErrSyntax = errors.New("invalid JSON")
	// ErrTooDeep means a value nests deeper than the decoder's limit.
	ErrTooDeep = errors.New("jsonx: value nested too deeply")
)

type decoder struct {
	data     []byte
	src      string // data as one string: unescaped strings are substrings of it
	pos      int
	depth    int
	maxDepth int
	members  []Member // scratch stack of the objects being decoded
	elems    []any    // scratch stack of the arrays being decoded
}

// Decode parses data as exactly one JSON value into the tree form (see
// [Object]). Nesting deeper than maxDepth (objects and arrays) fails with
// [ErrTooDeep], anything else invalid with [ErrSyntax]. Of duplicate keys
// the last one wins. Strings may share data's memory: data must not change
// afterwards.
func Decode(data []byte, maxDepth int) (any, error) {
	d := decoderPool.Get().(*decoder)
	defer d.release()
	return d.decode(data, maxDepth)
}

func (d *decoder) decode(data []byte, maxDepth int) (any, error) {
	d.data, d.src, d.maxDepth = data, string(data), maxDepth
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
	return fmt.Errorf("%w at byte %d: %s", ErrSyntax, d.pos, fmt.Sprintf(format, args...))
}

func (d *decoder) skipSpace() { d.pos = skipSpace(d.data, d.pos) }

func (d *decoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.errorf("unexpected end of input")
	}
	c := d.data[d.pos]
	switch startKind[c] {
	case KindObject:
		return d.object()
	case KindArray:
		return d.array()
	case KindString:
		s, err := d.string()
		return s, err
	case KindNumber:
		return d.number()
	case KindBad:
		return nil, d.errorf("unexpected character %q", c)
	}
	lit := literals[c] // true, false or null
	return lit.value, d.literal(lit.word)
}

// literals are the words true, false and null by their first byte, and
// their values.
var literals = map[byte]struct {
	word  string
	value any
}{'t': {"true", true}, 'f': {"false", false}, 'n': {"null", nil}}

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
	empty, err := d.open('}')
	if err != nil {
		return nil, err
	}
	if empty {
		return &Object{}, nil
	}
	base := len(d.members)
	for done := false; !done; {
		if err := d.member(); err != nil {
			return nil, err
		}
		if done, err = d.next('}', "object"); err != nil {
			return nil, err
		}
	}
	ms := SortMembers(slices.Clone(d.members[base:]))
	clear(d.members[base:])
	d.members = d.members[:base]
	return &Object{Members: ms}, nil
}

// open enters the object or array whose opening bracket is at d.pos, and
// reports whether it is empty: closed (end) at once, and left.
func (d *decoder) open(end byte) (empty bool, err error) {
	if err := d.enter(); err != nil {
		return false, err
	}
	d.pos++ // '{' or '['
	d.skipSpace()
	if byteAt(d.data, d.pos, end) {
		d.pos++
		d.depth--
		return true, nil
	}
	return false, nil
}

// next reads what follows a member or element of an object or array
// (what) after white space: a ',' before the next, or the closing
// bracket end, which leaves the container (done).
func (d *decoder) next(end byte, what string) (done bool, err error) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return false, d.errorf("unexpected end of input in %s", what)
	}
	switch d.data[d.pos] {
	case ',':
		d.pos++
		return false, nil
	case end:
		d.pos++
		d.depth--
		return true, nil
	}
	return false, d.errorf("want ',' or '%c' in %s", end, what)
}

// member reads an object's member, key ':' value, onto d.members.
func (d *decoder) member() error {
	d.skipSpace()
	if !byteAt(d.data, d.pos, '"') {
		return d.errorf("want a quoted object key")
	}
	k, err := d.string()
	if err != nil {
		return err
	}
	d.skipSpace()
	if !byteAt(d.data, d.pos, ':') {
		return d.errorf("want ':' after object key")
	}
	d.pos++
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return err
	}
	d.members = append(d.members, Member{k, v})
	return nil
}

// plain returns the index just past the string opening at d.pos when
// the string is plain: closed, without escapes or control characters,
// valid UTF-8. It finds the end with the scanner's skipString.
func (d *decoder) plain() (int, bool) {
	end := skipString(d.data, d.pos)
	if end-d.pos < 2 || d.data[end-1] != '"' {
		return 0, false
	}
	body := d.data[d.pos+1 : end-1]
	for _, c := range body {
		if c == '\\' || c < 0x20 {
			return 0, false
		}
	}
	return end, utf8.Valid(body)
}

func (d *decoder) array() (any, error) {
	empty, err := d.open(']')
	if err != nil {
		return nil, err
	}
	if empty {
		return []any{}, nil
	}
	base := len(d.elems)
	for done := false; !done; {
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.elems = append(d.elems, v)
		if done, err = d.next(']', "array"); err != nil {
			return nil, err
		}
	}
	a := slices.Clone(d.elems[base:])
	clear(d.elems[base:])
	d.elems = d.elems[:base]
	return a, nil
}

func (d *decoder) number() (any, error) {
	start := d.pos
	p := d.pos
	for _, part := range numberParts {
		var bad string
		if p, bad = part(d.data, p); bad != "" {
			d.pos = p
			return nil, d.errorf("%s", bad)
		}
	}
	lit := d.src[start:p]
	if strings.ContainsAny(lit, "eE") || len(lit) > 308 {
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

// numberParts read the parts of a number in turn: each returns the index
// after its part of b from p, or where it went wrong and what.
var numberParts = []func(b []byte, p int) (int, string){numberInt, numberFrac, numberExp}

// numberInt reads a number's sign and integer part: 0, or digits not
// starting with 0.
func numberInt(b []byte, p int) (int, string) {
	if b[p] == '-' {
		p++
	}
	if p < len(b) && b[p] == '0' {
		return p + 1, ""
	}
	return nonEmpty(p, skipDigits(b, p), "invalid number")
}

// numberFrac reads a number's fraction, if any: '.' and digits.
func numberFrac(b []byte, p int) (int, string) {
	if p == len(b) || b[p] != '.' {
		return p, ""
	}
	return nonEmpty(p+1, skipDigits(b, p+1), "invalid number: no digits after '.'")
}

// numberExp reads a number's exponent, if any: 'e' or 'E', a sign maybe,
// and digits.
func numberExp(b []byte, p int) (int, string) {
	if p == len(b) || b[p] != 'e' && b[p] != 'E' {
		return p, ""
	}
	p++
	if p < len(b) && (b[p] == '+' || b[p] == '-') {
		p++
	}
	return nonEmpty(p, skipDigits(b, p), "invalid number: no digits in exponent")
}

// nonEmpty returns end when digits run from p to it, else p and bad.
func nonEmpty(p, end int, bad string) (int, string) {
	if end == p {
		return p, bad
	}
	return end, ""
}

// skipDigits returns the index of the first byte at or after b[p] that
// is not an ASCII digit.
func skipDigits(b []byte, p int) int {
	for p < len(b) && b[p] >= '0' && b[p] <= '9' {
		p++
	}
	return p
}

// string decodes a quoted string, a value or an object key. Invalid UTF-8
// becomes U+FFFD, as in encoding/json.
func (d *decoder) string() (string, error) {
	if end, ok := d.plain(); ok {
		s := d.src[d.pos+1 : end-1]
		d.pos = end
		return s, nil
	}
	d.pos++ // opening quote
	start := d.pos
	buf, end, bad := unescape(make([]byte, 0, 32), d.data[start:], true, nil)
	switch {
	case bad < 0 && end < len(d.data)-start:
		d.pos = start + end + 1
		return string(buf), nil
	case bad < 0:
		d.pos = len(d.data)
		return "", d.errorf("unexpected end of input in string")
	}
	d.pos = start + bad
	switch {
	case d.data[d.pos] != '\\':
		return "", d.errorf("control character in string")
	case d.pos+1 >= len(d.data):
		return "", d.errorf("unexpected end of input in string")
	case d.data[d.pos+1] == 'u':
		return "", d.errorf("invalid \\u escape")
	default:
		return "", d.errorf("invalid escape '\\%c'", d.data[d.pos+1])
	}
}
