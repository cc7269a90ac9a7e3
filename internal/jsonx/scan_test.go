package jsonx

import (
	"encoding/json"
	"strings"
	"testing"
)

// refSkip is the byte-by-byte definition of skipDepth: from d[i], depth
// containers deep and outside any string, the index just past the bracket
// that closes depth 0, or len(d).
func refSkip(d []byte, i, depth int) int {
	inStr, escaped := false, false
	for ; i < len(d); i++ {
		c := d[i]
		switch {
		case escaped:
			escaped = false
		case inStr && c == '\\':
			escaped = true
		case inStr:
			inStr = c != '"'
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(d)
}

// refSkipString is the byte-by-byte definition of skipString.
func refSkipString(d []byte, i int) int {
	for i++; i < len(d); i++ {
		switch d[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(d)
}

var skipSeeds = []string{
	`{}`, `[]`, `{"a":1}`, `{"a":"}"}`, `{"a":"\"}"}`, `{"a":"\\"}`, `{"a":"\\\"}"},"b":2}`,
	`[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]`, `{"k":[{"x":"[{"},{"y":"]}"}],"z":{"w":"\\\\"}}`,
	`{"long":"` + strings.Repeat("abc]}", 20) + `","n":[1,2,{"q":"` + strings.Repeat(`\"`, 9) + `"}]}tail`,
	`{"unterminated":"abc`, `{"a":[1,2`, `{"a":"x\`, "{\"\x02\":\"\x5b\x7b\"}", "[\"\x7d\x5d\x22\"]",
	benchDoc,
}

func checkSkip(t *testing.T, d []byte) {
	for i := range d {
		if c := d[i]; c == '{' || c == '[' {
			if got, want := skipContainer(d, i), refSkip(d, i, 0); got != want {
				t.Fatalf("skipContainer(%q, %d) = %d, want %d", d, i, got, want)
			}
		}
		if got, want := skipRest(d, i), refSkip(d, i, 1); got != want && !inString(d, i) {
			t.Fatalf("skipRest(%q, %d) = %d, want %d", d, i, got, want)
		}
		if d[i] == '"' {
			if got, want := skipString(d, i), refSkipString(d, i); got != want {
				t.Fatalf("skipString(%q, %d) = %d, want %d", d, i, got, want)
			}
		}
	}
}

// inString reports whether d[i] is inside a string of d read from its
// start, where skipRest is never called.
func inString(d []byte, i int) bool {
	in, esc := false, false
	for _, c := range d[:i] {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case in:
			in = c != '"'
		case c == '"':
			in = true
		}
	}
	return in
}

// The skipping scanners agree with their byte-by-byte definitions
// at every offset.
func TestSkipMatchesReference(t *testing.T) {
	for _, s := range skipSeeds {
		checkSkip(t, []byte(s))
	}
}

func FuzzSkip(f *testing.F) {
	for _, s := range skipSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkSkip(t, []byte(s))
	})
}

// BenchmarkSkipContainer skips the whole 2 KB bench result.
func BenchmarkSkipContainer(b *testing.B) {
	d := []byte(benchDoc)
	b.SetBytes(int64(len(d)))
	b.ReportAllocs()
	for b.Loop() {
		if skipContainer(d, 0) != len(d) {
			b.Fatal("not skipped")
		}
	}
}

// benchDoc is a tool result of about 2 KB: a page with nested sections.
var benchDoc = `{"page":{"id":"page-123","title":"About \\"Us\\"","sections":[` +
	strings.TrimSuffix(strings.Repeat(`{"id":"sec-1","type":"text","body":"`+strings.Repeat("words and more words ", 4)+`","items":[1,2.5,true,null]},`, 12), ",") +
	`],"tags":["a","b"],"version":7}}`

// The scanner decodes string escapes as encoding/json does: a lone or
// mismatched surrogate escape is U+FFFD and the escape after it is kept
// (the entity scanner used to swallow it).
func TestUnquoteSurrogatesAsEncodingJSON(t *testing.T) {
	for _, s := range []string{`"\udc00\u0041"`, `"\ud800\ud800"`, `"\ud83d\ude00"`, `"\ud800"`, `"a\u00e9\/"`} {
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		if got := Unquote([]byte(s)); got != want {
			t.Errorf("Unquote(%s) = %q, encoding/json %q", s, got, want)
		}
	}
}

// FuzzUnquoteOffsets holds UnquoteOffsets to encoding/json: on a valid
// string literal it decodes the same value, and maps each of its bytes to
// a place inside the literal, in order.
func FuzzUnquoteOffsets(f *testing.F) {
	for _, s := range []string{`a`, `a\nb`, `\u00e9\ud83d\ude00`, `\ud83d x`, `\ud83d\u0041`, "\xff\xfe", `\"\\\/\b\f\r\t`, "é€"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		lit := `"` + body + `"`
		var want string
		if json.Unmarshal([]byte(lit), &want) != nil {
			return
		}
		v, pos := UnquoteOffsets([]byte(lit))
		if string(v) != want {
			t.Fatalf("UnquoteOffsets(%q) = %q, encoding/json %q", lit, v, want)
		}
		if len(pos) != len(v)+1 || pos[len(pos)-1] != len(lit)-1 {
			t.Fatalf("UnquoteOffsets(%q): %d offsets for %d bytes, last %d", lit, len(pos), len(v), pos[len(pos)-1])
		}
		for i := 1; i < len(pos); i++ {
			if pos[i] < pos[i-1] || pos[i-1] < 1 {
				t.Fatalf("UnquoteOffsets(%q) = %v: not in order inside the literal", lit, pos)
			}
		}
	})
}

// FuzzNextMatchesDecoder holds Next to encoding/json's Decoder.Token: on
// valid JSON it returns the same tokens in the same order.
func FuzzNextMatchesDecoder(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x\n",true,null,{"b":-2.5e3}],"c":{}}`, `[]`, ` [ "\u00e9" , 0 ] `, `{"":""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		d := []byte(doc)
		if !json.Valid(d) {
			return
		}
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		for i := 0; ; {
			v, next := Next(d, i)
			tok, err := dec.Token()
			if err != nil {
				if v.Kind != KindBad {
					t.Fatalf("Next(%q, %d) = %q, the decoder ended", doc, i, v.Raw)
				}
				return
			}
			var got any
			switch v.Kind {
			case KindObject, KindArray, KindEnd:
				got = json.Delim(v.Raw[0])
			case KindString:
				got = string(UnquoteBytes(v.Raw))
			case KindNumber:
				got = json.Number(v.Raw)
			case KindBool:
				got = string(v.Raw) == "true"
			case KindNull:
				got = nil
			default:
				t.Fatalf("Next(%q, %d) = bad, the decoder has %v", doc, i, tok)
			}
			if got != tok {
				t.Fatalf("Next(%q, %d) = %q (%v), the decoder has %#v", doc, i, v.Raw, got, tok)
			}
			i = next
		}
	})
}
