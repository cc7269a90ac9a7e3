package semantictest

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

var update = flag.Bool("update", false, "rewrite testdata/*.jsonl from the generator in gen_test.go")

// stopWords are ignored when deciding whether a query shares a word with a
// fact; testdata/README.md lists the same words.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or of to in on at by for from with as about into
		is are was were be been do does did has have had can could may might should will would
		what which who whom whose when where why how this that these those it its
		i we our us you your he she his her they them their s there not no so than then`) {
		stopWords[w] = true
	}
}

// words returns the distinct lowercased words of text (runs of letters
// and digits), with or without the stop words.
func words(text string, keepStop bool) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if keepStop || !stopWords[w] {
			out[w] = true
		}
	}
	return out
}

func TestMemory58_SetIsGenerated(t *testing.T) {
	set := generate()
	files := map[string][]byte{
		"facts.jsonl":   encodeJSONL(set.Facts),
		"queries.jsonl": encodeJSONL(set.Queries),
	}
	for name, want := range files {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output; rerun with -update if the generator changed on purpose", path)
		}
	}
	// A second run gives the same set: the generator is deterministic.
	if again := generate(); !bytes.Equal(encodeJSONL(again.Facts), files["facts.jsonl"]) ||
		!bytes.Equal(encodeJSONL(again.Queries), files["queries.jsonl"]) {
		t.Error("two runs of the generator differ")
	}
}

func TestMemory59_SetProperties(t *testing.T) {
	set, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	paraphrased := 0
	for _, q := range set.Queries {
		if q.Paraphrase {
			paraphrased++
		}
	}
	t.Logf("FIGURE set: %d facts, %d queries, %d paraphrased", len(set.Facts), len(set.Queries), paraphrased)
	if len(set.Facts) < 500 || len(set.Queries) < 100 || paraphrased < 25 {
		t.Errorf("%d facts, %d queries, %d paraphrased; want at least 500, 100, 25", len(set.Facts), len(set.Queries), paraphrased)
	}

	byID := map[string]Fact{}
	for _, f := range set.Facts {
		byID[f.ID] = f
		switch f.Kind {
		case "preference", "account", "person", "project", "decision":
		default:
			t.Errorf("fact %s: unknown kind %q", f.ID, f.Kind)
		}
	}
	texts := map[string]string{}
	for _, q := range set.Queries {
		if other, ok := texts[q.Text]; ok {
			t.Errorf("queries %s and %s have the same text %q", other, q.ID, q.Text)
		}
		texts[q.Text] = q.ID
		qw := words(q.Text, false)
		for _, id := range q.Relevant {
			var shared []string
			for w := range words(byID[id].Text, false) {
				if qw[w] {
					shared = append(shared, w)
				}
			}
			if q.Paraphrase && len(shared) > 0 {
				t.Errorf("paraphrased query %s %q shares %v with its fact %s %q", q.ID, q.Text, shared, id, byID[id].Text)
			}
			if !q.Paraphrase && len(shared) == 0 {
				t.Errorf("query %s %q shares no word with its fact %s %q: mark it paraphrased", q.ID, q.Text, id, byID[id].Text)
			}
		}
	}

	// No fact restates another: two facts of a kind share well under 0.7
	// of their words (Jaccard), the level at which a memory may take the
	// second for a new version of the first.
	const maxJaccard = 0.65
	ws := make([]map[string]bool, len(set.Facts))
	for i, f := range set.Facts {
		ws[i] = words(f.Text, true)
	}
	for i := range set.Facts {
		for j := i + 1; j < len(set.Facts); j++ {
			if set.Facts[i].Kind != set.Facts[j].Kind {
				continue
			}
			n := 0
			for w := range ws[i] {
				if ws[j][w] {
					n++
				}
			}
			if jac := float64(n) / float64(len(ws[i])+len(ws[j])-n); jac >= maxJaccard {
				t.Errorf("facts %s and %s are near-duplicates (Jaccard %.2f): %q, %q",
					set.Facts[i].ID, set.Facts[j].ID, jac, set.Facts[i].Text, set.Facts[j].Text)
			}
		}
	}
}
