package jsonx

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
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
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		s, err := d.string()
		return s, err
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
		return &Object{}, nil
	}
	base := len(d.members)
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, d.errorf("want a quoted object key")
		}
		k, err := d.string()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf("want ':' after object key")
		}
		d.pos++
		d.skipSpace()
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		d.members = append(d.members, Member{k, v})
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
			ms := SortMembers(slices.Clone(d.members[base:]))
			clear(d.members[base:])
			d.members = d.members[:base]
			return &Object{Members: ms}, nil
		default:
			return nil, d.errorf("want ',' or '}' in object")
		}
	}
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
