// Package lexical is memlayer's one implementation of lexical scoring:
// the tokenizer and an in-process BM25 over a small corpus, which ranks
// stemmed tokens ([Stem]) and leaves out English function words. The episodic
// layer ranks episodes with it, and the semantic layer's sparse
// similarity is [Corpus.Rank]'s Similarity.
//
// Everything here is deterministic: the same corpus and query give the
// same scores, bit for bit, and ties are broken by the documents' keys.
package lexical

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokens appends the tokens of text to dst and returns the extended
// slice. A token is a maximal run of letters and digits, lowercased
// ("Über" gives "über"). Runs joined by single '-', '_', '.', ':' or '/'
// characters with no space between them form a compound, which is
// added after its parts, lowercased and with its joiners kept, so an ID
// such as "page-123" or "sec_9" is findable whole as well as by its
// parts: "Page-123" gives "page", "123", "page-123". A joiner at either
// end of a compound is not part of it ("-x-" gives "x"). Tokens are
// never empty and are at most MaxTokenBytes long (longer runs and
// compounds are cut at a rune boundary).
func Tokens(dst []string, text string) []string {
	var buf, comp []byte // the run being read; the compound so far
	parts := 0           // runs in comp
	flush := func() {
		if parts > 1 {
			// A compound cut at MaxTokenBytes may end in a joiner,
			// which a query's compound never does.
			dst = append(dst, strings.TrimRight(cut(comp), "-_.:/"))
		}
		comp, parts = comp[:0], 0
	}
	i := 0
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isWord(r) {
			// A single joiner between two runs continues the compound.
			if isJoiner(r) && parts > 0 && i+n < len(text) {
				if r2, _ := utf8.DecodeRuneInString(text[i+n:]); isWord(r2) {
					comp = append(comp, byte(r))
					i += n
					continue
				}
			}
			flush()
			i += n
			continue
		}
		buf = buf[:0]
		for i < len(text) {
			r, n = utf8.DecodeRuneInString(text[i:])
			if !isWord(r) {
				break
			}
			buf = utf8.AppendRune(buf, unicode.ToLower(r))
			i += n
		}
		tok := cut(buf)
		dst = append(dst, tok)
		comp = append(comp, tok...)
		parts++
	}
	flush()
	return dst
}

// Stem folds the inflections of an English word to one form, so that
// "autosave", "autosaves", "autosaved" and "autosaving" match: it drops a
// plural "s" (or "es" after "ss", and turns "ies" into "y"), then an
// "ing" or "ed" ending with the doubled consonant that may come with it
// ("planned", "running"), then a final "e". It is deliberately light —
// no dictionary, no derivational suffixes — and leaves alone any token
// of fewer than four bytes or with a byte that is not a lowercase ASCII
// letter (IDs, numbers, compounds, other scripts). BM25 ([Corpus]) ranks
// stemmed tokens.
func Stem(t string) string {
	if len(t) < 4 {
		return t
	}
	for i := 0; i < len(t); i++ {
		if t[i] < 'a' || t[i] > 'z' {
			return t
		}
	}
	switch {
	case strings.HasSuffix(t, "ies") && len(t) > 4:
		t = t[:len(t)-3] + "y"
	case strings.HasSuffix(t, "sses"):
		t = t[:len(t)-2]
	case strings.HasSuffix(t, "s") && !strings.HasSuffix(t, "ss") && !strings.HasSuffix(t, "us") && !strings.HasSuffix(t, "is"):
		t = t[:len(t)-1]
	}
	cut := 0
	switch {
	case strings.HasSuffix(t, "ing") && len(t) > 5:
		cut = 3
	case strings.HasSuffix(t, "ed") && len(t) > 4:
		cut = 2
	}
	if cut > 0 {
		t = t[:len(t)-cut]
		if n := len(t); n > 3 && t[n-1] == t[n-2] && !strings.ContainsRune("aeioulsz", rune(t[n-1])) {
			t = t[:n-1]
		}
	}
	if len(t) > 3 && t[len(t)-1] == 'e' {
		t = t[:len(t)-1]
	}
	return t
}

// terms appends the tokens of text that are not stop words, stemmed, to
// dst: what BM25 ranks.
func terms(dst []string, text string) []string {
	n := len(dst)
	dst = Tokens(dst, text)
	out := dst[:n]
	for _, t := range dst[n:] {
		if !stopWords[t] {
			out = append(out, Stem(t))
		}
	}
	return out
}

// IsStopWord reports whether t, a lowercased token, is an English
// function word, which BM25 leaves out.
func IsStopWord(t string) bool { return stopWords[t] }

// stopWords are English function words, which say nothing of what a
// text is about: left out of BM25, "the" or "is" in a query no longer
// matches every document a little, so a document that shares only them
// with the query is not found at all.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or but if then else of to in on at by for with from as into
		onto about over under up down out off than so too very
		is am are was were be been being do does did doing have has had having will would shall should
		can could may might must
		i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
		this that these those there here what which who whom whose when where why how
		all any some no not each both either neither such own same other
		just only also again once`) {
		stopWords[w] = true
	}
}

// MaxTokenBytes caps the length of one token.
const MaxTokenBytes = 64

func cut(b []byte) string {
	if len(b) <= MaxTokenBytes {
		return string(b)
	}
	n := MaxTokenBytes
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return string(b[:n])
}

func isWord(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
		r >= utf8.RuneSelf && r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

func isJoiner(r rune) bool { return r == '-' || r == '_' || r == '.' || r == ':' || r == '/' }

// BM25 parameters: K1 saturates term frequency, B normalises by document
// length (the common defaults).
const (
	K1 = 1.2
	B  = 0.75
)

// Corpus is a small in-memory BM25 index. Add documents, then Rank
// queries. The zero Corpus is empty and ready to use. A Corpus is not
// safe for concurrent use.
type Corpus struct {
	docs   []doc
	df     map[string]int
	length int // total tokens
	toks   []string
}

type doc struct {
	key string
	tf  map[string]int
	n   int
}

// Add adds a document: its key (used to break ties, and returned in
// [Hit]) and its text, tokenized with [Tokens].
func (c *Corpus) Add(key, text string) {
	c.toks = terms(c.toks[:0], text)
	d := doc{key: key, tf: make(map[string]int, len(c.toks)), n: len(c.toks)}
	if c.df == nil {
		c.df = map[string]int{}
	}
	for _, t := range c.toks {
		if d.tf[t] == 0 {
			c.df[t]++
		}
		d.tf[t]++
	}
	c.length += d.n
	c.docs = append(c.docs, d)
}

// DropFirst removes the n oldest documents (the first n added), as if
// they had never been added: the scores of the others are those of a
// corpus built without them. The remaining documents' indexes shift
// down by n.
func (c *Corpus) DropFirst(n int) {
	n = min(max(n, 0), len(c.docs))
	for _, d := range c.docs[:n] {
		for t := range d.tf {
			if c.df[t]--; c.df[t] == 0 {
				delete(c.df, t)
			}
		}
		c.length -= d.n
	}
	c.docs = slices.Delete(c.docs, 0, n)
}

// Len returns the number of documents.
func (c *Corpus) Len() int { return len(c.docs) }

// Hit is one document's score for a query.
type Hit struct {
	// Doc is the document's index, in the order of Add.
	Doc int
	// Key is the document's key.
	Key string
	// Score is the document's BM25 score (0 when no query term occurs
	// in it).
	Score float64
	// Similarity is Score divided by the query's top score over the
	// corpus, in [0, 1]; 0 for every document when no document matches.
	Similarity float64
}

// IDF returns the inverse document frequency of a term over the corpus,
// ln(1 + (N − df + 0.5)/(df + 0.5)): never negative, so a term found in
// every document still counts a little.
func (c *Corpus) IDF(term string) float64 {
	n, df := float64(len(c.docs)), float64(c.df[term])
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// Rank scores every document against query and returns the hits in
// order: highest score first, ties by key, then by index. A query term
// that occurs several times counts once. The score of document d is
//
//	Σ over distinct query terms t in d:  IDF(t) · tf·(K1+1) / (tf + K1·(1 − B + B·|d|/avgdl))
//
// summed in the order the terms first occur in the query.
func (c *Corpus) Rank(query string) []Hit {
	hits := make([]Hit, len(c.docs))
	for i, d := range c.docs {
		hits[i] = Hit{Doc: i, Key: d.key}
	}
	if len(c.docs) == 0 {
		return hits
	}
	words := terms(nil, query)
	seen := make(map[string]bool, len(words))
	avg := float64(c.length) / float64(len(c.docs))
	if avg == 0 {
		avg = 1
	}
	top := 0.0
	for _, t := range words {
		if seen[t] || c.df[t] == 0 {
			continue
		}
		seen[t] = true
		idf := c.IDF(t)
		for i, d := range c.docs {
			tf := float64(d.tf[t])
			if tf == 0 {
				continue
			}
			hits[i].Score += idf * tf * (K1 + 1) / (tf + K1*(1-B+B*float64(d.n)/avg))
		}
	}
	for _, h := range hits {
		top = max(top, h.Score)
	}
	if top > 0 {
		for i := range hits {
			hits[i].Similarity = min(hits[i].Score/top, 1)
		}
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return cmp.Compare(a.Doc, b.Doc)
	})
	return hits
}
