package jsonx

import (
	"bytes"
	"encoding/binary"
	"math/bits"
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
// starts none).
const (
	KindBad Kind = iota
	KindNull
	KindBool
	KindNumber
	KindString
	KindObject
	KindArray
)

// Value is one JSON value as a span of the input: strings keep their quotes,
// objects and arrays their brackets (the closing one may be missing when the
// input was cut).
type Value struct {
	Raw  []byte
	Kind Kind
	doc  *Tape // the index the value is in; nil when not indexed
	t    int32 // the value's token in doc
}

// Field is one member of an object: its key with the quotes removed
// (escapes left as they are: keys that matter never have any) and value.
// An object's fields hold each key once: when a key appears more than
// once, the last member wins, as in encoding/json (see lastWins).
type Field struct {
	Key   []byte
	Value Value
}

// maxFields bounds how many members of one object, and maxElems how many
// elements of one array, are indexed; the rest is skipped.
const (
	maxFields = 256
	maxElems  = 64
)

// skipString returns the index just past the string whose opening quote is
// at d[i], or len(d) when it is not closed. A backslash escapes the byte
// after it.
//
// Most strings are short (keys, IDs, names): their first 16 bytes are read
// eight at a time, one load and a few word operations finding the first
// quote or backslash in the word (the "has zero byte" test, whose lowest
// flag is exact). A longer string is searched for its closing quote with
// bytes.IndexByte, which uses vector instructions, and a quote preceded by
// an odd number of backslashes is skipped.
func skipString(d []byte, i int) int {
	i++
	for n := 0; n < 2 && i+8 <= len(d); n++ {
		w := binary.LittleEndian.Uint64(d[i:])
		if m := zeroBytes(w^('"'*swarLo)) | zeroBytes(w^('\\'*swarLo)); m != 0 {
			i += bits.TrailingZeros64(m) >> 3
			if d[i] == '"' {
				return i + 1
			}
			return skipEscaped(d, i)
		}
		i += 8
	}
	return skipEscaped(d, i)
}

// skipEscaped is skipString from d[i], inside the string.
func skipEscaped(d []byte, i int) int {
	for {
		k := bytes.IndexByte(d[i:], '"')
		if k < 0 {
			return len(d)
		}
		j := i + k
		// An odd number of backslashes before the quote escapes it.
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

const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// zeroBytes flags (with its high bit) the zero bytes of w; only the
// lowest flag is sure to be exact (a borrow may flag bytes above it).
func zeroBytes(w uint64) uint64 { return (w - swarLo) &^ w & swarHi }

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
	start := i
	switch c := d[i]; {
	case c == '"':
		i = skipString(d, i)
		return Value{Raw: d[start:i], Kind: KindString}, i
	case c == '{' || c == '[':
		i = skipContainer(d, i)
		k := KindObject
		if c == '[' {
			k = KindArray
		}
		return Value{Raw: d[start:i], Kind: k}, i
	case c == 't' || c == 'f':
		for i < len(d) && d[i] >= 'a' && d[i] <= 'z' {
			i++
		}
		return Value{Raw: d[start:i], Kind: KindBool}, i
	case c == 'n':
		for i < len(d) && d[i] >= 'a' && d[i] <= 'z' {
			i++
		}
		return Value{Raw: d[start:i], Kind: KindNull}, i
	case c == '-' || c >= '0' && c <= '9':
		for i < len(d) && (d[i] == '-' || d[i] == '+' || d[i] == '.' || d[i] == 'e' || d[i] == 'E' || d[i] >= '0' && d[i] <= '9') {
			i++
		}
		return Value{Raw: d[start:i], Kind: KindNumber}, i
	default:
		return Value{}, len(d)
	}
}

// fields indexes the members of an object value into buf.
func (v Value) Fields(buf []Field) []Field {
	buf = buf[:0]
	if v.Kind != KindObject {
		return buf
	}
	if v.doc != nil && v.doc.toks[v.t].indexed {
		return v.doc.fields(v.t, buf)
	}
	d := v.Raw
	i := 1
	for len(buf) < maxFields {
		i = skipSpace(d, i)
		if i >= len(d) || d[i] != '"' {
			break // '}' or malformed: stop
		}
		end := skipString(d, i)
		if end > len(d) || end-i < 2 {
			break
		}
		key := d[i+1 : end-1]
		i = skipSpace(d, end)
		if i >= len(d) || d[i] != ':' {
			break
		}
		var val Value
		val, i = ScanValue(d, i+1)
		if val.Kind == KindBad {
			break
		}
		buf = append(buf, Field{Key: key, Value: val})
		i = skipSpace(d, i)
		if i >= len(d) || d[i] != ',' {
			break
		}
		i++
	}
	return lastWins(buf)
}

// lastWins removes the members of fs whose key appears again later, so
// that the last one wins, as in encoding/json; the others keep their
// order. Keys are compared as written (escapes included). Objects on the
// Tape had this done once, when it was built (see Tape.shadow).
func lastWins(fs []Field) []Field {
	var sb [maxFields]bool
	shadowed := sb[:len(fs)]
	var dup bool
	if len(fs) > dupScanMax {
		keys := make([][]byte, len(fs))
		for i := range fs {
			keys[i] = fs[i].Key
		}
		dup = repeatedMap(keys, shadowed)
	} else {
		var d dupScan
		for j := range fs {
			if d.add(j, fs[j].Key) {
				for i := range j {
					if d.same(i) && string(fs[i].Key) == string(fs[j].Key) {
						shadowed[i], dup = true, true
					}
				}
			}
		}
	}
	if !dup {
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

// dupScanMax is the most members a dupScan handles; larger objects use
// repeatedMap.
const dupScanMax = 64

// dupScan finds repeated keys among up to dupScanMax members. A filter of
// 256 bits on a hash of each key's length and first, middle and last
// bytes lets most objects through without comparing keys; a repeated
// hash costs a scan of the hashes seen so far.
type dupScan struct {
	filter [4]uint64
	hashes [dupScanMax]uint8
	h      uint8 // the hash of the key just added
}

// add records key as member j and reports whether an earlier member may
// have the same Key: then the caller compares the keys of the members i
// < j for which same(i) holds.
func (d *dupScan) add(j int, key []byte) bool {
	h := uint32(len(key)) * 0x9e
	if len(key) > 0 {
		h += uint32(key[0])*31 + uint32(key[len(key)/2])*7 + uint32(key[len(key)-1])*131
	}
	d.h = uint8(h ^ h>>8)
	d.hashes[j] = d.h
	bit := uint64(1) << (d.h & 63)
	if d.filter[d.h>>6]&bit == 0 {
		d.filter[d.h>>6] |= bit
		return false
	}
	return true
}

func (d *dupScan) same(i int) bool { return d.hashes[i] == d.h }

// repeatedMap sets shadowed[i] when keys[i] appears again later in keys
// and reports whether any does.
func repeatedMap(keys [][]byte, shadowed []bool) bool {
	last := make(map[string]int, len(keys))
	dup := false
	for j, k := range keys {
		if i, ok := last[string(k)]; ok {
			shadowed[i], dup = true, true
		}
		last[string(k)] = j
	}
	return dup
}

// elems calls fn for up to maxElems elements of an array value, stopping
// early when fn returns false.
func (v Value) Elems(fn func(Value) bool) {
	if v.Kind != KindArray {
		return
	}
	if v.doc != nil && v.doc.toks[v.t].indexed {
		v.doc.elems(v.t, fn)
		return
	}
	d := v.Raw
	i := 1
	for n := 0; n < maxElems; n++ {
		i = skipSpace(d, i)
		if i >= len(d) || d[i] == ']' {
			return
		}
		var e Value
		e, i = ScanValue(d, i)
		if e.Kind == KindBad || !fn(e) {
			return
		}
		i = skipSpace(d, i)
		if i >= len(d) || d[i] != ',' {
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
	out, _, _ := unescape(make([]byte, 0, len(s)), s, false)
	return out
}

// Tape is an index of a document built in one pass: one token per value,
// in document order, each knowing where its subtree ends. Objects hold
// their members as key and value tokens, arrays their elements. With it,
// visiting an object does not scan its bytes again. Containers deeper than
// tapeDepth, and everything past maxToks tokens, are left unindexed and
// scanned on demand.
type Tape struct {
	d    []byte
	toks []tok
}

type tok struct {
	start, end int32
	next       int32 // the token after this value's subtree
	Kind       Kind
	indexed    bool // a container whose children follow
	shadowed   bool // a key whose member a later one with the same key overrides
}

const (
	// tapeDepth 2 indexes the top-level value and its children (the
	// {page: {...}} of a typical result, and the members of that page)
	// and skips what lies deeper. Indexing a third level cost more than
	// it saved: the walk stops at the first level holding entities,
	// so the members of deeper objects were indexed for nothing.
	tapeDepth = 2
	maxToks   = 8192
)

// build indexes d and returns its top-level value.
func (tp *Tape) Build(d []byte) Value {
	tp.d, tp.toks = d, tp.toks[:0]
	tp.value(skipSpace(d, 0), 0)
	if len(tp.toks) == 0 {
		return Value{}
	}
	return tp.val(0)
}

// Release drops the tape's reference to its document and reports whether
// the tape is worth keeping for reuse (its index is not oversized).
func (tp *Tape) Release() bool {
	tp.d = nil
	return cap(tp.toks) <= 1024
}

func (tp *Tape) val(t int32) Value {
	k := tp.toks[t]
	return Value{Raw: tp.d[k.start:k.end], Kind: k.Kind, doc: tp, t: t}
}

// value indexes the value at d[i] and returns the index past it.
func (tp *Tape) value(i, depth int) int {
	d := tp.d
	i = skipSpace(d, i)
	idx := len(tp.toks)
	tp.toks = append(tp.toks, tok{start: int32(min(i, len(d)))})
	var k Kind
	indexed := false
	switch {
	case i >= len(d):
		i = len(d)
	case d[i] == '{' || d[i] == '[':
		k = KindObject
		if d[i] == '[' {
			k = KindArray
		}
		if depth >= tapeDepth || len(tp.toks) >= maxToks {
			i = skipContainer(d, i)
			break
		}
		indexed = true
		i = tp.children(i, depth, k == KindObject)
		if k == KindObject {
			tp.shadow(int32(idx))
		}
	default:
		var v Value
		v, i = ScanValue(d, i)
		k = v.Kind
	}
	tp.toks[idx].end = int32(i)
	tp.toks[idx].Kind = k
	tp.toks[idx].indexed = indexed
	tp.toks[idx].next = int32(len(tp.toks))
	return i
}

// children indexes the members or elements of the container opening at
// d[i] and returns the index past its end.
func (tp *Tape) children(i, depth int, object bool) int {
	d := tp.d
	closer := byte(']')
	if object {
		closer = '}'
	}
	i++
	for {
		i = skipSpace(d, i)
		if i >= len(d) {
			return len(d)
		}
		if d[i] == closer {
			return i + 1
		}
		if len(tp.toks) >= maxToks {
			return skipRest(d, i)
		}
		if object {
			if d[i] != '"' {
				return skipRest(d, i)
			}
			end := skipString(d, i)
			tp.toks = append(tp.toks, tok{start: int32(i), end: int32(end), next: int32(len(tp.toks) + 1), Kind: KindString})
			i = skipSpace(d, end)
			if i >= len(d) || d[i] != ':' {
				tp.toks = tp.toks[:len(tp.toks)-1]
				return skipRest(d, i)
			}
			i++
		}
		i = tp.value(i, depth+1)
		i = skipSpace(d, i)
		if i < len(d) && d[i] == ',' {
			i++
			continue
		}
		if i < len(d) && d[i] == closer {
			return i + 1
		}
		return skipRest(d, i)
	}
}

// shadow marks the keys of the object at token t (just indexed) that a
// later member with the same key overrides, as lastWins does for
// fields.
func (tp *Tape) shadow(t int32) {
	end := int32(len(tp.toks))
	var d dupScan
	var idx [dupScanMax]int32
	n := 0
	for j := t + 1; j+1 < end; j = tp.toks[j+1].next {
		if n == dupScanMax {
			tp.shadowMany(t, end)
			return
		}
		key := tp.key(j)
		idx[n] = j
		if d.add(n, key) {
			for i := range n {
				if d.same(i) && string(tp.key(idx[i])) == string(key) {
					tp.toks[idx[i]].shadowed = true
				}
			}
		}
		n++
	}
}

// shadowMany is shadow for objects of more than dupScanMax members.
func (tp *Tape) shadowMany(t, end int32) {
	var keys [][]byte
	var toks []int32
	for j := t + 1; j+1 < end; j = tp.toks[j+1].next {
		keys, toks = append(keys, tp.key(j)), append(toks, j)
	}
	shadowed := make([]bool, len(keys))
	repeatedMap(keys, shadowed)
	for i, j := range toks {
		tp.toks[j].shadowed = shadowed[i]
	}
}

// key returns the key of key token j, without its quotes.
func (tp *Tape) key(j int32) []byte {
	k := tp.toks[j]
	if k.end-k.start < 2 {
		return nil
	}
	return tp.d[k.start+1 : k.end-1]
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

func (tp *Tape) fields(t int32, buf []Field) []Field {
	end := tp.toks[t].next
	for j := t + 1; j+1 < end && len(buf) < maxFields; {
		key := tp.toks[j]
		if key.end-key.start < 2 {
			break
		}
		if !key.shadowed {
			buf = append(buf, Field{Key: tp.d[key.start+1 : key.end-1], Value: tp.val(j + 1)})
		}
		j = tp.toks[j+1].next
	}
	return buf
}

func (tp *Tape) elems(t int32, fn func(Value) bool) {
	end := tp.toks[t].next
	for j, n := t+1, 0; j < end && n < maxElems; n++ {
		if !fn(tp.val(j)) {
			return
		}
		j = tp.toks[j].next
	}
}
