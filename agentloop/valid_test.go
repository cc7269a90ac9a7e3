package agentloop

import (
	"encoding/json"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `{}`, ` { } `, `[]`, `[ ]`, `null`, `true`, `false`, `nul`, `truex`, `True`,
	`0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-12.34e56`, `+1`, `1x`,
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`, `"\x"`,
	"\"\x01\"", "\"\x7f\"", "\"\xff\xfe\"", `"unterminated`, `"\`,
	`{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":[1,{"b":null}],"c":"d"}`, `{"a":}`, `{,}`,
	`[1,2]`, `[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[[[]]`, `]`, `}`, `{}}`, `[] []`, "[\n1\t,\r2 ]",
	`{"x": [1, 2]} `, "\v{}", "{}\x00",
}

func TestValidJSON(t *testing.T) {
	for _, s := range validCases {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

// TestValidJSONDepth: the nesting limit is encoding/json's.
func TestValidJSONDepth(t *testing.T) {
	for _, n := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"k":`} {
			closing := "]"
			if open != "[" {
				closing = "}"
			}
			s := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(closing, n))
			if got, want := validJSON(s), json.Valid(s); got != want {
				t.Errorf("%d levels of %s: validJSON = %v, json.Valid = %v", n, open, got, want)
			}
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", data, got, want)
		}
	})
}

func BenchmarkValidJSON(b *testing.B) {
	data := []byte(`{"version":1,"name":"kv","entries":{"site":{"value":"acme.example","created_at":"2026-11-22T10:00:00Z","access_count":3}},"children":[{"name":"child","entries":null}],"n":-12.5e3,"ok":true}`)
	b.Run("validJSON", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if !validJSON(data) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if !json.Valid(data) {
				b.Fatal("invalid")
			}
		}
	})
}
