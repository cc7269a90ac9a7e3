package entitymemory

import (
	"strings"
	"testing"
)

func TestNormKey(t *testing.T) {
	long := strings.Repeat("Ab_", 40)
	for _, tt := range []struct{ in, want string }{
		{"page_id", "pageid"}, {"pageId", "pageid"}, {"Page ID", "pageid"}, {"__typename", "typename"},
		{"sys-Type", "systype"}, {"", ""}, {"___", ""}, {"id\x00", "id\x00"}, {"Ü", "Ü"}, {"ZZ9", "zz9"},
		{long, strings.Repeat("ab", 40)},
	} {
		var buf [64]byte
		if got := string(normKey(buf[:0], []byte(tt.in))); got != tt.want {
			t.Errorf("normKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
