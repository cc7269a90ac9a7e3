package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc"},
		{"abc", 0, ""},
		{"abc", -1, ""},
		{"aé", 2, "a"},  // é is two bytes: not split
		{"aé", 3, "aé"}, // fits
		{"日本", 4, "日"},
		{"日本", 2, ""},
	} {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Add(strings.Repeat("日", 10), 7)
	f.Fuzz(func(t *testing.T, s string, n int) {
		got := Prefix(s, n)
		if len(got) > max(n, 0) && got != s {
			t.Fatalf("Prefix(%q, %d) = %q: longer than %d", s, n, got, n)
		}
		if !strings.HasPrefix(s, got) {
			t.Fatalf("Prefix(%q, %d) = %q: not a prefix", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Prefix(%q, %d) = %q: splits a rune", s, n, got)
		}
		// The longest such prefix: one more rune would not fit.
		if rest := s[len(got):]; rest != "" && len(got) < n {
			_, size := utf8.DecodeRuneInString(rest)
			if len(got)+size <= n && utf8.ValidString(s) {
				t.Fatalf("Prefix(%q, %d) = %q: a longer prefix fits", s, n, got)
			}
		}
	})
}
