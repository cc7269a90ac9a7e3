package route_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
)

// gateItem is a write of the gating sweep and what its destination holds.
type gateItem struct {
	w      layer.Write
	stored []layer.Candidate
}

// gateFixture builds the sweep's writes from the routing fixture: each
// item's text and kind, an importance the writer gave that cycles over
// [0, 1], and a destination that holds, by turns, nothing, an unrelated
// item, the item itself (a restatement) or the item reworded.
func gateFixture(t testing.TB) []gateItem {
	items := loadFile(t, "testdata/routing.jsonl")
	out := make([]gateItem, len(items))
	for i, it := range items {
		w := layer.Write{Kind: it.Kind, Text: it.Text, Importance: float64(i%11) / 10}
		var stored []layer.Candidate
		switch i % 4 {
		case 1:
			o := items[(i+7)%len(items)]
			stored = []layer.Candidate{{Key: "other", Text: o.Text}}
		case 2:
			stored = []layer.Candidate{{Key: "f1", Text: "[f1 fact] " + it.Text}, {Key: "other", Text: items[(i+3)%len(items)].Text}}
		case 3:
			stored = []layer.Candidate{{Key: "f2", Text: "Earlier: " + it.Text + " (noted)"}}
		}
		out[i] = gateItem{w, stored}
	}
	return out
}

// rate returns the share of items g accepts.
func rate(t *testing.T, g route.Gate, items []gateItem) float64 {
	n := 0
	for _, it := range items {
		if g.Admit(t.Context(), it.w, it.stored).Accept {
			n++
		}
	}
	return float64(n) / float64(len(items))
}

// TestGateSweep sweeps each threshold over the fixture, the others off:
// the share of writes accepted never rises as a threshold tightens, and
// it is the share of writes whose measure passes that threshold, so it
// can be set in advance from the measures' distribution (for example, at
// the median importance, about half are accepted). All three together
// accept exactly the writes that pass each.
func TestGateSweep(t *testing.T) {
	items := gateFixture(t)
	scores := make([]route.Score, len(items))
	for i, it := range items {
		scores[i] = route.Measure(it.w, it.stored)
	}
	share := func(pass func(route.Score) bool) float64 {
		n := 0
		for _, s := range scores {
			if pass(s) {
				n++
			}
		}
		return float64(n) / float64(len(scores))
	}
	type sweep struct {
		name  string
		gate  func(x float64) route.Thresholds
		pass  func(s route.Score, x float64) bool
		steps []float64
	}
	var grid []float64
	for i := 1; i <= 20; i++ {
		grid = append(grid, float64(i)/20)
	}
	var sizes []float64
	for x := 1.0; x <= 4096; x *= 2 {
		sizes = append(sizes, x)
	}
	for _, sw := range []sweep{
		{"importance", func(x float64) route.Thresholds {
			return route.Thresholds{MinImportance: x, MinNovelty: -1, MaxTokens: -1}
		},
			func(s route.Score, x float64) bool { return s.Importance >= x }, grid},
		{"novelty", func(x float64) route.Thresholds {
			return route.Thresholds{MinImportance: -1, MinNovelty: x, MaxTokens: -1}
		},
			func(s route.Score, x float64) bool { return s.Novelty >= x }, grid},
		{"size", func(x float64) route.Thresholds {
			return route.Thresholds{MinImportance: -1, MinNovelty: -1, MaxTokens: int(x)}
		},
			func(s route.Score, x float64) bool { return s.Tokens <= int(x) }, sizes},
	} {
		var rates []string
		prev := math.Inf(1)
		if sw.name == "size" {
			prev = math.Inf(-1)
		}
		for _, x := range sw.steps {
			got := rate(t, route.Gate{Thresholds: sw.gate(x)}, items)
			want := share(func(s route.Score) bool { return sw.pass(s, x) })
			if got != want {
				t.Errorf("%s %.2f: accepted %.4f, want %.4f, the share of scores that pass", sw.name, x, got, want)
			}
			// Tighter is a higher minimum, a lower maximum (the size
			// sweep loosens as it goes).
			if sw.name != "size" && got > prev || sw.name == "size" && got < prev {
				t.Errorf("%s %.2f: accepted %.4f after %.4f: not monotone", sw.name, x, got, prev)
			}
			prev = got
			rates = append(rates, fmt.Sprintf("%g:%.3f", math.Round(x*100)/100, got))
		}
		t.Logf("%s sweep (threshold:accepted): %s", sw.name, strings.Join(rates, " "))
	}
	// At the median importance, half or a little more are accepted (ties
	// at the median are accepted).
	imp := make([]float64, len(scores))
	for i, s := range scores {
		imp[i] = s.Importance
	}
	slices.Sort(imp)
	median := imp[len(imp)/2]
	if got := rate(t, route.Gate{Thresholds: route.Thresholds{MinImportance: median, MinNovelty: -1, MaxTokens: -1}}, items); got < 0.5 || got > 0.5+share(func(s route.Score) bool { return s.Importance == median }) {
		t.Errorf("at the median importance %.3f, accepted %.3f", median, got)
	}
	// All three at once accept exactly what passes each.
	th := route.Thresholds{MinImportance: 0.6, MinNovelty: 0.3, MaxTokens: 200}
	want := share(func(s route.Score) bool { return s.Importance >= 0.6 && s.Novelty >= 0.3 && s.Tokens <= 200 })
	if got := rate(t, route.Gate{Thresholds: th}, items); got != want || want == 0 || want == 1 {
		t.Errorf("all three: accepted %.4f, want %.4f (strictly between 0 and 1)", got, want)
	}
	// The defaults.
	def := share(func(s route.Score) bool {
		return s.Importance >= route.DefaultMinImportance && s.Novelty >= route.DefaultMinNovelty && s.Tokens <= route.DefaultMaxTokens
	})
	if got := rate(t, route.Gate{}, items); got != def {
		t.Errorf("the zero Thresholds accepted %.4f, want the defaults' %.4f", got, def)
	}
	t.Logf("the defaults accept %.3f of the fixture's writes", def)
}

// Importance starts from the writer's importance and each signal raises
// it, once however often it occurs; it stays in [0, 1].
func TestImportance(t *testing.T) {
	plain := layer.Write{Kind: "fact", Text: "the sky looks grey", Importance: 0.2}
	if got := route.Importance(plain); math.Abs(got-0.2) > 1e-9 {
		t.Errorf("no signal: %v, want the writer's 0.2", got)
	}
	base := route.Importance(plain)
	for _, c := range []struct {
		name, kind, text string
		signal           float64
	}{
		{"user", "fact", "the user prefers grey skies", route.SignalUser},
		{"decision", "fact", "we decided on grey skies", route.SignalDecision},
		{"failure", "fact", "the sky lookup failed", route.SignalFailure},
		{"outcome", "fact", "the sky page was published", route.SignalOutcome},
		{"entity", "fact", "the sky over pg-42 looks grey", route.SignalEntity},
		{"entity by name", "fact", "the sky over Lisbon looks grey", route.SignalEntity},
		{"kind", "decision", "grey skies it is", route.SignalDecision},
	} {
		w := plain
		w.Kind, w.Text = c.kind, c.text
		got := route.Importance(w)
		if want := 1 - (1-base)*(1-c.signal); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
		w.Text += " " + c.text
		if again := route.Importance(w); math.Abs(again-got) > 1e-9 {
			t.Errorf("%s twice: %v, want %v: a signal counts once", c.name, again, got)
		}
	}
	all := layer.Write{Kind: "decision", Text: "I decided: the deploy of pg-42 failed, then it was fixed and published.", Importance: 0.9}
	for _, imp := range []float64{-1, 0, 0.5, 1, 2, math.NaN(), math.Inf(1)} {
		all.Importance = imp
		if got := route.Importance(all); !(got >= 0 && got <= 1) {
			t.Errorf("importance %v: %v, want it in [0, 1]", imp, got)
		}
	}
}

// Novelty is 0 for a restatement, 1 against nothing or against items
// that share no term, and names the nearest stored item; a stored item's
// bracketed reference is not compared.
func TestNovelty(t *testing.T) {
	text := "The user prefers oolong tea in the morning."
	for _, c := range []struct {
		name   string
		stored []layer.Candidate
		lo, hi float64
		key    string
	}{
		{"nothing stored", nil, 1, 1, ""},
		{"no shared term", []layer.Candidate{{Key: "a", Text: "Invoices are due on the 5th."}}, 1, 1, ""},
		{"restated", []layer.Candidate{{Key: "a", Text: "Invoices are due."}, {Key: "f3", Text: "[f3 preference] " + text}}, 0, 0, "f3"},
		{"reworded", []layer.Candidate{{Key: "f4", Text: "The user prefers green tea."}}, 0.2, 0.9, "f4"},
	} {
		n, key := route.Novelty(text, c.stored)
		if n < c.lo || n > c.hi || key != c.key {
			t.Errorf("%s: novelty %v near %q, want [%v, %v] near %q", c.name, n, key, c.lo, c.hi, c.key)
		}
	}
	if n, _ := route.Novelty("", []layer.Candidate{{Key: "a", Text: "x"}}); n != 1 {
		t.Errorf("empty text: novelty %v, want 1", n)
	}
}

// The zero Thresholds are the documented defaults; a negative field turns
// its check off; a refusal says which measure failed.
func TestThresholds(t *testing.T) {
	var zero route.Thresholds
	at := route.Score{Importance: route.DefaultMinImportance, Novelty: route.DefaultMinNovelty, Tokens: route.DefaultMaxTokens}
	if ok, why := zero.Admit(at); !ok {
		t.Errorf("a score at every default is refused: %s", why)
	}
	for _, c := range []struct {
		s    route.Score
		word string
	}{
		{route.Score{Importance: route.DefaultMinImportance - 0.01, Novelty: 1, Tokens: 1}, "importance"},
		{route.Score{Importance: 1, Novelty: route.DefaultMinNovelty - 0.01, Nearest: "f9", Tokens: 1}, "f9"},
		{route.Score{Importance: 1, Novelty: 1, Tokens: route.DefaultMaxTokens + 1}, "tokens"},
	} {
		if ok, why := zero.Admit(c.s); ok || !strings.Contains(why, c.word) {
			t.Errorf("%+v: accepted %v (%q), want a refusal naming %q", c.s, ok, why, c.word)
		}
		if ok, why := (route.Thresholds{MinImportance: -1, MinNovelty: -1, MaxTokens: -1}).Admit(c.s); !ok {
			t.Errorf("%+v with every check off: refused: %s", c.s, why)
		}
	}
}

// Default never refuses a write for its kind: any kind, any text, goes
// to one of the three stores.
func FuzzDefaultRoutes(f *testing.F) {
	for _, s := range []string{"fact", "ToolResult", "", "pattern", "user_message", "Ü-ber", "skills"} {
		f.Add(s, "Publish a page: cms_getPage → cms_updatePage.")
	}
	f.Fuzz(func(t *testing.T, kind, text string) {
		got := route.Default.Route(t.Context(), layer.Write{Kind: kind, Text: text})
		if !slices.Contains([]string{layer.KeepsSemantic, layer.KeepsEpisodic, layer.KeepsScratchpad}, got.Layer) || got.Reason == "" {
			t.Fatalf("kind %q text %q: %+v", kind, text, got)
		}
		if imp := route.Importance(layer.Write{Kind: kind, Text: text, Importance: 0.5}); !(imp >= 0.5 && imp <= 1) {
			t.Fatalf("importance %v", imp)
		}
		if n, _ := route.Novelty(text, []layer.Candidate{{Key: "a", Text: text}}); !(n >= 0 && n <= 1) {
			t.Fatalf("novelty %v", n)
		}
	})
}
