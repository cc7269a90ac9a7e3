package storage_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memlayer/memlayer/storage"
)

func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "%"},
		{"abc", "abc"},
		{"thread-1_A.b", "thread-1_A.b"},
		{".", "%2E"},
		{"..", "%2E%2E"},
		{"...", "%2E%2E%2E"},
		{"a..b", "a..b"},
		{"../x", "..%2Fx"},
		{"a/b", "a%2Fb"},
		{"/", "%2F"},
		{"%", "%25"},
		{"%2F", "%252F"},
		{"a b", "a%20b"},
		{"\x00", "%00"},
		{"a\nb", "a%0Ab"},
		{"é", "%C3%A9"},
		{"*?[]\\", "%2A%3F%5B%5D%5C"},
		{"\xff", "%FF"},
	}
	for _, tc := range tests {
		got := storage.Escape(tc.in)
		if got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		back, err := storage.Unescape(got)
		if err != nil || back != tc.in {
			t.Errorf("Unescape(%q) = %q, %v; want %q", got, back, err, tc.in)
		}
	}
}

func TestUnescapeRejects(t *testing.T) {
	// None of these is an output of Escape.
	for _, in := range []string{
		"", "%%", "%2", "a%", "a%G0", "%2f", "a%41", ".", "..", "%2E.", "a/b", "a b", "é", "%2D", "\x00",
	} {
		got, err := storage.Unescape(in)
		if !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Unescape(%q) = %q, %v; want an error that is storage.ErrInvalidKey", in, got, err)
		}
	}
}

func TestKeyLayout(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"layer key", storage.LayerKey("working-memory", "thread-1", "state"), "layers/working-memory/thread-1/state"},
		{"layer prefix", storage.LayerPrefix("entities", "r1"), "layers/entities/r1/"},
		{"thread key", storage.ThreadKey("t1", "checkpoint"), "threads/t1/checkpoint"},
		{"thread prefix", storage.ThreadPrefix("t1"), "threads/t1/"},
		{"escaped scope", storage.LayerKey("wm", "../other", "state"), "layers/wm/..%2Fother/state"},
		{"empty scope", storage.LayerKey("wm", "", "state"), "layers/wm/%/state"},
		{"dot name", storage.LayerKey("wm", "t", ".."), "layers/wm/t/%2E%2E"},
		{"escaped thread", storage.ThreadKey("a/b", "c"), "threads/a%2Fb/c"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestValidateKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"layers/wm/t/state", true},
		{"new\nline", true},
		{"日本", true},
		{strings.Repeat("k", storage.MaxKeyLen), true},
		{"", false},
		{"\x00", false},
		{"a\x00", false},
		{"\xff", false},
		{strings.Repeat("k", storage.MaxKeyLen+1), false},
	}
	for _, tc := range tests {
		err := storage.ValidateKey(tc.key)
		if tc.ok && err != nil {
			t.Errorf("ValidateKey(%.20q) = %v, want nil", tc.key, err)
		}
		if !tc.ok && !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("ValidateKey(%.20q) = %v, want storage.ErrInvalidKey", tc.key, err)
		}
	}
}

// checkEscaped asserts the properties every escaped part has.
func checkEscaped(t *testing.T, in, esc string) {
	t.Helper()
	if esc == "" || esc == "." || esc == ".." {
		t.Fatalf("Escape(%q) = %q, a forbidden part", in, esc)
	}
	for i := 0; i < len(esc); i++ {
		if c := esc[i]; c <= ' ' || c >= 0x7f || c == '/' {
			t.Fatalf("Escape(%q) = %q holds byte %#x", in, esc, c)
		}
	}
	back, err := storage.Unescape(esc)
	if err != nil {
		t.Fatalf("Unescape(Escape(%q)) failed: %v", in, err)
	}
	if back != in {
		t.Fatalf("Unescape(Escape(%q)) = %q", in, back)
	}
}

func FuzzEscape(f *testing.F) {
	seeds := [][2]string{
		{"", "%"}, {".", ".."}, {"a/b", "a%2Fb"}, {"%", "%25"}, {"\x00", "\n"},
		{"日本", "\xff"}, {"thread-1", "thread-1 "}, {"..", "%2E%2E"}, {"a", "A"},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, eb := storage.Escape(a), storage.Escape(b)
		checkEscaped(t, a, ea)
		checkEscaped(t, b, eb)
		// Injective: different parts never share an escaped form.
		if (a == b) != (ea == eb) {
			t.Fatalf("Escape(%q) = %q and Escape(%q) = %q", a, ea, b, eb)
		}
		// A key splits back into exactly its parts.
		key := storage.LayerKey(a, b, a+b)
		if err := storage.ValidateKey(key); err != nil && len(key) <= storage.MaxKeyLen {
			t.Fatalf("LayerKey(%q, %q, ...) = %q is invalid: %v", a, b, key, err)
		}
		parts := strings.Split(key, "/")
		if len(parts) != 4 || parts[0] != "layers" {
			t.Fatalf("LayerKey(%q, %q, ...) = %q splits into %q", a, b, key, parts)
		}
		for i, want := range []string{a, b, a + b} {
			got, err := storage.Unescape(parts[i+1])
			if err != nil || got != want {
				t.Fatalf("part %d of %q unescapes to %q, %v; want %q", i+1, key, got, err, want)
			}
		}
		if !strings.HasPrefix(key, storage.LayerPrefix(a, b)) {
			t.Fatalf("LayerKey %q lacks its LayerPrefix %q", key, storage.LayerPrefix(a, b))
		}
		// A different scope's prefix never matches this key.
		if a != b && strings.HasPrefix(key, storage.LayerPrefix(a, a)) {
			t.Fatalf("key %q of scope %q matches the prefix of scope %q", key, b, a)
		}
		tk := storage.ThreadKey(a, b)
		if tp := storage.ThreadPrefix(b); a != b && strings.HasPrefix(tk, tp) {
			t.Fatalf("thread key %q matches the prefix %q of thread %q", tk, tp, b)
		}
	})
}

func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"", "%", "%%", "%2F", "%2f", "a%41", "%2E%2E", "..", "abc", "%C3%A9", "%FF"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := storage.Unescape(s)
		if err != nil {
			if !errors.Is(err, storage.ErrInvalidKey) {
				t.Fatalf("Unescape(%q) error %v is not storage.ErrInvalidKey", s, err)
			}
			return
		}
		// Whatever Unescape accepts is the one escaped form of its result.
		if esc := storage.Escape(got); esc != s {
			t.Fatalf("Unescape(%q) = %q, but Escape(%q) = %q", s, got, got, esc)
		}
		if !utf8.ValidString(s) {
			t.Fatalf("Unescape accepted invalid UTF-8 %q", s)
		}
	})
}

// TestResourceKeysApart: a resource's records never fall under another
// resource's prefix, whatever the IDs (nested, sharing a prefix, empty,
// equal to a record's name).
func TestResourceKeysApart(t *testing.T) {
	ids := []string{"", "a", "a/b", "ab", "a%2Fb", "threads", "..", "a/threads"}
	for _, x := range ids {
		for _, y := range ids {
			key := storage.ResourceKey(y, "threads")
			if under := strings.HasPrefix(key, storage.ResourcePrefix(x)); under != (x == y) {
				t.Errorf("ResourceKey(%q) under ResourcePrefix(%q): %v", y, x, under)
			}
		}
	}
}
