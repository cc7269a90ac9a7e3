package lexical

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEpisodic01_Tokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"open page-123 now", []string{"open", "page", "123", "page-123", "now"}},
		{"Sec_9.hero", []string{"sec", "9", "hero", "sec_9.hero"}},
		{"-x- a--b", []string{"x", "a", "b"}},
		{"Über größe", []string{"über", "größe"}},
		{`{"id":"page-7","title":"About Us"}`, []string{"id", "page", "7", "page-7", "title", "about", "us"}},
	} {
		if got := Tokens(nil, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// bm25 is the formula written out for one document and one term.
func bm25(idf, tf, dl, avgdl float64) float64 {
	return idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/avgdl))
}

func TestEpisodic02_BM25HandComputed(t *testing.T) {
	var c Corpus
	c.Add("a", "the page page intro")     // 3 tokens ("the" is a stop word)
	c.Add("b", "section hero")            // 2 tokens
	c.Add("c", "intro of page-9 section") // intro, page, 9, page-9, section: 5 tokens
	avg := 10.0 / 3
	idf := func(df float64) float64 { return math.Log(1 + (3-df+0.5)/(df+0.5)) }
	hits := c.Rank("the page intro")
	want := map[string]float64{
		"a": bm25(idf(2), 2, 3, avg) + bm25(idf(2), 1, 3, avg),
		"b": 0,
		"c": bm25(idf(2), 1, 5, avg) + bm25(idf(2), 1, 5, avg),
	}
	if hits[0].Key != "a" || hits[1].Key != "c" || hits[2].Key != "b" {
		t.Fatalf("order = %v, want a, c, b", hits)
	}
	for _, h := range hits {
		if math.Abs(h.Score-want[h.Key]) > 1e-12 {
			t.Errorf("%s: score %v, want %v", h.Key, h.Score, want[h.Key])
		}
	}
	if hits[0].Similarity != 1 || math.Abs(hits[1].Similarity-want["c"]/want["a"]) > 1e-12 || hits[2].Similarity != 0 {
		t.Errorf("similarities = %v", hits)
	}
	// A repeated query term counts once; the ID is found whole.
	if h := c.Rank("page-9 page-9"); h[0].Key != "c" || h[0].Score != c.Rank("page-9")[0].Score {
		t.Errorf("Rank(page-9 page-9) = %v", h)
	}
}

func TestEpisodic03_RankTiesByKey(t *testing.T) {
	var c Corpus
	for _, k := range []string{"z", "b", "m", "b"} {
		c.Add(k, "same words")
	}
	var keys []string
	var docs []int
	for _, h := range c.Rank("words") {
		keys, docs = append(keys, h.Key), append(docs, h.Doc)
	}
	if !slices.Equal(keys, []string{"b", "b", "m", "z"}) || !slices.Equal(docs, []int{1, 3, 2, 0}) {
		t.Errorf("ties: keys %v docs %v", keys, docs)
	}
	for _, h := range c.Rank("nothing") {
		if h.Score != 0 || h.Similarity != 0 {
			t.Errorf("no match: %+v", h)
		}
	}
	var empty Corpus
	if h := empty.Rank("x"); len(h) != 0 {
		t.Errorf("empty corpus: %v", h)
	}
}

func FuzzEpisodic19_Tokens(f *testing.F) {
	for _, s := range []string{"", "page-123", "a--b", "Ünï-cødé_9", "x.y:z/w", strings.Repeat("a-", 100), "\xff-a", "ǅ-ǈ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := Tokens(nil, s)
		if again := Tokens(nil, s); !slices.Equal(toks, again) {
			t.Fatalf("not deterministic: %q then %q", toks, again)
		}
		var words []string
		for _, tok := range toks {
			if tok == "" || len(tok) > MaxTokenBytes || !utf8.ValidString(tok) {
				t.Fatalf("bad token %q", tok)
			}
			if strings.IndexFunc(tok, isWord) < 0 {
				t.Fatalf("token %q has no letter or digit", tok)
			}
			if !strings.ContainsFunc(tok, isJoiner) {
				words = append(words, tok)
			}
			for _, r := range tok {
				if !isWord(r) && !isJoiner(r) {
					t.Fatalf("token %q holds %q", tok, r)
				}
			}
		}
		// Tokens are the letter-digit runs, lowercased, in order.
		var want []string
		for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !isWord(r) }) {
			if w = strings.Map(unicode.ToLower, w); w != "" && strings.IndexFunc(w, isWord) >= 0 {
				want = append(want, cut([]byte(w)))
			}
		}
		if !slices.Equal(words, want) && !slices.ContainsFunc(want, func(w string) bool { return strings.ContainsFunc(w, isJoiner) }) {
			t.Fatalf("runs of %q = %q, want %q", s, words, want)
		}
		// A text's tokens all score it, but for stop words.
		var c Corpus
		c.Add("d", s)
		for _, tok := range toks {
			if stopWords[tok] {
				if h := c.Rank(tok); h[0].Score != 0 {
					t.Fatalf("stop word %q of %q scores it: %+v", tok, s, h)
				}
				continue
			}
			if h := c.Rank(tok); h[0].Score <= 0 || h[0].Similarity != 1 {
				t.Fatalf("token %q of %q does not find it: %+v", tok, s, h)
			}
		}
	})
}

// Dropping the oldest documents scores like a corpus built without them.
func TestEpisodic17_DropFirst(t *testing.T) {
	texts := []string{"page-1 about", "page-2 hero", "about us page", "hero section", "page page"}
	var all, tail Corpus
	for i, s := range texts {
		all.Add(strconv.Itoa(i), s)
		if i >= 2 {
			tail.Add(strconv.Itoa(i), s)
		}
	}
	all.DropFirst(2)
	for _, q := range []string{"page", "hero about", "page-1", ""} {
		a, b := all.Rank(q), tail.Rank(q)
		if !slices.Equal(a, b) {
			t.Errorf("Rank(%q): dropped %v, rebuilt %v", q, a, b)
		}
	}
	all.DropFirst(10)
	if all.Len() != 0 || len(all.df) != 0 || all.length != 0 {
		t.Errorf("after dropping all: %d docs, df %v, length %d", all.Len(), all.df, all.length)
	}
}

// TestMemory43_StemFoldsInflections: the inflections of a word rank as
// one term, and IDs, numbers and short words are left alone.
func TestMemory43_StemFoldsInflections(t *testing.T) {
	for _, group := range [][]string{
		{"autosave", "autosaves", "autosaved", "autosaving"},
		{"prefer", "prefers", "preferred", "preferring"},
		{"plan", "plans", "planned", "planning"},
		{"like", "likes", "liked"},
		{"library", "libraries"},
		{"class", "classes"},
	} {
		want := Stem(group[0])
		for _, w := range group[1:] {
			if got := Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, Stem(%q) = %q: want one form", w, got, group[0], want)
			}
		}
	}
	for _, keep := range []string{"page-123", "sec_9", "2026", "gas", "bus", "analysis", "Über"} {
		if got := Stem(keep); got != keep {
			t.Errorf("Stem(%q) = %q, want it unchanged", keep, got)
		}
	}
	var c Corpus
	c.Add("a", "The editor autosaved the draft.")
	c.Add("b", "The editor publishes the page.")
	if hits := c.Rank("autosave"); hits[0].Key != "a" || hits[0].Similarity != 1 || hits[1].Score != 0 {
		t.Errorf("Rank(autosave) = %+v, want the autosaved draft alone", hits)
	}
}

// TestMemory92_StopWordsMatchNothing: function words say nothing of what a
// text is about. A document that shares only them with the query is not
// found, a query made of them finds nothing, and they do not dilute the
// words that matter.
func TestMemory92_StopWordsMatchNothing(t *testing.T) {
	var c Corpus
	c.Add("paddle", "The user's kayak paddle is carbon fibre.")
	c.Add("trains", "The user does not like crowded trains.")
	c.Add("tea", "It is what the user drinks: green tea.")
	hits := c.Rank("What is the colour of my kayak paddle?")
	if hits[0].Key != "paddle" || hits[0].Similarity != 1 {
		t.Fatalf("hits = %+v, want the paddle first", hits)
	}
	for _, h := range hits[1:] {
		if h.Score != 0 {
			t.Errorf("%s shares only function words with the query but scores %v", h.Key, h.Score)
		}
	}
	for _, h := range c.Rank("what is it to you?") {
		if h.Score != 0 {
			t.Errorf("a query of function words found %s (%v)", h.Key, h.Score)
		}
	}
}

// TestScorerEqualsRank: a Scorer given the corpus's document frequencies
// scores every document exactly as Rank does, repeated query terms and
// terms in no document included, so an index that keeps its own counts
// ranks as the corpus does.
func TestScorerEqualsRank(t *testing.T) {
	var c Corpus
	texts := []string{
		"The pricing page for nonprofits, pricing again",
		"A hero section on the landing page",
		"Nonprofits get a discount on every plan",
		"",
		"page page page page hero",
	}
	for i, text := range texts {
		c.Add(strconv.Itoa(i), text)
	}
	query := "pricing page hero page absentword"
	var terms []string
	var idf []float64
	for _, w := range Terms(nil, query) {
		if !slices.Contains(terms, w) {
			terms = append(terms, w)
			idf = append(idf, c.IDF(w))
		}
	}
	avg := float64(c.length) / float64(len(c.docs))
	sc := NewScorer(terms, idf, avg)
	hits := c.Rank(query)
	if len(hits) != len(texts) {
		t.Fatalf("Rank gave %d hits, want %d", len(hits), len(texts))
	}
	for _, h := range hits {
		if got := sc.Score(texts[h.Doc]); got != h.Score {
			t.Errorf("document %d: Score = %v, Rank = %v", h.Doc, got, h.Score)
		}
	}
	if sc.Score(texts[0]) == 0 || sc.Score(texts[3]) != 0 {
		t.Errorf("scores %v, %v: want a match and an empty document at 0", sc.Score(texts[0]), sc.Score(texts[3]))
	}
}
