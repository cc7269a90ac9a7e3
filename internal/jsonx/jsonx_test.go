package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"unicode/utf8"
)

// reference decodes data as encoding/json does with UseNumber.
func reference(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

var seeds = []string{
	`{}`, `[]`, `null`, `true`, `false`, `0`, `-0.5e+3`, `"a\u00e9\ud83d\ude00\n"`,
	`{"a":1,"a":2}`, `{"b":{"x":1},"a":[1,{"c":null}],"b":{"y":2}}`,
	`{"k":"\ud800","l":"\udc00\u0041","m":"\ud800\ud800"}`, "\"\xff\xfe\"",
	` [1 , 2 ] `, `{"a":1}x`, `{"a" 1}`, `[1,]`, `01`, `1e400`, `"\x"`, "\"\x01\"",
	`{"z":1,"y":2,"x":3,"w":4,"v":5,"u":6,"t":7,"s":8,"r":9,"q":10,"y":11}`,
}

// FuzzDecodeMatchesEncodingJSON holds Decode to encoding/json: valid JSON
// decodes to what encoding/json decodes (UseNumber; of duplicate keys the
// last wins), and encodes back to JSON that decodes to the same; invalid
// JSON fails. The one refusal of valid JSON is a number out of float64
// range, which encoding/json cannot read into a float64 either.
func FuzzDecodeMatchesEncodingJSON(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data, 10000)
		if !json.Valid(data) {
			if err == nil {
				t.Fatalf("Decode(%q) accepted invalid JSON", data)
			}
			return
		}
		if err != nil {
			var f any
			if json.Unmarshal(data, &f) == nil || !errors.Is(err, ErrSyntax) {
				t.Fatalf("Decode(%q) refused valid JSON: %v", data, err)
			}
			return
		}
		want, err := reference(data)
		if err != nil {
			t.Fatalf("encoding/json refused %q: %v", data, err)
		}
		if !reflect.DeepEqual(ToGo(got), want) {
			t.Fatalf("Decode(%q) = %#v, encoding/json: %#v", data, ToGo(got), want)
		}
		for _, indent := range []string{"", "  "} {
			enc := Append(nil, got, indent)
			back, err := reference(enc)
			if err != nil || !reflect.DeepEqual(back, want) {
				t.Fatalf("Append(Decode(%q), %q) = %s: decodes to %#v (%v)", data, indent, enc, back, err)
			}
		}
	})
}

// Of duplicate keys the last one wins, at every depth and object size.
func TestDecodeLastDuplicateWins(t *testing.T) {
	for _, s := range []string{`{"a":1,"b":2,"a":3}`, `{"o":{"a":1,"a":[2]}}`, seeds[len(seeds)-1]} {
		got, err := Decode([]byte(s), 16)
		if err != nil {
			t.Fatalf("Decode(%s): %v", s, err)
		}
		want, _ := reference([]byte(s))
		if !reflect.DeepEqual(ToGo(got), want) {
			t.Errorf("Decode(%s) = %v, want %v", s, ToGo(got), want)
		}
	}
}

// Nesting past the limit fails with ErrTooDeep.
func TestDecodeTooDeep(t *testing.T) {
	if _, err := Decode([]byte(`[[[1]]]`), 2); !errors.Is(err, ErrTooDeep) {
		t.Fatalf("Decode at depth 3 with limit 2: %v, want ErrTooDeep", err)
	}
	if _, err := Decode([]byte(`[[1]]`), 2); err != nil {
		t.Fatalf("Decode at depth 2 with limit 2: %v", err)
	}
}

// FuzzScanMatchesDecode holds the forgiving scanner to the decoder on
// valid JSON: the same kind of value, the same members of an object (the
// last of duplicate keys wins) and elements of an array, the same text of
// every string.
func FuzzScanMatchesDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(benchDoc))
	f.Fuzz(func(t *testing.T, data []byte) {
		want, err := Decode(data, 10000)
		if err != nil || !json.Valid(data) {
			return
		}
		v, _ := ScanValue(data, 0)
		sameScan(t, v, want)
	})
}

func sameScan(t *testing.T, v Value, want any) {
	t.Helper()
	switch w := want.(type) {
	case *Object:
		if v.Kind != KindObject {
			t.Fatalf("%s: kind %d, want an object", v.Raw, v.Kind)
		}
		fs := v.Fields(nil)
		if len(w.Members) > maxFields || bytes.IndexByte(v.Raw, '\\') >= 0 || !utf8.Valid(v.Raw) {
			return // only maxFields are returned; keys are compared as written
		}
		if len(fs) != len(w.Members) {
			t.Fatalf("%s: %d fields, want %d", v.Raw, len(fs), len(w.Members))
		}
		for _, f := range fs {
			wv, ok := w.Get(string(f.Key))
			if !ok {
				t.Fatalf("%s: field %q not decoded", v.Raw, f.Key)
			}
			sameScan(t, f.Value, wv)
		}
	case []any:
		if v.Kind != KindArray {
			t.Fatalf("%s: kind %d, want an array", v.Raw, v.Kind)
		}
		n := 0
		v.Elems(func(e Value) bool {
			sameScan(t, e, w[n])
			n++
			return true
		})
		if n != min(len(w), maxElems) {
			t.Fatalf("%s: %d elements, want %d", v.Raw, n, min(len(w), maxElems))
		}
	case string:
		if v.Kind != KindString {
			t.Fatalf("%s: kind %d, want a string", v.Raw, v.Kind)
		}
		if got := string(UnquoteBytes(v.Raw)); got != w {
			t.Fatalf("%s: unquoted %q, decoded %q", v.Raw, got, w)
		}
	case json.Number:
		if v.Kind != KindNumber || string(v.Raw) != string(w) {
			t.Fatalf("%s: kind %d, want the number %s", v.Raw, v.Kind, w)
		}
	case bool:
		if v.Kind != KindBool || v.Empty() == w {
			t.Fatalf("%s: kind %d, want %v", v.Raw, v.Kind, w)
		}
	case nil:
		if v.Kind != KindNull {
			t.Fatalf("%s: kind %d, want null", v.Raw, v.Kind)
		}
	}
}

// AppendString escapes what JSON requires, U+2028 and U+2029, and writes
// invalid UTF-8 as U+FFFD; everything else, HTML characters included, is
// written as it is.
func TestAppendStringEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"":                            `""`,
		"plain <b>&</b> é €":          `"plain <b>&</b> é €"`,
		"q\"b\\n\nr\rt\t\x01\x1f\x7f": `"q\"b\\n\nr\rt\t\u0001\u001f` + "\x7f\"",
		"a\u2028b\u2029c":             `"a\u2028b\u2029c"`,
		"x\xffy\xe2\x82":              `"x\ufffdy\ufffd\ufffd"`,
	} {
		if got := string(AppendString(nil, in)); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", in, got, want)
		}
	}
}
