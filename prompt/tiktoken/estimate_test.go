package tiktoken_test

import (
	"os"
	"testing"

	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/tiktoken"
)

// TestEstimateError measures the default estimate against the exact
// counts of cl100k_base and o200k_base, on Markdown, Go and JSON of this
// repository cut into chunks of about 1500 bytes. The estimate must
// over-count each kind in total; the ratios are logged for BENCHMARKS.md.
func TestEstimateError(t *testing.T) {
	for _, src := range []struct{ kind, path string }{
		{"Markdown", "../../RELIABILITY.md"},
		{"Go", "../compile.go"},
		{"JSON", "../../testdata/conversations/cms50.json"},
	} {
		b, err := os.ReadFile(src.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, enc := range []string{"cl100k_base", "o200k_base"} {
			exact, err := tiktoken.New(enc)
			if err != nil {
				t.Fatal(err)
			}
			est, tok, lo, hi := 0, 0, 10.0, 0.0
			for text := string(b); text != ""; {
				n := min(1500, len(text))
				for n < len(text) && text[n]&0xC0 == 0x80 {
					n++
				}
				chunk := text[:n]
				text = text[n:]
				e, x := prompt.Estimate.Count(chunk), exact.Count(chunk)
				est, tok = est+e, tok+x
				if x > 0 {
					r := float64(e) / float64(x)
					lo, hi = min(lo, r), max(hi, r)
				}
			}
			t.Logf("%s %s: %d exact tokens, estimate %.2f× in total, chunks %.2f×–%.2f×", src.kind, enc, tok, float64(est)/float64(tok), lo, hi)
			if est < tok {
				t.Errorf("%s %s: the estimate under-counts in total: %d < %d", src.kind, enc, est, tok)
			}
		}
	}
}
