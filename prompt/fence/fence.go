package fence

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// Tag returns the tag a layer fences its block with: its ID with every '-'
// replaced by '_'. "working-memory" gives "working_memory"; a snake-case ID is its own tag.
// IDs are unique in a stack, so each layer has a fence of its own.
// The prompt compiler treats another layer's block wearing that tag as unfenced.
func Tag(layerID string) string {
	return strings.ReplaceAll(layerID, "-", "_")
}

// Wrap returns text in a block, <tag>\ntext\n</tag>, that the text cannot
// end early or open again.
// Every opener of a tag-like text naming tag becomes "&lt;" (see [Defang]).
// Nothing else changes, so code and JSON stay readable.
// tag should be a plain name such as "working_memory".
func Wrap(tag, text string) string {
	var b strings.Builder
	b.Grow(len(text) + 2*len(tag) + 8)
	b.WriteByte('<')
	b.WriteString(tag)
	b.WriteString(">\n")
	tags := [1]string{Skeleton(tag)}
	writeDefanged(&b, text, tags[:])
	b.WriteString("\n</")
	b.WriteString(tag)
	b.WriteByte('>')
	return b.String()
}

// Defang returns text with every tag-like text naming one of tags made
// inert: its opener is replaced by "&lt;". It returns text itself when
// nothing changes. [Wrap] defangs its own tag this way; the prompt
// compiler uses Defang to keep one block from forging another.
//
// Tag-like text is an opener, then any slashes, then a name whose
// skeleton starts with the skeleton of a tag. A skeleton ([Skeleton]) is
// what a reader (a model or a person) still recognises, computed from
// Unicode's data rather than a hand list: each character is normalised
// (NFKC), mapped to its prototype by Unicode's confusables table (UTS #39,
// from github.com/mtibben/confusables; the table is generated into
// fold_table.go, and a test regenerates it from the data and fails on any
// difference) and case-folded, combining marks
// and invisible characters (format and control characters: zero-width
// spaces and joiners, bidi marks, embeddings, overrides and isolates, the
// BOM, the soft hyphen ...) are dropped, and so are separators (white
// space, '_', '-', '.', dashes): "</working_memory>", "</Working Memory>",
// "</workingmemory>", "< / w o r k i n g _ m e m o r y >", "</wоrkіng_mеmоrу>"
// (Cyrillic letters) and "</pla\u0578>" (Armenian vo, for a tag "plan")
// are all tag-like. Letters a reader takes for one another share a
// skeleton: 'I', 'l' and '1', 'O' and '0', 'm' and "rn"; a character
// with no Latin prototype is a mismatch.
//
// Openers are '<' and the characters that look like it: those the
// confusables table maps to '<' ('＜', '﹤', '‹', '❮', '˂', 'ᐸ' ...), and
// other angle brackets a reader takes for one ('«', '〈', '⟨', '≺' ...).
// In text holding a right-to-left override, embedding or isolate (U+202E,
// U+202B, U+2067), which displays the letters after it reversed, a tag
// written backwards is tag-like too: a bracket ('<' or '>' or a look-alike,
// which the override may mirror) preceded by slashes and the name spelled
// from the bracket backwards (">nalp/<" displays as "</plan>"). That
// bracket is replaced: a '<' look-alike by "&lt;", a '>' one by "&gt;".
//
// The name only has to start with the tag, so "</working_memoryX>" is
// defanged too. Text that is not tag-like ("a < b", "<p>", "« hi »") is
// left alone.
func Defang(text string, tags ...string) string {
	if !mayHoldTag(text) {
		return text
	}
	var buf [16]string
	skels := buf[:0]
	for _, t := range tags {
		skels = append(skels, Skeleton(t))
	}
	return defang(text, skels)
}

// Skeleton returns the form in which [Defang] compares tag names: each
// character's skeleton (see Defang) concatenated, leading slashes,
// separators and invisible characters dropped. "working_memory",
// "Working-Memory" and "wоrkіng mеmоrу" have one skeleton. A character
// with no Latin prototype is kept as it is, so that a name holding one
// matches only itself.
func Skeleton(tag string) string {
	if len(tag) <= maxCachedTag {
		if s, ok := skelCache.Load(tag); ok {
			return s.(string)
		}
	}
	s := skeleton(tag)
	if len(tag) <= maxCachedTag && skelCached.Load() < maxSkelCache {
		if _, loaded := skelCache.LoadOrStore(tag, s); !loaded {
			skelCached.Add(1)
		}
	}
	return s
}

// skelCache holds the skeletons of up to maxSkelCache tags of at most
// maxCachedTag bytes: the compiler and Fence ask for the same few tags
// at every step.
var (
	skelCache  sync.Map // tag → skeleton
	skelCached atomic.Int64
)

const (
	maxSkelCache = 1 << 10
	maxCachedTag = 64
)

// skeleton computes Skeleton.
func skeleton(tag string) string {
	if isSkeleton(tag) {
		return tag
	}
	var b strings.Builder
	for _, r := range tag {
		switch f := foldRune(r); f.k {
		case kLetters:
			b.WriteString(f.s)
		case kIgnore, kSep:
		case kSlash:
			b.WriteString("/"[:min(b.Len(), 1)]) // not a leading slash
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isSkeleton reports whether tag is its own skeleton: ASCII characters
// each its own skeleton.
func isSkeleton(tag string) bool {
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; c >= utf8.RuneSelf || asciiFold[c] != (folded{s: string(c), k: kLetters}) {
			return false
		}
	}
	return true
}

// mayHoldTag reports whether text holds an opener or a non-ASCII
// character that could be one or a right-to-left control (each starts
// with a byte openerLead marks, or 0xE2): text without one has no
// tag-like text, and Defang returns it without computing skeletons.
func mayHoldTag(text string) bool {
	for i := 0; i < len(text); i++ {
		if openerLead[text[i]] || text[i] == 0xE2 {
			return true
		}
	}
	return false
}

// defang is Defang with the tags' skeletons.
func defang(text string, tags []string) string {
	rtl := reversedHits(text, tags)
	i, _ := nextOpener(text, tags)
	if i < 0 && len(rtl) == 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + 8)
	writeHits(&b, text, tags, rtl)
	return b.String()
}

// writeDefanged writes text with every opener of a tag-like text naming
// one of tags (skeletons) replaced by "&lt;".
func writeDefanged(b *strings.Builder, text string, tags []string) {
	writeHits(b, text, tags, reversedHits(text, tags))
}

// writeHits writes text with the opener of every tag-like text naming one
// of tags replaced by "&lt;", and the brackets at the offsets rtl (sorted)
// by "&lt;" or "&gt;".
func writeHits(b *strings.Builder, text string, tags []string, rtl []int) {
	pos := 0
	fwd, n := nextOpener(text, tags) // the next forward hit, at or after pos
	for {
		for len(rtl) > 0 && rtl[0] < pos {
			rtl = rtl[1:]
		}
		if len(rtl) > 0 && (fwd < 0 || rtl[0] < fwd) {
			pos = writeBracket(b, text, pos, rtl[0])
			continue
		}
		if fwd < 0 {
			b.WriteString(text[pos:])
			return
		}
		b.WriteString(text[pos:fwd])
		b.WriteString("&lt;")
		pos = fwd + n
		if fwd, n = nextOpener(text[pos:], tags); fwd >= 0 {
			fwd += pos
		}
	}
}

// writeBracket writes text[pos:i] and the bracket at text[i] as an
// entity, and returns the offset after the bracket.
func writeBracket(b *strings.Builder, text string, pos, i int) int {
	r, size := utf8.DecodeRuneInString(text[i:])
	b.WriteString(text[pos:i])
	b.WriteString(bracketEntities[foldRune(r).k == kCloser])
	return i + size
}

// bracketEntities are the entities of an opener (false) and of a closer.
var bracketEntities = map[bool]string{false: "&lt;", true: "&gt;"}

// nextOpener returns the offset and length of the first opener in s that
// starts a tag-like text naming one of tags, or -1.
func nextOpener(s string, tags []string) (int, int) {
	for i := 0; i < len(s); i++ {
		if !openerLead[s[i]] {
			continue
		}
		if n := openerAt(s, i, tags); n > 0 {
			return i, n
		}
	}
	return -1, 0
}

// openerAt returns the length of the opener at s[i] when it starts a
// tag-like text naming one of tags, or 0.
func openerAt(s string, i int, tags []string) int {
	for _, code := range openerCodes[s[i]] {
		if len(code) > 1 && (i+1 == len(s) || s[i+1] != code[1]) {
			continue // most characters sharing a first byte differ in the second
		}
		if strings.HasPrefix(s[i:], code) && namesTag(s[i+len(code):], tags) {
			return len(code)
		}
	}
	return 0
}

// The right-to-left controls that make the letters after them display
// reversed: RLE, RLO and RLI.
const (
	rle = "\u202b"
	rlo = "\u202e"
	rli = "\u2067"
)

// reversedHits returns the offsets, in order, of the brackets in text
// that end a tag-like text naming one of tags written backwards, when
// text holds a right-to-left control (see [Defang]); nil otherwise. Every
// text after the first such control is read this way.
func reversedHits(text string, tags []string) []int {
	from := firstRTL(text)
	if from < 0 {
		return nil
	}
	var hits []int
	for i, r := range text[from:] {
		if k := foldRune(r).k; (k == kOpener || k == kCloser) && namesTagBackward(text[:from+i], tags) {
			hits = append(hits, from+i)
		}
	}
	return hits
}

// firstRTL returns the offset of the first right-to-left control in
// text, or -1. (strings.Index per control is faster than IndexAny, which
// decodes every rune of text.)
func firstRTL(text string) int {
	from := -1
	for _, c := range [...]string{rlo, rle, rli} {
		if i := strings.Index(text, c); i >= 0 && (from < 0 || i < from) {
			from = i
		}
	}
	return from
}

// namesTag reports whether s, the text after an opener, is in skeleton
// form any slashes followed by one of tags (skeletons). It stops at the
// first character that rules out every tag, so past the tag's length it
// reads only invisible characters and separators.
func namesTag(s string, tags []string) bool { return spellsTag(s, tags, false) }

// namesTagBackward is namesTag reading s from its end backwards.
func namesTagBackward(s string, tags []string) bool { return spellsTag(s, tags, true) }

// spellsTag is namesTag reading s forwards, or backwards from its end.
func spellsTag(s string, tags []string, backward bool) bool {
	var buf [48]byte
	name := buf[:0]
	for len(s) > 0 {
		var r rune
		r, s = nextRune(s, backward)
		var live bool
		if name, live = step(name, foldRune(r), tags); !live {
			return false
		}
		if hasTag(name, tags) {
			return true
		}
	}
	return false
}

// nextRune returns the first rune of s, or its last when backward, and
// what is left of s without it.
func nextRune(s string, backward bool) (rune, string) {
	if backward {
		r, n := utf8.DecodeLastRuneInString(s)
		return r, s[:len(s)-n]
	}
	r, n := utf8.DecodeRuneInString(s)
	return r, s[n:]
}

// step adds the folded character f to name, the skeleton read so far
// after an opener, and reports whether name may still become one of tags.
func step(name []byte, f folded, tags []string) ([]byte, bool) {
	switch f.k {
	case kIgnore, kSep:
		return name, true
	case kSlash:
		return name, len(name) == 0
	case kLetters:
	default:
		return name, false
	}
	name = append(name, f.s...)
	for _, t := range tags {
		// One starts the other.
		if n := min(len(name), len(t)); t != "" && string(name[:n]) == t[:n] {
			return name, true
		}
	}
	return name, false
}

// hasTag reports whether name starts with one of tags.
func hasTag(name []byte, tags []string) bool {
	for _, t := range tags {
		if t != "" && len(name) >= len(t) && string(name[:len(t)]) == t {
			return true
		}
	}
	return false
}

// Classes of folded characters.
const (
	kLetters = iota // stands for the ASCII letters, digits or marks of s
	kSep            // a separator: white space, '_', '-', '.', a dash
	kIgnore         // invisible: skipped
	kSlash          // '/', '\' or a look-alike
	kOpener         // '<' or a look-alike
	kCloser         // '>' or a look-alike
	kOther          // no Latin prototype
)

// folded is a character in skeleton form: its class and, for kLetters,
// its skeleton (lower-case ASCII).
type folded struct {
	s string
	k uint8
}

// asciiFold holds the folded form of every ASCII character.
var asciiFold = func() (t [utf8.RuneSelf]folded) {
	for c := range rune(utf8.RuneSelf) {
		switch {
		case c == ' ' || c == '_' || c == '-' || c == '.' || '\t' <= c && c <= '\r':
			t[c] = folded{k: kSep}
		case c < ' ' || c == 0x7f:
			t[c] = folded{k: kIgnore}
		case c == '/' || c == '\\':
			t[c] = folded{s: "/", k: kSlash}
		case c == '<':
			t[c] = folded{s: "<", k: kOpener}
		case c == '>':
			t[c] = folded{s: ">", k: kCloser}
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9':
			t[c] = folded{s: asciiSkeletons[unicode.ToLower(c)], k: kLetters}
		default:
			t[c] = folded{s: string(c), k: kLetters}
		}
	}
	return t
}()

// foldRune returns r in skeleton form.
func foldRune(r rune) folded {
	if r < utf8.RuneSelf {
		return asciiFold[r]
	}
	return foldSlow(r)
}

// foldSlow computes the skeleton form of a non-ASCII character.
func foldSlow(r rune) folded {
	if f, ok := foldClass(r); ok {
		return f
	}
	return foldData(r)
}

// foldClass classifies the non-ASCII characters the table does not hold:
// brackets, white space and separators, invisible characters.
func foldClass(r rune) (folded, bool) {
	switch {
	case isOpener(r):
		return folded{s: "<", k: kOpener}, true
	case isCloser(r):
		return folded{s: ">", k: kCloser}, true
	case unicode.IsSpace(r) || unicode.In(r, unicode.Zs, unicode.Pd, unicode.Pc) || strings.ContainsRune(blanks, r):
		return folded{k: kSep}, true
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Mn, unicode.Me, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point):
		return folded{k: kIgnore}, true
	}
	return folded{}, false
}

// blanks are the Braille blank and the Hangul fillers, which look like
// spaces.
const blanks = "\u2800\u3164\uFFA0\u115F\u1160"

// foldData returns the skeleton form of r that Unicode's data gives (see
// fold_table.go), or kOther.
func foldData(r rune) folded {
	i, ok := slices.BinarySearch(foldRunes[:], r)
	if !ok {
		return folded{k: kOther}
	}
	v := foldValues[i]
	return folded{s: v[1:], k: v[0] - '0'}
}

// openers are '<' and the characters that look like it: those Unicode's
// confusables table maps to '<' (TestTrust319_BracketsFromData checks the
// list against it) and other angle brackets. closers are their
// counterparts, openers in right-to-left text.
const (
	openers = "<\uFF1C\uFE64\u2039\u00AB\u2329\u3008\u300A\u27E8\u27EA\u276C\u276E\u2770\u02C2\u1438\u16B2\U0001D236\u29FC\u2989\u2991\u227A\u22D6"
	closers = ">\uFF1E\uFE65\u203A\u00BB\u232A\u3009\u300B\u27E9\u27EB\u276D\u276F\u2771\u02C3\u1433\U0001D237\u29FD\u298A\u2992\u227B\u22D7"
)

// openerCodes holds the UTF-8 encodings of the openers by their first
// byte, and openerLead marks those bytes, so that finding an opener takes
// a table look-up per byte of text.
var openerCodes, openerLead = func() (codes [256][]string, lead [256]bool) {
	for _, r := range openers {
		e := string(r)
		codes[e[0]] = append(codes[e[0]], e)
		lead[e[0]] = true
	}
	return codes, lead
}()

// isOpener reports whether r is '<' or looks like it.
func isOpener(r rune) bool { return strings.ContainsRune(openers, r) }

// isCloser reports whether r is '>' or looks like it.
func isCloser(r rune) bool { return strings.ContainsRune(closers, r) }
