package redact_test

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/redact"
)

// The generators below are written apart from the redactor: check digits
// are computed here from their definitions (Luhn by doubling, IBAN with
// math/big), so a mistake in the redactor's checks cannot hide itself.

// luhnDigit returns the check digit that makes body+digit pass Luhn.
func luhnDigit(body string) byte {
	sum := 0
	for i := len(body) - 1; i >= 0; i-- {
		v := int(body[i] - '0')
		if (len(body)-1-i)%2 == 0 { // doubled: every second digit from the check digit
			v *= 2
			if v > 9 {
				v -= 9
			}
		}
		sum += v
	}
	return byte('0' + (10-sum%10)%10)
}

func randDigits(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + r.IntN(10))
	}
	return string(b)
}

// genCard returns a valid card number of a random network, formatted
// plainly, in groups of four with spaces, or with dashes.
func genCard(r *rand.Rand) string {
	nets := []struct {
		prefix string
		length int
	}{{"4", 16}, {"4", 13}, {"51", 16}, {"55", 16}, {"2221", 16}, {"34", 15}, {"37", 15}, {"6011", 16}, {"65", 16}, {"3530", 16}, {"36", 14}}
	n := nets[r.IntN(len(nets))]
	body := n.prefix + randDigits(r, n.length-len(n.prefix)-1)
	d := body + string(luhnDigit(body))
	switch r.IntN(3) {
	case 0:
		return d
	default:
		sep := " "
		if r.IntN(2) == 0 {
			sep = "-"
		}
		var groups []string
		for i := 0; i < len(d); i += 4 {
			groups = append(groups, d[i:min(i+4, len(d))])
		}
		return strings.Join(groups, sep)
	}
}

// genIBAN returns a valid IBAN of one of a few countries, whole or in
// groups of four.
func genIBAN(r *rand.Rand) string {
	countries := []struct {
		code   string
		letter int // leading letters of the account part (bank code)
		length int
	}{{"DE", 0, 22}, {"GB", 4, 22}, {"NL", 4, 18}, {"FR", 0, 27}, {"ES", 0, 24}, {"CH", 0, 21}}
	c := countries[r.IntN(len(countries))]
	var bban strings.Builder
	for range c.letter {
		bban.WriteByte(byte('A' + r.IntN(26)))
	}
	bban.WriteString(randDigits(r, c.length-4-c.letter))
	// Check digits: 98 - (BBAN + country + "00" as a number, letters as 10..35) mod 97.
	var num strings.Builder
	for _, ch := range bban.String() + c.code + "00" {
		if ch >= 'A' && ch <= 'Z' {
			num.WriteString(strconv.Itoa(int(ch-'A') + 10))
		} else {
			num.WriteRune(ch)
		}
	}
	n, _ := new(big.Int).SetString(num.String(), 10)
	check := 98 - new(big.Int).Mod(n, big.NewInt(97)).Int64()
	iban := fmt.Sprintf("%s%02d%s", c.code, check, bban.String())
	if r.IntN(2) == 0 {
		return iban
	}
	var groups []string
	for i := 0; i < len(iban); i += 4 {
		groups = append(groups, iban[i:min(i+4, len(iban))])
	}
	return strings.Join(groups, " ")
}

func genEmail(r *rand.Rand) string {
	users := []string{"ana.perez", "j.smith+news", "ops_team", "m-o", "x"}
	hosts := []string{"example.com", "mail.example.co.uk", "corp-mail.io", "uni.edu"}
	return fmt.Sprintf("%s%d@%s", users[r.IntN(len(users))], r.IntN(100), hosts[r.IntN(len(hosts))])
}

func genPhone(r *rand.Rand) string {
	switch r.IntN(5) {
	case 0:
		return "+44 20 " + randDigits(r, 4) + " " + randDigits(r, 4)
	case 1:
		return "(" + randDigits(r, 3) + ") " + randDigits(r, 3) + "-" + randDigits(r, 4)
	case 2:
		return randDigits(r, 3) + "-" + randDigits(r, 3) + "-" + randDigits(r, 4)
	case 3:
		return "+1" + randDigits(r, 10)
	default:
		return "06 " + randDigits(r, 2) + " " + randDigits(r, 2) + " " + randDigits(r, 2) + " " + randDigits(r, 2)
	}
}

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func randAlnum(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[r.IntN(len(alnum))]
	}
	return string(b)
}

// genSecret returns a secret and the text it is written in.
func genSecret(r *rand.Rand) (secret, text string) {
	switch r.IntN(6) {
	case 0:
		s := "sk-proj-" + randAlnum(r, 40)
		return s, "use the key " + s + " for the import"
	case 1:
		s := "ghp_" + randAlnum(r, 36)
		return s, "token: " + s
	case 2:
		s := "AKIA" + strings.ToUpper(randAlnum(r, 16))
		s = strings.Map(func(c rune) rune {
			if c >= 'a' && c <= 'z' {
				return c - 32
			}
			return c
		}, s)
		return s, "aws access key " + s + " in region eu-west-1"
	case 3:
		s := "eyJ" + randAlnum(r, 20) + ".eyJ" + randAlnum(r, 30) + "." + randAlnum(r, 25)
		return s, "Authorization: Bearer " + s
	case 4:
		s := randAlnum(r, 24)
		return s, `{"api_key": "` + s + `", "region": "us"}`
	default:
		s := randAlnum(r, 14)
		return s, "password=" + s + " (temporary)"
	}
}

// genID returns a long numeric identifier that would pass as a card
// number (a Visa prefix, sixteen digits, Luhn-valid) and a place for it
// where it is plainly an identifier.
func genID(r *rand.Rand) (id, text string) {
	body := "4" + randDigits(r, 14)
	id = body + string(luhnDigit(body))
	switch r.IntN(6) {
	case 0:
		return id, `{"id": ` + id + `, "title": "Spring sale"}`
	case 1:
		return id, `{"page_id": "` + id + `"}`
	case 2:
		return id, `{"sectionIds": ["` + id + `", "x"]}`
	case 3:
		return id, "updated order #" + id
	case 4:
		return id, "page ID: " + id + " is live"
	default:
		return id, "result of call_" + id // a tool-call ID; kept through keep
	}
}

// TestRedactGenerated: a conversation full of generated e-mails, phone
// numbers, card numbers, IBANs and secrets keeps none of them, while long
// numeric IDs that would pass as card numbers survive.
func TestRedactGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var parts, secrets, ids, keep []string
	for range 400 {
		switch r.IntN(6) {
		case 0:
			c := genCard(r)
			secrets = append(secrets, c)
			parts = append(parts, "charge card "+c+" today")
		case 1:
			iban := genIBAN(r)
			secrets = append(secrets, iban)
			parts = append(parts, `{"payout": {"iban": "`+iban+`"}}`)
		case 2:
			e := genEmail(r)
			secrets = append(secrets, e)
			parts = append(parts, "write to "+e+".")
		case 3:
			p := genPhone(r)
			secrets = append(secrets, p)
			parts = append(parts, "call me at "+p+", thanks")
		case 4:
			s, text := genSecret(r)
			secrets = append(secrets, s)
			parts = append(parts, text)
		default:
			id, text := genID(r)
			ids = append(ids, id)
			parts = append(parts, text)
			if strings.Contains(text, "call_") {
				keep = append(keep, "call_"+id)
			}
		}
	}
	in := strings.Join(parts, "\n")
	out, found := redact.Default.Redact(in, keep)
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%q survived redaction", s)
		}
	}
	for _, id := range ids {
		if !strings.Contains(out, id) {
			t.Errorf("identifier %s was altered", id)
		}
	}
	if len(found) < len(secrets) {
		t.Errorf("%d findings for %d planted values", len(found), len(secrets))
	}
	t.Logf("%d values planted, %d identifiers kept, %d findings", len(secrets), len(ids), len(found))
}

// TestRedactLeavesLookalikes: numbers and words that only look like what
// the rules mask stay as they are.
func TestRedactLeavesLookalikes(t *testing.T) {
	for _, s := range []string{
		"4111 1111 1111 1112",               // Luhn fails
		"1700000000000",                     // a millisecond timestamp: no card network
		"order 9780306406157",               // an ISBN
		"on 2024-01-31 at 12:30",            // a date and a time
		"from 192.168.10.20",                // an IP address
		"it costs 10 000 000 dollars",       // an amount
		"version 1.22.3",                    // a version
		"DE89370400440532013001",            // an IBAN with a wrong check
		"GB82 WEST 1234 5698 7654 3",        // cut short
		"the token verification succeeded",  // not a bearer token
		"see https://example.com/page?id=7", // a URL, no address
		"callback 5551234567",               // bare digits
	} {
		if out, found := redact.Default.Redact(s, nil); out != s {
			t.Errorf("Redact(%q) = %q (%v), want it unchanged", s, out, found)
		}
	}
}

// TestRedactKnownValues: published test values of each kind are masked,
// with the kind reported.
func TestRedactKnownValues(t *testing.T) {
	for _, tc := range []struct {
		text string
		kind redact.Kind
	}{
		{"card 4111 1111 1111 1111 exp 12/29", redact.Card},
		{"amex 378282246310005", redact.Card},
		{"IBAN GB82 WEST 1234 5698 7654 32, thanks", redact.IBAN},
		{"DE89370400440532013000", redact.IBAN},
		{"mail ana@example.com", redact.Email},
		{"ring +44 20 7946 0958", redact.Phone},
		{"Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", redact.Secret},
		{`{"client_secret":"s3cr3t-value-123"}`, redact.Secret},
	} {
		out, found := redact.Default.Redact(tc.text, nil)
		if len(found) != 1 || found[0].Kind != tc.kind {
			t.Errorf("Redact(%q) = %q, findings %v, want one %s", tc.text, out, found, tc.kind)
			continue
		}
		if !strings.Contains(out, "[redacted "+string(tc.kind)+"]") {
			t.Errorf("Redact(%q) = %q, want the %s masked", tc.text, out, tc.kind)
		}
	}
}

func TestNewKindsAndMask(t *testing.T) {
	r := redact.New(redact.Config{Kinds: []redact.Kind{redact.Email}, Mask: func(k redact.Kind, s string) string { return "<" + string(k) + ">" }})
	out, _ := r.Redact("ana@example.com 4111 1111 1111 1111", nil)
	if want := "<email> 4111 1111 1111 1111"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
	f := redact.Func(func(text string, _ []string) (string, []redact.Finding) { return strings.ToUpper(text), nil })
	if out, _ := f.Redact("abc", nil); out != "ABC" {
		t.Errorf("Func: %q", out)
	}
}

// FuzzRedact: redaction never panics, its findings are sorted, disjoint
// and inside the input, the output is the input with each finding
// replaced by its mask, and every occurrence of a kept string survives.
func FuzzRedact(f *testing.F) {
	f.Add("card 4111 1111 1111 1111 and ana@example.com", "1111")
	f.Add(`{"id": 4111111111111111, "iban": "DE89370400440532013000"}`, "4111111111111111")
	f.Add("Bearer abcdefghijklmnopqrstuvwxyz012345 +44 20 7946 0958", "")
	mask := regexp.MustCompile(`\[redacted [a-z]+\]`)
	f.Fuzz(func(t *testing.T, text, keep string) {
		var keeps []string
		if keep != "" {
			keeps = []string{keep}
		}
		out, found := redact.Default.Redact(text, keeps)
		at := 0
		var rebuilt strings.Builder
		for _, fd := range found {
			if fd.Start < at || fd.End <= fd.Start || fd.End > len(text) || !slices.Contains(redact.Kinds, fd.Kind) {
				t.Fatalf("bad finding %+v (previous end %d, len %d)", fd, at, len(text))
			}
			rebuilt.WriteString(text[at:fd.Start] + "[redacted " + string(fd.Kind) + "]")
			at = fd.End
		}
		rebuilt.WriteString(text[at:])
		if rebuilt.String() != out {
			t.Fatalf("output %q is not the input with its findings masked (%q)", out, rebuilt.String())
		}
		if keep != "" && strings.Count(out, keep) < strings.Count(text, keep) && !mask.MatchString(keep) {
			t.Fatalf("kept %q: %d occurrences in, %d out", keep, strings.Count(text, keep), strings.Count(out, keep))
		}
	})
}

// BenchmarkRedact redacts about 64 KB of conversation with a value to
// mask every few lines.
func BenchmarkRedact(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	var sb strings.Builder
	for sb.Len() < 64<<10 {
		sb.WriteString(`{"id": "page_8f3a21", "title": "Pricing FAQ", "body": "Our plans start at 10 dollars a month; see the table below for details.", "updated_at": "2026-11-23T10:00:00Z"}` + "\n")
		if r.IntN(4) == 0 {
			sb.WriteString("contact " + genEmail(r) + " or " + genPhone(r) + "\n")
		}
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		redact.Default.Redact(text, []string{"page_8f3a21"})
	}
}
