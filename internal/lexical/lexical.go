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
			dst = append(dst, strings.TrimRight(cut(comp), joiners))
		}
		comp, parts = comp[:0], 0
	}
	i := 0
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isWord(r) {
			// A single joiner between two runs continues the compound.
			if parts > 0 && joins(text, i, r, n) {
				comp = append(comp, byte(r))
			} else {
				flush()
			}
			i += n
			continue
		}
		buf, i = readRun(buf[:0], text, i)
		tok := cut(buf)
		dst = append(dst, tok)
		comp = append(comp, tok...)
		parts++
	}
	flush()
	return dst
}

// joins reports whether r, the rune of n bytes at text[i], is a joiner
// with a word's rune after it.
func joins(text string, i int, r rune, n int) bool {
	if !isJoiner(r) {
		return false
	}
	r2, _ := utf8.DecodeRuneInString(text[i+n:])
	return isWord(r2)
}

// readRun appends to buf the run of word runes at text[i], lowered, and
// returns it with the index after the run.
func readRun(buf []byte, text string, i int) ([]byte, int) {
	for i < len(text) {
		r, n := utf8.DecodeRuneInString(text[i:])
		if !isWord(r) {
			break
		}
		buf = utf8.AppendRune(buf, unicode.ToLower(r))
		i += n
	}
	return buf, i
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
	if len(t) < 4 || strings.TrimLeft(t, "abcdefghijklmnopqrstuvwxyz") != "" {
		return t
	}
	t = stripVerbal(stripPlural(t))
	if len(t) > 3 {
		t = strings.TrimSuffix(t, "e")
	}
	return t
}

// stripPlural drops a plural "s" from t: "ies" becomes "y", "sses"
// "ss", and an "ss", "us" or "is" ending is kept.
func stripPlural(t string) string {
	switch {
	case strings.HasSuffix(t, "ies") && len(t) > 4:
		return t[:len(t)-3] + "y"
	case strings.HasSuffix(t, "sses"):
		return t[:len(t)-2]
	case hasSuffix(t, "ss", "us", "is"):
		return t
	}
	return strings.TrimSuffix(t, "s")
}

// stripVerbal drops an "ing" (leaving three bytes or more) or "ed"
// ending from t, and then the doubled consonant that may come with it
// ("stopped"), not a doubled vowel, l, s or z.
func stripVerbal(t string) string {
	switch {
	case strings.HasSuffix(t, "ing") && len(t) > 5:
		t = t[:len(t)-3]
	case strings.HasSuffix(t, "ed") && len(t) > 4:
		t = t[:len(t)-2]
	default:
		return t
	}
	if n := len(t); n > 3 && t[n-1] == t[n-2] && !strings.ContainsRune("aeioulsz", rune(t[n-1])) {
		t = t[:n-1]
	}
	return t
}

// hasSuffix reports whether t ends with one of suffixes.
func hasSuffix(t string, suffixes ...string) bool {
	for _, s := range suffixes {
		if strings.HasSuffix(t, s) {
			return true
		}
	}
	return false
}

// Terms appends the tokens of text that are not stop words, stemmed, to
// dst: what BM25 ranks.
func Terms(dst []string, text string) []string {
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

// isWord reports whether r is a letter or digit, of any script.
func isWord(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiWord[r]
	}
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// asciiWord holds the ASCII letters and digits.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for _, c := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789" {
		t[c] = true
	}
	return t
}()

// isJoiner reports whether r may join two runs into a compound.
func isJoiner(r rune) bool { return strings.ContainsRune(joiners, r) }

// joiners are the runes that join runs into a compound.
const joiners = "-_.:/"

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
	c.toks = Terms(c.toks[:0], text)
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
// [IDF] of its document frequency.
func (c *Corpus) IDF(term string) float64 {
	return IDF(len(c.docs), c.df[term])
}

// IDF returns the inverse document frequency of a term found in df of n
// documents, ln(1 + (n − df + 0.5)/(df + 0.5)): never negative, so a term
// found in every document still counts a little.
func IDF(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// TermScore returns one term's part of a document's BM25 score: the
// term's idf, its count tf in the document, the document's length in
// terms and the average length avg of the corpus's documents.
func TermScore(idf float64, tf, length int, avg float64) float64 {
	t := float64(tf)
	return idf * t * (K1 + 1) / (t + K1*(1-B+B*float64(length)/avg))
}

// Scorer scores texts one by one for a query whose document
// frequencies an index keeps itself: the sum [Corpus.Rank] makes, in the
// same order.
type Scorer struct {
	at  map[string]int
	idf []float64
	avg float64
}

// NewScorer returns the scorer of the distinct query terms terms,
// terms[j] weighed by idf[j], among documents of average length avg in
// terms.
func NewScorer(terms []string, idf []float64, avg float64) Scorer {
	at := make(map[string]int, len(terms))
	for j, t := range terms {
		at[t] = j
	}
	return Scorer{at, idf, avg}
}

// Score returns the BM25 score of text.
func (s Scorer) Score(text string) float64 {
	doc := Terms(nil, text)
	tf := make([]int, len(s.idf))
	for _, t := range doc {
		if j, ok := s.at[t]; ok {
			tf[j]++
		}
	}
	score := 0.0
	for j, n := range tf {
		if n > 0 {
			score += TermScore(s.idf[j], n, len(doc), s.avg)
		}
	}
	return score
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
	words := Terms(nil, query)
	seen := make(map[string]bool, len(words))
	avg := float64(c.length) / float64(len(c.docs))
	if avg == 0 {
		avg = 1
	}
	for _, t := range words {
		if !seen[t] && c.df[t] > 0 {
			seen[t] = true
			c.score(hits, t, avg)
		}
	}
	similarities(hits)
	slices.SortStableFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Doc, b.Doc))
	})
	return hits
}

// score adds to the hits the BM25 score of the term t, for the average
// document length avg.
func (c *Corpus) score(hits []Hit, t string, avg float64) {
	idf := c.IDF(t)
	for i, d := range c.docs {
		if tf := d.tf[t]; tf > 0 {
			hits[i].Score += TermScore(idf, tf, d.n, avg)
		}
	}
}

// similarities sets each hit's Similarity: its score over the top score,
// or 0 when no hit scores.
func similarities(hits []Hit) {
	top := 0.0
	for _, h := range hits {
		top = max(top, h.Score)
	}
	if top == 0 {
		return
	}
	for i := range hits {
		hits[i].Similarity = min(hits[i].Score/top, 1)
	}
}
