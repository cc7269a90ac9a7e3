// Package redact masks personal data and secrets in text before memlayer
// stores it: e-mail addresses, phone numbers, payment card numbers, IBANs,
// and API keys and bearer tokens.
//
// A [Redactor] is one method. [Default] is the built-in one; [New] builds
// one for some kinds only, or with another mask. A user who needs more
// (names, addresses, a vendor's key format) writes their own Redactor, or
// wraps Default with [Func].
//
// Redaction must never alter an identifier: a long numeric page ID is not
// a card number, and a tool-call ID is not a token. The built-in rules keep
// identifiers three ways:
//
//   - every string the caller passes in keep is left as it is, wherever it
//     appears (the entity IDs, tool-call IDs and IDs in tool arguments that
//     memlayer knows of);
//   - a number or token under a JSON key that names an identifier ("id",
//     "ids", "page_id", "pageId", "uuid", "ref", ...), or right after an
//     identifier's word in text ("id 4111…", "ID: …", "#4111…", "order
//     no. 0815-4711-22", "invoice 4000 0012 3456 7899"), is not taken for a
//     card, phone number or secret; an e-mail address or an IBAN is masked
//     whatever its label ("Apple ID: bob@example.com", a "login_id" that
//     holds an address), and a label that names a card, account or phone
//     ("CC# 5500…", "Account# GB82…", "Tel# …") is not an identifier's;
//   - numbers are checked before they are masked: a card number must have
//     a card network's prefix and length and pass the Luhn check, an IBAN
//     its country format and the mod-97 check, and a phone number must be
//     written as one (a leading +, a parenthesised area code, North
//     American groups, or a national trunk 0 and two groups or more) and
//     be a valid number under its country's numbering plan
//     (libphonenumber's metadata, generated from
//     github.com/nyaruka/phonenumbers: see plans.go; [Config].Regions says
//     which countries' national numbers are recognised), so a bare run of digits, a date (01.04.2026), a version
//     or an order number grouped like a phone number is none of them.
//
// E-mail addresses may be internationalised (RFC 6531): letters of any
// script in the local part and the domain (jürgen@bücher.de).
//
// A text that is one JSON object or array (a tool result, tool call
// arguments) is redacted value by value rather than as text: each string
// is decoded, redacted and its masks written back escaped, a string that
// holds a JSON document itself (another service's response carried as an
// escaped string) is redacted as a document at any depth, numbers are
// read as written (never through a float64), and identifier keys are
// known at every depth. The result is valid JSON with the same members,
// and nothing but the masked values changes, byte for byte; a number that
// must be masked becomes the mask as a JSON string.
package redact

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is a kind of data a redactor masks.
type Kind string

// The kinds the built-in rules find.
const (
	Email  Kind = "email"
	Phone  Kind = "phone"
	Card   Kind = "card"
	IBAN   Kind = "iban"
	Secret Kind = "secret" // API keys, bearer tokens, passwords in key=value form
)

// Kinds lists every built-in kind, in the order the rules run.
var Kinds = []Kind{Secret, Email, IBAN, Card, Phone}

// Finding is one masked span: Text[Start:End] of the input was of Kind.
type Finding struct {
	Kind       Kind
	Start, End int
}

// A Redactor masks what must not be stored. Redact returns text with
// every span it finds replaced by a mask, and the spans (offsets in the
// input). It must never alter any occurrence of a string in keep, and it
// must be safe for concurrent use. In a JSON document the built-in rules
// write a mask as the JSON around it needs: escaped inside a string,
// quoted in place of a number.
type Redactor interface {
	Redact(text string, keep []string) (string, []Finding)
}

// Func adapts a function to a [Redactor].
type Func func(text string, keep []string) (string, []Finding)

// Redact calls f.
func (f Func) Redact(text string, keep []string) (string, []Finding) { return f(text, keep) }

// Config configures [New]. The zero value masks every kind with
// "[redacted <kind>]".
type Config struct {
	// Kinds to mask; nil means all of [Kinds].
	Kinds []Kind
	// Mask returns the text a finding is replaced with; nil gives
	// "[redacted <kind>]". It gets the kind and the masked text.
	Mask func(k Kind, text string) string
	// Regions are the regions (ISO 3166 codes, "GB", "DE") whose national
	// phone numbers are recognised: a number written without its country
	// code is masked when it is a valid number of one of them (checked
	// with libphonenumber's metadata). A number written with a + and its
	// country code is checked against its own country. Nil is
	// [DefaultRegions]; a code libphonenumber does not know is ignored.
	Regions []string
}

// DefaultRegions are the regions whose national phone numbers the built-in
// rules recognise unless [Config].Regions says otherwise.
var DefaultRegions = []string{"US", "GB", "DE", "FR", "ES", "NL", "AU"}

// Default masks every built-in kind. It is safe for concurrent use.
var Default Redactor = New(Config{})

// rules is the built-in Redactor.
type rules struct {
	kinds   []Kind
	mask    func(Kind, string) string
	regions []string
}

// New returns a Redactor with the built-in rules for cfg.Kinds.
func New(cfg Config) Redactor {
	regions := cfg.Regions
	if regions == nil {
		regions = DefaultRegions
	}
	r := &rules{kinds: Kinds, mask: cfg.Mask}
	for _, c := range regions {
		r.regions = append(r.regions, strings.ToUpper(c))
	}
	if cfg.Kinds != nil {
		r.kinds = nil
		for _, k := range Kinds { // keep the rules' order
			if slices.Contains(cfg.Kinds, k) {
				r.kinds = append(r.kinds, k)
			}
		}
	}
	if r.mask == nil {
		r.mask = func(k Kind, _ string) string { return "[redacted " + string(k) + "]" }
	}
	return r
}

// Redact implements [Redactor].
func (r *rules) Redact(text string, keep []string) (string, []Finding) {
	if text == "" {
		return text, nil
	}
	var found []span
	if isDocument(text) {
		found = r.document(text, keep)
	} else {
		found = r.text(text, keep)
	}
	if len(found) == 0 {
		return text, nil
	}
	out := make([]Finding, len(found))
	for i, f := range found {
		out[i] = f.Finding
	}
	return apply(text, found), out
}

// span is a finding and what replaces it.
type span struct {
	Finding
	repl string
}

// minFinding is the length of the shortest text a rule can find (an
// e-mail address such as a@b.co); shorter text is not looked at.
const minFinding = 6

// text returns the spans of plain text to mask, in order.
func (r *rules) text(text string, keep []string) []span { return r.textIn(text, keep, false) }

// textIn returns the spans of plain text to mask, in order. In an
// identifier's value (idValue: a string under an identifier-named JSON
// key) only the kinds that carry their own proof are looked for (see
// contextual).
func (r *rules) textIn(text string, keep []string, idValue bool) []span {
	if len(text) < minFinding {
		return nil
	}
	protected := keptSpans(text, keep)
	var found []span
	for _, k := range r.kinds {
		if idValue && contextual(k) {
			continue
		}
		found = r.appendFound(found, k, text, protected)
	}
	slices.SortFunc(found, func(a, b span) int { return a.Start - b.Start })
	return found
}

// appendFound appends to found the spans of kind k in text that overlap
// no span found already, are not protected, and are not an identifier's
// labelled value.
func (r *rules) appendFound(found []span, k Kind, text string, protected [][2]int) []span {
	for _, m := range r.find(k, text) {
		f := Finding{Kind: k, Start: m[0], End: m[1]}
		if !overlaps(found, f) && !kept(protected, f) && !labelledID(text, f) {
			found = append(found, span{f, r.mask(k, text[f.Start:f.End])})
		}
	}
	return found
}

// contextual reports whether a finding of kind k may be an identifier
// rather than what it looks like, so that an identifier's key or label
// before it ("order #", "ID:", "page_id") keeps it: card and phone numbers
// (a numeric ID can pass a card's checks or be grouped like a phone
// number) and secrets (an opaque token can be an ID). An e-mail address
// or an IBAN (its country format and mod-97 check) is what it looks like
// whatever its label says: "Apple ID: bob@example.com" is an address.
func contextual(k Kind) bool { return k == Card || k == Phone || k == Secret }

// labelledID reports whether f, a finding that may be an identifier, is
// the value of an identifier's key or label.
func labelledID(text string, f Finding) bool {
	return contextual(f.Kind) && afterIdentifier(text, f.Start)
}

// keptSpans returns the spans of text that hold a string of keep.
func keptSpans(text string, keep []string) [][2]int {
	var out [][2]int
	for _, k := range keep {
		if k == "" {
			continue
		}
		for i := 0; ; {
			j := strings.Index(text[i:], k)
			if j < 0 {
				break
			}
			out = append(out, [2]int{i + j, i + j + len(k)})
			i += j + 1
		}
	}
	return out
}

func overlaps(spans []span, f Finding) bool {
	for _, s := range spans {
		if f.Start < s.End && s.Start < f.End {
			return true
		}
	}
	return false
}

// kept reports whether f overlaps a kept span.
func kept(spans [][2]int, f Finding) bool {
	for _, s := range spans {
		if f.Start < s[1] && s[0] < f.End {
			return true
		}
	}
	return false
}

// find returns the candidates of kind k in text, already checked (Luhn,
// mod-97, a region's numbering plan, shape), as index pairs. Each finder
// scans the text once for what must be there (an '@', a digit, a known
// prefix) and runs its regular expression only on the short stretch
// around it: Go's regexp engine walks every byte of a long text when a
// pattern has no literal prefix.
func (r *rules) find(k Kind, text string) [][2]int {
	switch k {
	case Email:
		return findEmails(text)
	case Phone:
		return r.findPhones(text)
	case Card:
		return findCards(text)
	case IBAN:
		return findIBANs(text)
	case Secret:
		return findSecrets(text)
	}
	return nil
}

var (
	emailRE = regexp.MustCompile(`^[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,24}$`)
	// A phone number: an optional +country code, then groups of digits
	// separated by single spaces, dots, dashes or a parenthesised area
	// code. isPhone decides whether it is written as one.
	phoneRE = regexp.MustCompile(`(?:\+\d{1,3}[ .\-]?)?(?:\(\d{1,5}\)[ .\-]?)?\d{1,5}(?:[ .\-]\d{2,8}){1,4}|\+\d{7,15}`)
)

// findEmails finds e-mail addresses around each '@': ASCII ones, and
// internationalised ones (RFC 6531: letters of any script in the local
// part, an internationalised domain name).
func findEmails(text string) [][2]int {
	var out [][2]int
	for i := 0; ; {
		k := strings.IndexByte(text[i:], '@')
		if k < 0 {
			return out
		}
		at := i + k
		start, end := emailStart(text, at), emailEnd(text, at)
		if isEmail(text[start:end]) && standsAlone(text, start, end) {
			out = append(out, [2]int{start, end})
		}
		i = max(end, at+1)
	}
}

// emailStart returns where the address around the '@' at text[at]
// starts: its local part's runes back from the '@', stopping where text
// written without spaces changes script (メールはinfo@example.comです).
func emailStart(text string, at int) int {
	start := at
	for prev := '@'; start > 0; {
		c, size := utf8.DecodeLastRuneInString(text[:start])
		if !isEmailRune(c, true) || scriptChange(c, prev) {
			break
		}
		start, prev = start-size, c
	}
	return start
}

// emailEnd returns where the address around the '@' at text[at] ends: its
// domain's runes on from the '@', as emailStart stops, less a sentence's
// full stop or a trailing dash.
func emailEnd(text string, at int) int {
	end := at + 1
	for prev := '@'; end < len(text); {
		c, size := utf8.DecodeRuneInString(text[end:])
		if !isEmailRune(c, false) || scriptChange(c, prev) {
			break
		}
		end, prev = end+size, c
	}
	return at + len(strings.TrimRight(text[at:end], ".-"))
}

// isEmailRune reports whether c may be part of an e-mail address's local
// part (local) or domain.
func isEmailRune(c rune, local bool) bool {
	if c < utf8.RuneSelf {
		return isEmailByte(byte(c), local)
	}
	return unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.In(c, unicode.Mn, unicode.Mc)
}

// scriptChange reports whether two adjacent letters or digits, a and b,
// are one of a script written without spaces between words (Han, kana,
// Hangul, Thai) and the other not: the edge of an address written in
// such text.
func scriptChange(a, b rune) bool {
	wordy := func(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }
	if !wordy(a) || !wordy(b) {
		return false
	}
	return unspaced(a) != unspaced(b)
}

func unspaced(c rune) bool {
	return c >= 0x0E00 && unicode.In(c, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai)
}

func isEmailByte(c byte, local bool) bool {
	if local {
		return byteClass[c]&clEmailLocal != 0
	}
	return byteClass[c]&clEmailDomain != 0
}

// Byte classes of byteClass.
const (
	clDigit       = 1 << iota // 0-9
	clUpper                   // A-Z
	clWord                    // letters, digits and '_'
	clEmailDomain             // letters, digits, '.' and '-'
	clEmailLocal              // an e-mail domain's bytes, '_', '%' and '+'
	clBlank                   // ' ', '\t', '\n', '\r', '"' and '\\' (before a value)
)

// byteClass holds the classes of each byte.
var byteClass = byteClasses()

func byteClasses() (t [256]uint8) {
	const (
		digits = "0123456789"
		upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		lower  = "abcdefghijklmnopqrstuvwxyz"
	)
	for _, c := range []struct {
		bits uint8
		set  string
	}{
		{clDigit, digits},
		{clUpper, upper},
		{clWord, digits + upper + lower + "_"},
		{clEmailDomain, digits + upper + lower + ".-"},
		{clEmailLocal, digits + upper + lower + ".-_%+"},
		{clBlank, " \t\n\r\"\\"},
	} {
		for i := 0; i < len(c.set); i++ {
			t[c.set[i]] |= c.bits
		}
	}
	return t
}

// isEmail reports whether s, made of isEmailRune's runes and one '@', is
// an e-mail address: a local part, and a domain of two labels or more
// whose last (the top-level domain) is letters only, two or more of them
// (or an A-label, "xn--"). A label of an internationalised domain is
// letters, digits and hyphens of any script, not starting or ending with
// a hyphen.
func isEmail(s string) bool {
	if isASCII(s) {
		return emailRE.MatchString(s)
	}
	local, domain, ok := strings.Cut(s, "@")
	if !ok || !validLocalPart(local) {
		return false
	}
	labels := strings.Split(domain, ".")
	return len(labels) >= 2 && !slices.ContainsFunc(labels, badLabel) && validTLD(labels[len(labels)-1])
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// validLocalPart reports whether an internationalised address's local
// part is not empty and has no dot at either end or two in a row.
func validLocalPart(local string) bool {
	return local != "" && strings.Trim(local, ".") == local && !strings.Contains(local, "..")
}

// badLabel reports whether l cannot be a label of an internationalised
// domain name: empty, a hyphen at either end, or a byte only a local
// part may hold.
func badLabel(l string) bool {
	return l == "" || strings.Trim(l, "-") != l || strings.ContainsAny(l, "_%+")
}

// validTLD reports whether an internationalised domain's top-level label
// is an A-label ("xn--" and more) or 2 to 63 letters.
func validTLD(tld string) bool {
	if strings.HasPrefix(tld, "xn--") {
		return len(tld) > 4
	}
	n := 0
	for _, c := range tld {
		if !unicode.IsLetter(c) && !unicode.In(c, unicode.Mn, unicode.Mc) {
			return false
		}
		n++
	}
	return n >= 2 && n <= 63
}

// numberRuns returns the stretches of text made of digits and single
// separators from seps between them (for phones, also a leading '+' and
// a parenthesised group), each ending on a digit.
func numberRuns(text string, seps string, phone bool) [][2]int {
	var out [][2]int
	for i := 0; i < len(text); i++ {
		startsPhone := phone && (text[i] == '+' || text[i] == '(') && isDigitAt(text, i+1)
		if !isDigitAt(text, i) && !startsPhone {
			continue
		}
		end := runEnd(text, i, seps, phone)
		if end > i {
			out = append(out, [2]int{i, end})
		}
		i = max(end, i)
	}
	return out
}

// isDigitAt reports whether text[i] is an ASCII digit.
func isDigitAt(text string, i int) bool { return i < len(text) && byteClass[text[i]]&clDigit != 0 }

// runEnd returns the end of the run numberRuns finds at i: just after its
// last digit, or i when it holds none.
func runEnd(text string, i int, seps string, phone bool) int {
	end := i
	for j := i + 1; j <= len(text); j++ {
		if isDigitAt(text, j-1) {
			end = j
		}
		if j == len(text) || !continuesRun(text, j, seps, phone) {
			break
		}
	}
	return end
}

// continuesRun reports whether text[j] may stand inside a run: a digit, a
// separator before a digit, or, for phones, a parenthesised group.
func continuesRun(text string, j int, seps string, phone bool) bool {
	c := text[j]
	if isDigitAt(text, j) || phone && parenGroup(text, j) {
		return true
	}
	return strings.IndexByte(seps, c) >= 0 && (isDigitAt(text, j+1) || phone && j+1 < len(text) && text[j+1] == '(')
}

// parenGroup reports whether text[j] opens a parenthesised group before a
// digit or closes one after a digit.
func parenGroup(text string, j int) bool {
	return text[j] == '(' && isDigitAt(text, j+1) || text[j] == ')' && j > 0 && isDigitAt(text, j-1)
}

// findPhones finds phone numbers in the runs of digits and separators.
func (r *rules) findPhones(text string) [][2]int {
	var out [][2]int
	for _, m := range numberRuns(text, " .-", true) {
		run := text[m[0]:m[1]]
		for _, p := range phoneRE.FindAllStringIndex(run, -1) {
			start, end := m[0]+p[0], m[0]+p[1]
			if standsAlone(text, start, end) && !glued(text, start, end) && r.isPhone(text[start:end]) {
				out = append(out, [2]int{start, end})
			}
		}
	}
	return out
}

// glued reports whether text[start:end] is part of a longer number
// joined by dots or dashes (a version 2.0.2457.59292, a tracking code):
// a dot or dash between it and a digit on either side.
func glued(text string, start, end int) bool {
	sep := func(i int) bool { return i >= 0 && i < len(text) && (text[i] == '.' || text[i] == '-') }
	return sep(start-1) && start >= 2 && isDigitAt(text, start-2) || sep(end) && isDigitAt(text, end+1)
}

// standsAlone reports whether text[start:end] is not part of a longer
// word or number.
func standsAlone(text string, start, end int) bool {
	return (start == 0 || !isWordByte(text[start-1])) && (end == len(text) || !isWordByte(text[end]))
}

func isWordByte(c byte) bool { return byteClass[c]&clWord != 0 }

// digits returns the digits of s.
func digits(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if isDigitAt(s, i) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// isPhone reports whether s is a phone number. It must be written as
// one, with 7 to 15 digits: international (a leading +), with a
// parenthesised area code, North American (3-3-4 groups, maybe after a
// 1), or national with a leading trunk 0 in two groups or more (07911
// 123456, 020 7946 0958); a bare run of digits, an amount (10 000 000), a
// date (01.04.2026) or an IP address is not one. Then it must be a valid
// number (libphonenumber's metadata: its country's lengths and number
// ranges) of its country code, or of one of the rules' regions when it
// is written without one.
func (r *rules) isPhone(s string) bool {
	n := len(digits(s))
	if n < 7 || n > 15 {
		return false
	}
	if s[0] == '+' {
		return validPhone(s, nil)
	}
	g := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '.' || r == '-' })
	if !writtenAsPhone(s, g) || isDate(g) {
		return false
	}
	return validPhone(s, r.regions)
}

// writtenAsPhone reports whether s, a number without a leading + in the
// groups g, is written as a phone number: North American groups (3-3-4,
// maybe after a 1), a national trunk 0 in two groups or more, or a
// parenthesised area code.
func writtenAsPhone(s string, g []string) bool {
	if len(g) > 0 && g[0] == "1" {
		g = g[1:] // the North American country code
	}
	nanp := slices.Equal(groupLengths(g), []int{3, 3, 4})
	national := len(g) >= 2 && s[0] == '0' && len(g[0]) >= 2
	return nanp || national || strings.Contains(s, "(")
}

// groupLengths returns the lengths of the groups g.
func groupLengths(g []string) []int {
	n := make([]int, len(g))
	for i, s := range g {
		n[i] = len(s)
	}
	return n
}

func atoi(d string) int {
	v := 0
	for i := 0; i < len(d); i++ {
		v = v*10 + int(d[i]-'0')
	}
	return v
}

// isDate reports whether the groups of a number are a date: day, month
// and year (or year, month and day, or month, day and year), as in
// 01.04.2026, 03-04-2026 or 2026-04-01.
func isDate(g []string) bool {
	if len(g) != 3 {
		return false
	}
	year := len(g[2]) == 4 || len(g[2]) == 2
	return year && dayMonth(g[0], g[1]) || len(g[0]) == 4 && dateField(g[1], 12) && dateField(g[2], 31)
}

// dayMonth reports whether a and b are a day and a month, in either
// order.
func dayMonth(a, b string) bool {
	return dateField(a, 31) && dateField(b, 12) || dateField(a, 12) && dateField(b, 31)
}

// dateField reports whether s is a day or month: one or two digits from
// 1 to most.
func dateField(s string, most int) bool {
	v := atoi(s)
	return len(s) <= 2 && v >= 1 && v <= most
}

// findCards finds payment card numbers: 13 to 19 digits, whole or
// grouped by single spaces or dashes, with a known network's prefix and
// length, passing the Luhn check. In a run of groups (a card number
// followed by a year, say) the spans of whole groups from the run's first
// are tried, longest first: a card does not start in the middle of a
// longer grouped number (a 22-digit tracking number); a run of digits
// glued together is tried whole only.
func findCards(text string) [][2]int {
	var out [][2]int
	for _, m := range numberRuns(text, " -", false) {
		if !standsAlone(text, m[0], m[1]) {
			continue
		}
		if end := cardIn(text, m); end > 0 {
			out = append(out, [2]int{m[0], end})
		}
	}
	return out
}

// cardIn returns the end of the longest card number that starts the run
// m of text and ends at the end of one of its groups, or 0.
func cardIn(text string, m [2]int) int {
	ends := []int{m[1]}
	for i := m[1] - 1; i > m[0]; i-- {
		if text[i] == ' ' || text[i] == '-' {
			ends = append(ends, i)
		}
	}
	for _, end := range ends {
		if d := digits(text[m[0]:end]); isCard(d) {
			return end
		}
	}
	return 0
}

// isCard reports whether the digits d are a card number: a network's
// prefix and length, and the Luhn check.
func isCard(d string) bool { return len(d) >= 13 && len(d) <= 19 && cardNetwork(d) && luhn(d) }

// cardNetwork reports whether d has the prefix (issuer identification
// number range) and a length of a major card network.
func cardNetwork(d string) bool {
	for _, r := range cardRanges {
		if p := atoi(d[:min(r.k, len(d))]); p >= r.lo && p <= r.hi {
			return r.lengths&(1<<len(d)) != 0
		}
	}
	return false
}

// cardRange is a range of card numbers' first k digits, lo to hi, and the
// lengths (a bit each) a network issues in it.
type cardRange struct {
	k, lo, hi int
	lengths   uint32
}

// lengths returns the bits of the lengths from lo to hi.
func lengths(lo, hi int) uint32 { return 1<<(hi+1) - 1<<lo }

// cardRanges are the major networks' ranges, the first that holds a
// number deciding.
var cardRanges = []cardRange{
	{1, 4, 4, lengths(13, 13) | lengths(16, 16) | lengths(19, 19)}, // Visa
	{2, 51, 55, lengths(16, 16)},                                   // Mastercard
	{4, 2221, 2720, lengths(16, 16)},                               // Mastercard
	{2, 34, 34, lengths(15, 15)},                                   // American Express
	{2, 37, 37, lengths(15, 15)},                                   // American Express
	{4, 6011, 6011, lengths(16, 19)},                               // Discover
	{2, 65, 65, lengths(16, 19)},                                   // Discover
	{3, 644, 649, lengths(16, 19)},                                 // Discover
	{2, 62, 62, lengths(16, 19)},                                   // UnionPay
	{2, 36, 36, lengths(14, 19)},                                   // Diners Club
	{2, 38, 39, lengths(14, 19)},                                   // Diners Club
	{3, 300, 305, lengths(14, 19)},                                 // Diners Club
	{4, 3528, 3589, lengths(16, 19)},                               // JCB
}

// luhn reports whether the digits d pass the Luhn check.
func luhn(d string) bool {
	sum := 0
	for i := range len(d) {
		v := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return sum%10 == 0
}

// ibanLengths is the length of an IBAN in each country that issues them
// (ISO 13616 registry).
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
	"ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
	"HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
	"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
	"MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29,
	"RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// findIBANs finds IBANs: a country's code and length (its characters
// whole or in groups separated by single spaces) and the mod-97 check.
func findIBANs(text string) [][2]int {
	var out [][2]int
	for s := 0; s+4 <= len(text); s++ {
		if !ibanStarts(text, s) {
			continue
		}
		n, ok := ibanLengths[text[s:s+2]]
		if !ok {
			continue
		}
		if end := ibanEnd(text, s, n); end > 0 {
			out = append(out, [2]int{s, end})
		}
	}
	return out
}

// ibanShape is the class of each of an IBAN's first four bytes.
var ibanShape = [4]uint8{clUpper, clUpper, clDigit, clDigit}

// ibanStarts reports whether an IBAN may start at text[s]: two capitals
// and two digits, not inside a word.
func ibanStarts(text string, s int) bool {
	for k, cl := range ibanShape {
		if byteClass[text[s+k]]&cl == 0 {
			return false
		}
	}
	return s == 0 || !isWordByte(text[s-1])
}

// ibanEnd returns the end of the IBAN of n characters at text[s] (its
// letters and digits, a single space allowed between them), or 0 when it
// is cut short, runs on into a word or fails the mod-97 check.
func ibanEnd(text string, s, n int) int {
	c, i := ibanChars(text, s, n)
	if len(c) < n || i < len(text) && isWordByte(text[i]) || !mod97(string(c)) {
		return 0
	}
	return i
}

// ibanChars reads up to n letters and digits from text[s], a single
// space allowed between them, and returns them and where it stopped. A
// space that does not stand between two of them cuts it short: nothing
// is returned.
func ibanChars(text string, s, n int) ([]byte, int) {
	c := make([]byte, 0, n)
	i := s
	for ; i < len(text) && len(c) < n; i++ {
		switch ch := text[i]; {
		case byteClass[ch]&(clDigit|clUpper) != 0:
			c = append(c, ch)
		case ch != ' ' || i+1 == len(text) || text[i+1] == ' ':
			return nil, i // cut short
		}
	}
	return c, i
}

// mod97 reports whether the IBAN c (no spaces) passes the mod-97 check.
func mod97(c string) bool {
	// Move the first four characters to the end, read letters as 10..35,
	// and take the number mod 97, digit by digit.
	rem := 0
	for _, ch := range c[4:] + c[:4] {
		switch {
		case ch >= '0' && ch <= '9':
			rem = (rem*10 + int(ch-'0')) % 97
		case ch >= 'A' && ch <= 'Z':
			rem = (rem*100 + int(ch-'A'+10)) % 97
		default:
			return false
		}
	}
	return rem == 1
}

// Secrets: tokens with a recognisable prefix (checked whole by
// prefixedKeyRE), the token after "Bearer", and the value of a key named
// like a secret.
var (
	keyPrefixes   = []string{"sk-", "sk_", "pk_", "rk_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "AKIA", "AIza", "eyJ"}
	prefixedKeyRE = regexp.MustCompile(`^(?:(?:sk|pk|rk)[-_](?:(?:live|test|proj|ant)[-_])?[A-Za-z0-9_\-]{16,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|xox[abprs]-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{35}|eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})$`)
	secretKeys    = []string{"api_key", "api-key", "apikey", "secret", "password", "passwd", "access_token", "access-token", "auth_token", "auth-token", "private_key", "private-key"}
)

// findSecrets finds secrets: a prefixed key or JWT whole, and for the
// bearer and key=value forms only the value.
func findSecrets(text string) [][2]int {
	lower := asciiLower(text)
	out := prefixedKeys(text, nil)
	out = bearerTokens(text, lower, out)
	return keyedSecrets(text, lower, out)
}

// prefixedKeys appends to out the tokens of text that start with a key
// prefix and match prefixedKeyRE whole.
func prefixedKeys(text string, out [][2]int) [][2]int {
	for _, p := range keyPrefixes {
		for i := 0; ; {
			k := strings.Index(text[i:], p)
			if k < 0 {
				break
			}
			start := i + k
			end := start + len(strings.TrimRight(text[start:tokenEnd(text, start, "-.")], "."))
			if (start == 0 || !isWordByte(text[start-1])) && prefixedKeyRE.MatchString(text[start:end]) {
				out = append(out, [2]int{start, end})
			}
			i = end
		}
	}
	return out
}

// bearerTokens appends to out the token after each "bearer" of lower
// (text lowered), at least 16 bytes long.
func bearerTokens(text, lower string, out [][2]int) [][2]int {
	for i := 0; ; {
		k := strings.Index(lower[i:], "bearer")
		if k < 0 {
			break
		}
		j := i + k + len("bearer")
		if v := skipSpaces(text, j); v > j {
			if end := tokenEnd(text, v, "._~+/-="); end-v >= 16 {
				out = append(out, [2]int{v, end})
			}
		}
		i = j
	}
	return out
}

// keyedSecrets appends to out the value of each key named like a secret:
// key"?\s*[:=]\s*"?value, at least 8 bytes long.
func keyedSecrets(text, lower string, out [][2]int) [][2]int {
	for _, key := range secretKeys {
		for i := 0; ; {
			k := strings.Index(lower[i:], key)
			if k < 0 {
				break
			}
			// key"?\s*[:=]\s*"? value, the quotes maybe escaped (JSON
			// written as a string inside text)
			j := skipSpaces(text, skipQuote(text, i+k+len(key)))
			if v, end := keyedValue(text, j); end-v >= 8 {
				out = append(out, [2]int{v, end})
			}
			i = j
		}
	}
	return out
}

// keyedValue returns the value after the ':' or '=' at text[j], past
// spaces and an opening quote: up to a space, a quote or a punctuation
// mark that ends it. It returns j, j when text[j] is neither.
func keyedValue(text string, j int) (v, end int) {
	if j == len(text) || text[j] != ':' && text[j] != '=' {
		return j, j
	}
	v = skipQuote(text, skipSpaces(text, j+1))
	end = v
	for end < len(text) && !strings.ContainsRune(" \t\r\n\"',;}", rune(text[end])) && skipQuote(text, end) == end {
		end++
	}
	return v, end
}

// asciiLower returns text with ASCII letters lowered and every other
// byte as it is, so offsets into it are offsets into text.
func asciiLower(text string) string {
	if !strings.ContainsFunc(text, func(r rune) bool { return r >= 'A' && r <= 'Z' }) {
		return text
	}
	b := []byte(text)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// skipQuote returns the index past the quote at text[i], escaped by any
// number of backslashes, or i when there is none.
func skipQuote(text string, i int) int {
	j := i
	for j < len(text) && text[j] == '\\' {
		j++
	}
	if j < len(text) && text[j] == '"' {
		return j + 1
	}
	return i
}

func skipSpaces(text string, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	return i
}

// tokenEnd returns the end of the token at text[i]: letters, digits and
// the bytes of also.
func tokenEnd(text string, i int, also string) int {
	for i < len(text) && (isWordByte(text[i]) || strings.IndexByte(also, text[i]) >= 0) {
		i++
	}
	return i
}

// afterIdentifier reports whether the text at start is the value of an
// identifier: a JSON member whose key names one ("id", "page_id",
// "pageId", "ids": [...]), or text right after an identifier word ("id",
// "ID:", "#").
func afterIdentifier(text string, start int) bool {
	i := valueStart(text, start)
	if i > 0 && text[i-1] == '#' {
		// "#4111…", "order #…" name an identifier; "CC# 5500…",
		// "Account# GB82…" name what they label.
		w, _ := wordBefore(text, i-1)
		return !labelsPersonal(w)
	}
	if i > 0 && (text[i-1] == ':' || text[i-1] == '=') {
		i = len(strings.TrimRight(text[:i-1], " \"\\"))
	}
	// The word before: an identifier name or label? "no", "nr" or
	// "number" after one count as it ("order no. 0815-4711-22").
	w, at := wordBefore(text, i)
	if numberWord(w) {
		w, _ = wordBefore(text, at)
	}
	return isIdentifierName(w) || identifierLabel(w)
}

// valueStart steps back from text[start] over an opening quote (escaped
// or not) and spaces, and over earlier elements of a JSON array ("ids":
// ["a", 123, ...]), and returns where it stops.
func valueStart(text string, start int) int {
	i := start
	for i > 0 {
		c := text[i-1]
		if byteClass[c]&clBlank != 0 {
			i--
			continue
		}
		if c != ',' && c != '[' {
			return i
		}
		// After ',' or '[': an element of an array, whose opening is
		// looked for before it.
		j := strings.LastIndexByte(text[:i], '[')
		if j < 0 || strings.ContainsAny(text[j:i], "{}]:") {
			return i
		}
		i = j
	}
	return i
}

// wordBefore returns the word (letters, digits, '_' and '-') that ends at
// text[i], after any spaces and a full stop ("no. "), and where it starts.
func wordBefore(text string, i int) (string, int) {
	i = len(strings.TrimRight(text[:i], " \t."))
	j := i
	for j > 0 && (isWordByte(text[j-1]) || text[j-1] == '-') {
		j--
	}
	return text[j:i], j
}

// identifierLabel reports whether a word of text labels the number after
// it as an identifier: an order, invoice or tracking number, a version.
func identifierLabel(w string) bool {
	switch strings.ToLower(w) {
	case "order", "invoice", "inv", "tracking", "ticket", "booking", "confirmation", "receipt",
		"reference", "shipment", "parcel", "case", "po", "serial", "isbn", "version", "build":
		return true
	}
	return false
}

func numberWord(w string) bool {
	switch strings.ToLower(w) {
	case "no", "nr", "num", "number":
		return true
	}
	return false
}

// labelsPersonal reports whether w labels a card, account or phone number
// ("CC#", "Account#", "Tel#"), not an identifier.
func labelsPersonal(w string) bool {
	switch strings.ToLower(w) {
	case "cc", "card", "credit", "debit", "visa", "amex", "mastercard", "acct", "account", "iban",
		"phone", "tel", "telephone", "mobile", "cell", "fax", "whatsapp":
		return true
	}
	return false
}

// isIdentifierName reports whether a key or word names an identifier:
// id, ids, uuid, guid, ref, key-less forms such as page_id, pageId,
// page-id, PageID.
func isIdentifierName(w string) bool {
	l := strings.ToLower(w)
	if identifierNames[l] || hasAnySuffix(l, "_id", "-id", "_ids", "-ids", "_uuid", "_ref") {
		return true
	}
	// camelCase: pageId, pageIds, PageID.
	return len(w) > 2 && hasAnySuffix(w, "Id", "ID", "Ids", "IDs")
}

// identifierNames are the words that name an identifier by themselves.
var identifierNames = map[string]bool{"id": true, "ids": true, "uuid": true, "guid": true, "ref": true, "refs": true, "sku": true}

// hasAnySuffix reports whether s ends with one of suffixes.
func hasAnySuffix(s string, suffixes ...string) bool {
	return slices.ContainsFunc(suffixes, func(suf string) bool { return strings.HasSuffix(s, suf) })
}
