package storage_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memlayer/memlayer/storage"
)

// TestTrust22_QuoteShortensLongKey (issue 9, item 22): error messages
// quoted a whole 10 KB thread ID. storage.Quote keeps a short key as
// strconv.Quote does and cuts a long one to its first bytes plus its size.
func TestTrust22_QuoteShortensLongKey(t *testing.T) {
	long := strings.Repeat("t", 10<<10)
	tests := []struct{ in, want string }{
		{"", `""`},
		{"threads/t1/checkpoint", `"threads/t1/checkpoint"`},
		{"a\nb\x00", `"a\nb\x00"`},
		{strings.Repeat("x", 64), strconv.Quote(strings.Repeat("x", 64))},
		{strings.Repeat("x", 65), `"` + strings.Repeat("x", 64) + `"…(65 bytes)`},
		{long, `"` + strings.Repeat("t", 64) + `"…(10240 bytes)`},
		// The cut never splits a UTF-8 sequence: 63 bytes of 'x' and then
		// a 3-byte rune that would straddle byte 64.
		{strings.Repeat("x", 63) + "日本", `"` + strings.Repeat("x", 63) + `"…(69 bytes)`},
	}
	for _, tc := range tests {
		if got := storage.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.80q) = %.120s, want %s", tc.in, got, tc.want)
		}
	}
	// Invalid UTF-8 is still quoted, never passed raw.
	if got := storage.Quote(strings.Repeat("\xff", 100)); !utf8.ValidString(got) || len(got) > 300 {
		t.Errorf("Quote(100 x 0xff) = %.120q", got)
	}
	// The memory store quotes keys that way in its errors.
	m := storage.NewMemoryStore()
	key := storage.ThreadKey(strings.Repeat("u", 4000), "checkpoint")
	err := m.Delete(t.Context(), key, 7)
	if !errors.Is(err, storage.ErrNotFound) || len(err.Error()) > 200 || !strings.Contains(err.Error(), storage.Quote(key)) {
		t.Errorf("Delete error for a %d-byte key = %.300q (%d bytes), want ErrNotFound naming storage.Quote(key)", len(key), err, len(err.Error()))
	}
}

// FuzzQuote: a short string is quoted whole; a long one is a quoted
// prefix of 61 to 64 bytes that never splits a UTF-8 sequence of a valid
// string, followed by its size.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "k", strings.Repeat("x", 63) + "日本", strings.Repeat("\xff", 70), strings.Repeat("é", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := storage.Quote(s)
		if len(s) <= 64 {
			if got != strconv.Quote(s) {
				t.Fatalf("Quote(%q) = %s, want strconv.Quote", s, got)
			}
			return
		}
		head, tail, ok := strings.Cut(got, "…(")
		if !ok || tail != strconv.Itoa(len(s))+" bytes)" {
			t.Fatalf("Quote(%.80q) = %.200s: no size suffix", s, got)
		}
		prefix, err := strconv.Unquote(head)
		if err != nil || !strings.HasPrefix(s, prefix) || len(prefix) < 61 || len(prefix) > 64 {
			t.Fatalf("Quote(%.80q) = %.200s: head %q is not a 61-64 byte prefix (%v)", s, got, prefix, err)
		}
		if utf8.ValidString(s) && !utf8.ValidString(prefix) {
			t.Fatalf("Quote(%.80q) splits a UTF-8 sequence: %q", s, prefix)
		}
	})
}
