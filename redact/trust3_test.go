package redact_test

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/redact"
)

// TestTrust312_CommonFormsMasked: the forms the third review found
// stored unmasked are masked: an e-mail after "Apple ID:", a card after
// "CC#", an IBAN after "Account#", an e-mail under a "login_id" key, UK
// and German mobiles written nationally, and e-mail addresses with an
// internationalised domain or local part.
func TestTrust312_CommonFormsMasked(t *testing.T) {
	for _, tc := range []struct {
		text, value string
		kind        redact.Kind
	}{
		{"Apple ID: bob@example.com", "bob@example.com", redact.Email},
		{"CC# 5500 0000 0000 0004, exp 09/28", "5500 0000 0000 0004", redact.Card},
		{"Account# GB82 WEST 1234 5698 7654 32", "GB82 WEST 1234 5698 7654 32", redact.IBAN},
		{`{"login_id": "bob.smith@example.com", "plan": "pro"}`, "bob.smith@example.com", redact.Email},
		{"my mobile is 07911 123456", "07911 123456", redact.Phone},
		{"Handy: 0151 23456789", "0151 23456789", redact.Phone},
		{"write to jürgen@bücher.de today", "jürgen@bücher.de", redact.Email},
		{"or to info@例え.テスト", "info@例え.テスト", redact.Email},
	} {
		out, found := redact.Default.Redact(tc.text, nil)
		if strings.Contains(out, tc.value) || !hasKind(found, tc.kind) {
			t.Errorf("Redact(%q) = %q, %v: want the %s %q masked", tc.text, out, found, tc.kind, tc.value)
		}
	}
}

// TestTrust313_NoOverMasking: dates, order and invoice numbers are not
// masked as phone or card numbers, while the phone number and card in
// the same text are.
func TestTrust313_NoOverMasking(t *testing.T) {
	in := "The contract ends on 01.04.2026, renewal call on 03-04-2026, order 0815-4711-22, invoice 4000 0012 3456 7899. Call me on 020 7946 0958, card 4111 1111 1111 1111."
	want := "The contract ends on 01.04.2026, renewal call on 03-04-2026, order 0815-4711-22, invoice 4000 0012 3456 7899. Call me on [redacted phone], card [redacted card]."
	if out, found := redact.Default.Redact(in, nil); out != want {
		t.Errorf("Redact:\n got %s\nwant %s\n(%v)", out, want, found)
	}
}

func hasKind(found []redact.Finding, k redact.Kind) bool {
	for _, f := range found {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// corpusFloors are the least recall each kind must keep on
// testdata/pii_corpus.tsv, and the most false positives a category of
// hard negatives may have, as fractions.
var (
	recallFloor = map[redact.Kind]float64{redact.Email: 1, redact.Phone: 0.95, redact.Card: 1, redact.IBAN: 1, redact.Secret: 1}
	fpCeiling   = 0.03 // per category of negatives
)

// TestTrust313_Corpus measures the default redactor on a labelled corpus
// of its own (testdata/pii_corpus.tsv): at least 200 positives across the
// kinds and 200 hard negatives (dates, ISO timestamps, order, invoice and
// tracking numbers, versions, IDs, UUIDs, prices, IP addresses). It
// reports recall per kind and the false-positive rate per category of
// negatives, and asserts floors on both.
func TestTrust313_Corpus(t *testing.T) {
	data, err := os.ReadFile("testdata/pii_corpus.tsv")
	if err != nil {
		t.Fatal(err)
	}
	type tally struct{ n, hit int }
	recall := map[redact.Kind]*tally{}
	fp := map[string]*tally{}
	fpKind := map[redact.Kind]int{} // negatives masked as each kind
	var pos, neg int
	for line := range strings.SplitSeq(string(data), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || !strings.Contains(f[2], f[1]) {
			t.Fatalf("bad corpus line %q", line)
		}
		label, value, text := f[0], f[1], f[2]
		out, found := redact.Default.Redact(text, nil)
		if cat, ok := strings.CutPrefix(label, "neg:"); ok {
			neg++
			if fp[cat] == nil {
				fp[cat] = &tally{}
			}
			fp[cat].n++
			if len(found) > 0 {
				fp[cat].hit++
				for _, k := range uniqueKinds(found) {
					fpKind[k]++
				}
				t.Logf("false positive (%s): %q -> %q", cat, text, out)
			}
			continue
		}
		k := redact.Kind(label)
		if !slices.Contains(redact.Kinds, k) {
			t.Fatalf("bad label %q", label)
		}
		pos++
		if recall[k] == nil {
			recall[k] = &tally{}
		}
		recall[k].n++
		at := strings.Index(text, value)
		masked := !strings.Contains(out, value) && slices.ContainsFunc(found, func(f redact.Finding) bool {
			return f.Kind == k && f.Start < at+len(value) && at < f.End
		})
		if masked {
			recall[k].hit++
		} else {
			t.Logf("missed (%s): %q -> %q", k, text, out)
		}
	}
	if pos < 200 || neg < 200 {
		t.Fatalf("the corpus has %d positives and %d negatives, want 200 of each", pos, neg)
	}
	for _, k := range redact.Kinds {
		r := recall[k]
		if r == nil {
			t.Errorf("no positives of kind %s", k)
			continue
		}
		rate := float64(r.hit) / float64(r.n)
		t.Logf("FIGURE redact corpus %s: recall %d of %d (%.3f), false positives %d of %d negatives (%.3f)", k, r.hit, r.n, rate, fpKind[k], neg, float64(fpKind[k])/float64(neg))
		if rate < recallFloor[k] {
			t.Errorf("recall of %s is %.3f, want at least %.3f", k, rate, recallFloor[k])
		}
	}
	cats := slices.Sorted(maps.Keys(fp))
	total := 0
	for _, c := range cats {
		r := fp[c]
		total += r.hit
		rate := float64(r.hit) / float64(r.n)
		t.Logf("FIGURE redact corpus false positives %s: %d of %d (%.3f)", c, r.hit, r.n, rate)
		if rate > fpCeiling {
			t.Errorf("false-positive rate on %s is %.3f, want at most %.3f", c, rate, fpCeiling)
		}
	}
	t.Logf("FIGURE redact corpus: %d positives, %d negatives, %d false positives", pos, neg, total)
}

func uniqueKinds(found []redact.Finding) []redact.Kind {
	var ks []redact.Kind
	for _, f := range found {
		if !slices.Contains(ks, f.Kind) {
			ks = append(ks, f.Kind)
		}
	}
	return ks
}
