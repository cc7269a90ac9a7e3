package layer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// FenceTag returns the tag a layer fences its block with: its ID with
// every '-' replaced by '_' ("working-memory" gives "working_memory",
// "entities" gives "entities"). IDs are unique in a stack, so each layer
// keeps its own fence: the prompt compiler gives a tag to the first layer
// that fences with it and treats another layer wearing the same fence as
// unfenced. The built-in layers all use it.
func FenceTag(layerID string) string {
	return strings.ReplaceAll(layerID, "-", "_")
}

// Fence wraps untrusted text in an XML-style block, <tag>\ntext\n</tag>, so
// that the text cannot end the block early or open a block of the same
// name: every opener of a tag-like text naming tag is replaced by "&lt;"
// (see [Defang]). Nothing else is changed, so code and JSON stay
// readable, and the output ends with the only closing tag. tag should be
// a plain name such as "working_memory".
func Fence(tag, text string) string {
	var b strings.Builder
	b.Grow(len(text) + 2*len(tag) + 8)
	b.WriteByte('<')
	b.WriteString(tag)
	b.WriteString(">\n")
	tags := [1]string{canonical(tag)}
	writeDefanged(&b, text, tags[:])
	b.WriteString("\n</")
	b.WriteString(tag)
	b.WriteByte('>')
	return b.String()
}

// Defang returns text with every tag-like text naming one of tags made
// inert: its opener is replaced by "&lt;". It returns text itself when
// nothing changes. [Fence] defangs its own tag this way; the prompt
// compiler uses Defang to keep one block from forging another.
//
// Tag-like text is an opener followed by a name, compared in a canonical
// form that sees through the ways a reader (a model or a person) would
// still recognise the tag:
//   - openers: '<' and its look-alikes (fullwidth '＜', '﹤', '‹', '«',
//     '〈', '⟨', '❮' and the like);
//   - between the opener and the name: any white space (NBSP, em space,
//     vertical tab ...), invisible characters and '/' or its look-alikes
//     ('／', '∕', '⁄', '\');
//   - invisible characters anywhere are skipped: zero-width spaces and
//     joiners, bidi marks, embeddings, overrides and isolates, the BOM,
//     the word joiner, the soft hyphen, other format and control
//     characters, and combining marks;
//   - letters are compared case-insensitively (Unicode folding, so the
//     Kelvin sign is a 'k') after mapping look-alikes to ASCII: fullwidth,
//     mathematical and enclosed forms, letters with diacritics, small
//     capitals, modifier letters, and Cyrillic and Greek letters shaped
//     like Latin ones;
//   - a run of separators (white space, '_', '-' and dashes) is one '_'.
//
// The name only has to start with the tag, so "</working_memoryX>" is
// defanged too. Text that is not tag-like ("a < b", "<p>", "« hi »") is
// left alone.
func Defang(text string, tags ...string) string {
	var buf [4]string
	canon := buf[:0]
	for _, t := range tags {
		canon = append(canon, canonical(t))
	}
	i, n := nextOpener(text, canon)
	if i < 0 {
		return text
	}
	var b strings.Builder
	b.Grow(len(text) + 8)
	b.WriteString(text[:i])
	b.WriteString("&lt;")
	writeDefanged(&b, text[i+n:], canon)
	return b.String()
}

// writeDefanged writes text with every opener of a tag-like text naming
// one of tags (canonical) replaced by "&lt;".
func writeDefanged(b *strings.Builder, text string, tags []string) {
	for {
		i, n := nextOpener(text, tags)
		if i < 0 {
			b.WriteString(text)
			return
		}
		b.WriteString(text[:i])
		b.WriteString("&lt;")
		text = text[i+n:]
	}
}

// nextOpener returns the offset and length of the first opener in s that
// starts a tag-like text naming one of tags, or -1.
func nextOpener(s string, tags []string) (int, int) {
	for i := 0; i < len(s); i++ {
		if !openerLead[s[i]] {
			continue
		}
		for _, code := range openerCodes[s[i]] {
			if len(code) > 1 && (i+1 == len(s) || s[i+1] != code[1]) {
				continue // most characters sharing a first byte differ in the second
			}
			if strings.HasPrefix(s[i:], code) && namesTag(s[i+len(code):], tags) {
				return i, len(code)
			}
		}
	}
	return -1, 0
}

// namesTag reports whether s, the text after an opener, is in canonical
// form a run of separators and slashes followed by one of tags (each
// already canonical). It stops at the first character that rules out
// every tag, so past the tag's length it reads only invisible characters
// and separators.
func namesTag(s string, tags []string) bool {
	var buf [32]byte
	name := buf[:0]
	for _, r := range s {
		c, k := fold(r)
		switch {
		case k == foldIgnore:
			continue
		case len(name) == 0 && (k == foldSep || c == '/'):
			continue
		case k == foldSep:
			if name[len(name)-1] == '_' {
				continue
			}
			c = '_'
		case k == foldOther:
			return false
		}
		name = append(name, c)
		live := false
		for _, t := range tags {
			if t == "" {
				continue
			}
			if len(name) >= len(t) {
				if string(name[:len(t)]) == t {
					return true
				}
			} else if string(name) == t[:len(name)] {
				live = true
			}
		}
		if !live {
			return false
		}
	}
	return false
}

// canonical returns tag in the canonical form namesTag compares: folded
// rune by rune, invisible characters dropped, leading separators and
// slashes dropped, separator runs made one '_'. A character with no
// ASCII form is kept as it is (it can then never match).
func canonical(tag string) string {
	simple := true
	for i := 0; i < len(tag); i++ {
		if c := tag[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == ':' || c == '_' && i > 0 && tag[i-1] != '_') {
			simple = false
			break
		}
	}
	if simple {
		return tag
	}
	var b strings.Builder
	for _, r := range tag {
		c, k := fold(r)
		switch {
		case k == foldIgnore:
		case b.Len() == 0 && (k == foldSep || c == '/'):
		case k == foldSep:
			if !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
		case k == foldOther:
			b.WriteRune(r)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Classes of fold.
const (
	foldByte   = iota // stands for an ASCII character
	foldSep           // white space, '_', '-' or a look-alike
	foldIgnore        // invisible: skipped
	foldOther         // no ASCII look-alike
)

// fold returns the ASCII character (lower case for letters, '<' for an
// opener, '/' for a slash) r stands for in tag-like text, and its class.
func fold(r rune) (byte, int) {
	if r < utf8.RuneSelf {
		switch {
		case r == ' ' || r == '_' || r == '-' || '\t' <= r && r <= '\r':
			return '_', foldSep
		case r < ' ' || r == 0x7f:
			return 0, foldIgnore
		case 'A' <= r && r <= 'Z':
			return byte(r) + 'a' - 'A', foldByte
		case r == '\\':
			return '/', foldByte
		}
		return byte(r), foldByte
	}
	switch {
	case 0xFF01 <= r && r <= 0xFF5E: // fullwidth ASCII
		return fold(r - 0xFF01 + '!')
	case isOpener(r):
		return '<', foldByte
	case unicode.IsSpace(r) || r == '\u2800' || r == '\u3164' || r == '\uFFA0' || r == '\u115F' || r == '\u1160':
		return '_', foldSep // the Braille blank and Hangul fillers look like spaces
	case unicode.In(r, unicode.Cc, unicode.Cf, unicode.Mn, unicode.Me):
		return 0, foldIgnore
	case 0x1D400 <= r && r <= 0x1D6A3: // mathematical letters, 52 a style
		return byte('a' + (r-0x1D400)%52%26), foldByte
	case 0x1D7CE <= r && r <= 0x1D7FF: // mathematical digits
		return byte('0' + (r-0x1D7CE)%10), foldByte
	case 0x24B6 <= r && r <= 0x24E9: // circled letters
		return byte('a' + (r-0x24B6)%26), foldByte
	case 0x249C <= r && r <= 0x24B5: // parenthesized letters
		return byte('a' + r - 0x249C), foldByte
	case 0x1F110 <= r && r <= 0x1F189 && (r-0x1F110)%32 < 26: // parenthesized, squared, negative circled and squared letters
		return byte('a' + (r-0x1F110)%32), foldByte
	case 0x1F1E6 <= r && r <= 0x1F1FF: // regional indicators
		return byte('a' + r - 0x1F1E6), foldByte
	}
	if c, ok := lookalikes[r]; ok {
		if c == '_' {
			return c, foldSep
		}
		return c, foldByte
	}
	// Case variants of ASCII letters (the Kelvin sign, the long s).
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return fold(f)
		}
	}
	if l := unicode.ToLower(r); l != r {
		if c, ok := lookalikes[l]; ok {
			return c, foldByte
		}
	}
	return 0, foldOther
}

// openers are '<' and the characters that look like it.
const openers = "<\uFF1C\uFE64\u2039\u00AB\u2329\u3008\u300A\u27E8\u27EA\u276C\u276E\u2770\u02C2\u1438\u29FC\u2989\u2991\u227A\u22D6"

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
func isOpener(r rune) bool {
	var buf [utf8.UTFMax]byte
	e := utf8.AppendRune(buf[:0], r)
	for _, code := range openerCodes[e[0]] {
		if code == string(e) {
			return true
		}
	}
	return false
}

// lookalikes maps characters that look like an ASCII letter, '/' or a
// separator ('_') to it. Fullwidth, mathematical and enclosed forms are
// mapped by range in fold, upper-case letters through their lower case.
var lookalikes = func() map[rune]byte {
	m := make(map[rune]byte)
	for c, s := range map[byte]string{
		'/': "∕⁄⧸╱⟋∖⧵﹨",
		'_': "‐‑‒–—―−⁃﹘﹣‗﹍﹎﹏ˍ",
		'a': "àáâãäåāăąǎǟǡǻȁȃȧạảấầẩẫậắằẳẵặаӑӓαάɑᴀᵃₐª",
		'b': "ƀɓвʙᵇβВ",
		'c': "çćĉċčсϲᴄᶜⅽℂℭ",
		'd': "ďđԁᴅᵈⅾⅆ",
		'e': "èéêëēĕėęěȅȇȩẹẻẽếềểễệеёєεέᴇᵉₑℯℰⅇ",
		'f': "ꜰᶠℱ",
		'g': "ĝğġģǧǵɡɢᵍℊ",
		'h': "ĥħһʜʰₕℋℌℍℎНΗ",
		'i': "ìíîïĩīĭįıǐȉȋỉịіїιίɩɪᵢⁱⅰℐℑℹⅈ",
		'j': "ĵǰȷјϳᴊʲⱼⅉ",
		'k': "ķĸκкᴋᵏₖ",
		'l': "ĺļľŀłӏⅼʟˡₗℒℓ",
		'm': "мᴍᵐₘⅿℳΜ",
		'n': "ñńņňŉŋǹɴⁿₙℕΝ",
		'o': "òóôõöøōŏőǒǫȍȏȯọỏốồổỗộớờởỡợоӧοόᴏᵒₒºℴ",
		'p': "рρᴘᵖₚℙ",
		'q': "ԛℚ",
		'r': "ŕŗřȑȓʀʳᵣℛℜℝ",
		's': "śŝşšșѕꜱˢₛ",
		't': "ţťŧțтτᴛᵗₜΤТ",
		'u': "ùúûüũūŭůűųǔȕȗụủứừửữựυύᴜᵘᵤ",
		'v': "νᴠᵛᵥⅴ",
		'w': "ŵԝᴡʷ",
		'x': "хχˣₓⅹΧ",
		'y': "ýÿŷуўʏʸỳỵỷỹΥ",
		'z': "źżžᴢᶻℤℨΖ",
	} {
		for _, r := range s {
			m[r] = c
		}
	}
	return m
}()
