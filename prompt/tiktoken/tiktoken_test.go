package tiktoken_test

import (
	"testing"

	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/tiktoken"
)

// TestPlain08_ExactCounter: known strings count what OpenAI's tiktoken
// counts, offline, and the counter is not the default estimate.
func TestPlain08_ExactCounter(t *testing.T) {
	for _, tt := range []struct {
		name string
		new  func() (prompt.Counter, error)
		text string
		want int
	}{
		{"cl100k", func() (prompt.Counter, error) { return tiktoken.New("cl100k_base") }, "tiktoken is great!", 6},
		{"gpt-4o", func() (prompt.Counter, error) { return tiktoken.ForModel("gpt-4o") }, "hello world", 2},
		{"special as text", func() (prompt.Counter, error) { return tiktoken.New("cl100k_base") }, "<|endoftext|>", 7},
	} {
		c, err := tt.new()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := c.Count(tt.text); got != tt.want {
			t.Errorf("%s: Count(%q) = %d, want %d", tt.name, tt.text, got, tt.want)
		}
	}
	if _, err := tiktoken.ForModel("no-such-model"); err == nil {
		t.Error("ForModel(no-such-model): no error")
	}
	if _, err := tiktoken.New("no-such-encoding"); err == nil {
		t.Error("New(no-such-encoding): no error")
	}
}
