package history

import (
	"context"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/thread"
)

// FuzzSummaryParts splits arbitrary summaries into scored assembly's
// candidates and puts them back: no part is empty, every key is unique,
// the block of all the parts holds every part in order, the block of
// none is empty, and for a summary of the deterministic summarizer
// (entities line first, no blank line) the block of all the parts is the
// summary's whole block, byte for byte.
func FuzzSummaryParts(f *testing.F) {
	f.Add("Entities seen earlier: page_1 \"A\"; x\n- User: hi | f (call c) → page_2")
	f.Add("- User: a; b\n\n  \nEntities seen earlier: not first")
	f.Add("Entities seen earlier: ; ;\n")
	f.Fuzz(func(t *testing.T, text string) {
		l := &Layer{}
		l.text.Store(&text)
		parts := summaryParts(text)
		all := map[string]bool{}
		for _, p := range parts {
			if p.text == "" || all[p.key] {
				t.Fatalf("part %+v is empty or its key is taken", p)
			}
			all[p.key] = true
		}
		if b := l.RenderBlock(nil); b != "" {
			t.Fatalf("the block of no part is %q", b)
		}
		block := l.block(all)
		at := 0
		for _, p := range parts {
			i := strings.Index(block[at:], p.text)
			if i < 0 {
				t.Fatalf("part %q is not in the block after byte %d:\n%s", p.text, at, block)
			}
			at += i + len(p.text)
		}
		cs, err := l.Candidates(context.Background(), layer.Query{Text: text})
		if err != nil || len(cs) != len(parts) {
			t.Fatalf("%d candidates, %v; want %d", len(cs), err, len(parts))
		}
		for _, c := range cs {
			if !(c.Similarity >= 0 && c.Similarity <= 1) || c.Tokens <= 0 {
				t.Fatalf("candidate %+v", c)
			}
		}
		s := &DeterministicSummarizer{MaxTokens: 60}
		sum, err := s.Summarize(context.Background(), "", []thread.Message{
			{Role: thread.RoleUser, Text: text},
			{Role: thread.RoleAssistant, Text: "done"},
			{Role: thread.RoleUser, Text: "again " + text},
			{Role: thread.RoleAssistant, Text: "done again"},
		})
		if err != nil {
			t.Fatal(err)
		}
		l.text.Store(&sum)
		all2, err := l.Candidates(context.Background(), layer.Query{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := l.RenderBlock(all2), l.Whole(); got != want {
			t.Fatalf("the block of every part:\n%q\nthe whole summary:\n%q", got, want)
		}
	})
}
