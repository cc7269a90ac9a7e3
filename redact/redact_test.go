package redact_test

import (
	"encoding/json"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/redact/redacttest"
)

// TestRedactGenerated: a conversation full of generated e-mails, phone
// numbers, card numbers, IBANs and secrets keeps none of them, while long
// numeric IDs that would pass as card numbers survive.
func TestRedactGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var parts, secrets, ids, keep []string
	for range 400 {
		switch r.IntN(6) {
		case 0:
			c := redacttest.Card(r)
			secrets = append(secrets, c)
			parts = append(parts, "charge card "+c+" today")
		case 1:
			iban := redacttest.IBAN(r)
			secrets = append(secrets, iban)
			parts = append(parts, `{"payout": {"iban": "`+iban+`"}}`)
		case 2:
			e := redacttest.Email(r)
			secrets = append(secrets, e)
			parts = append(parts, "write to "+e+".")
		case 3:
			p := redacttest.Phone(r)
			secrets = append(secrets, p)
			parts = append(parts, "call me at "+p+", thanks")
		case 4:
			s, text := redacttest.Secret(r)
			secrets = append(secrets, s)
			parts = append(parts, text)
		default:
			id, text := redacttest.ID(r)
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
// replaced by its mask (quoted for a JSON number), a JSON object or array
// stays valid JSON, and every occurrence of a kept string survives.
func FuzzRedact(f *testing.F) {
	f.Add("card 4111 1111 1111 1111 and ana@example.com", "1111")
	f.Add(`{"id": 4111111111111111, "iban": "DE89370400440532013000"}`, "4111111111111111")
	f.Add("Bearer abcdefghijklmnopqrstuvwxyz012345 +44 20 7946 0958", "")
	f.Add(redacttest.Nested(rand.New(rand.NewPCG(1, 1)), 2).JSON, "")
	f.Add(`{"n":"a\n4111 1111 1111 1111\u00e9\ud83d\ude00 ann@example.com","card":4111111111111111}`, "")
	mask := regexp.MustCompile(`\[redacted [a-z]+\]`)
	f.Fuzz(func(t *testing.T, text, keep string) {
		var keeps []string
		if keep != "" {
			keeps = []string{keep}
		}
		out, found := redact.Default.Redact(text, keeps)
		checkFindings(t, text, out, found)
		if t := strings.TrimLeft(text, " \t\r\n"); t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(text)) && !json.Valid([]byte(out)) {
			panic("a JSON document came out as invalid JSON: " + out)
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
			sb.WriteString("contact " + redacttest.Email(r) + " or " + redacttest.Phone(r) + "\n")
		}
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		redact.Default.Redact(text, []string{"page_8f3a21"})
	}
}

// TestMemory82_RedactNestedJSON: a tool result whose JSON carries other
// JSON documents as escaped strings, up to three levels deep, keeps none
// of the values planted at any level, keeps every identifier under an
// identifier-named key (as a string, as a JSON number beyond 2^53, in an
// "ids" array), stays valid JSON with the same members at every level,
// and changes nothing but what it masks: every other value, and the way
// it was escaped, is as it was.
func TestMemory82_RedactNestedJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(70, 12))
	for depth := range 4 {
		for range 25 {
			doc := redacttest.Nested(r, depth)
			out, found := redact.Default.Redact(doc.JSON, nil)
			if !json.Valid([]byte(out)) {
				t.Fatalf("depth %d: the output is not JSON:\n%s", depth, out)
			}
			for _, s := range doc.Planted {
				if strings.Contains(out, s) {
					t.Errorf("depth %d: %q survived redaction:\n%s", depth, s, out)
				}
			}
			for _, id := range doc.IDs {
				if !strings.Contains(out, id) {
					t.Errorf("depth %d: identifier %s was altered:\n%s", depth, id, out)
				}
			}
			if want := len(doc.Planted); len(found) < want {
				t.Errorf("depth %d: %d findings for %d planted values", depth, len(found), want)
			}
			sameButMasked(t, doc.JSON, out, depth)
			checkFindings(t, doc.JSON, out, found)
		}
	}
}

// masked are the members of a redacttest.Nested document whose values are
// planted; every other member must come out as it went in.
var masked = map[string]bool{"email": true, "card": true, "card_number": true, "iban": true, "phone": true, "token": true, "password": true, "api_key": true, "note": true}

// sameButMasked checks that out has the members of in, level by level
// down the "body" strings, with a masked value where one was planted and
// every other value byte for byte as it was (raw, escapes included).
func sameButMasked(t *testing.T, in, out string, depth int) {
	t.Helper()
	var a, b map[string]json.RawMessage
	if err := json.Unmarshal([]byte(in), &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &b); err != nil {
		t.Fatalf("depth %d: %v", depth, err)
	}
	if len(a) != len(b) {
		t.Fatalf("depth %d: %d members in, %d out", depth, len(a), len(b))
	}
	for k, v := range a {
		w, ok := b[k]
		switch {
		case !ok:
			t.Errorf("depth %d: member %q lost", depth, k)
		case k == "body":
			var s, u string
			if json.Unmarshal(v, &s) != nil || json.Unmarshal(w, &u) != nil {
				t.Fatalf("depth %d: body is not a string: %s", depth, w)
			}
			sameButMasked(t, s, u, depth-1)
		case masked[k]:
			if !strings.Contains(string(w), "[redacted ") {
				t.Errorf("depth %d: %q = %s, want it masked", depth, k, w)
			}
		case string(v) != string(w):
			t.Errorf("depth %d: %q = %s, want %s as it was", depth, k, w, v)
		}
	}
}

// checkFindings checks that the findings are sorted, disjoint, inside the
// input, of a known kind, and that out is the input with each finding
// replaced by its mask: as it is, or (for a JSON number) quoted.
func checkFindings(t *testing.T, in, out string, found []redact.Finding) {
	t.Helper()
	at, o := 0, 0
	for _, f := range found {
		if f.Start < at || f.End <= f.Start || f.End > len(in) || !slices.Contains(redact.Kinds, f.Kind) {
			t.Fatalf("bad finding %+v (previous end %d, len %d)", f, at, len(in))
		}
		gap := in[at:f.Start]
		if !strings.HasPrefix(out[o:], gap) {
			t.Fatalf("the output differs from the input before %+v: %q, want %q", f, out[o:min(len(out), o+len(gap))], gap)
		}
		o += len(gap)
		// A JSON number's mask is quoted, the quotes escaped as deep as
		// the number's document is nested in strings (as the nearest quote
		// before it is).
		mask := "[redacted " + string(f.Kind) + "]"
		if c := in[f.Start]; c == '-' || c >= '0' && c <= '9' {
			q := `"`
			if k := strings.LastIndexByte(in[:f.Start], '"'); k >= 0 {
				j := k
				for j > 0 && in[j-1] == '\\' {
					j--
				}
				q = in[j : k+1]
			}
			if strings.HasPrefix(out[o:], q+mask+q) {
				mask = q + mask + q
			}
		}
		if !strings.HasPrefix(out[o:], mask) {
			t.Fatalf("finding %+v of %q: the output has %q, want its mask %q", f, in[f.Start:f.End], out[o:min(len(out), o+30)], mask)
		}
		o += len(mask)
		at = f.End
	}
	if out[o:] != in[at:] {
		t.Fatalf("the output differs from the input after the last finding: %q, want %q", out[o:], in[at:])
	}
}

// TestMemory83_RedactJSONNumbers: a JSON number is never decoded into a
// float64 and written back: long numeric IDs, amounts and exponents come
// out byte for byte; a card number written as a JSON number is masked as
// a string, so the document stays valid JSON.
func TestMemory83_RedactJSONNumbers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"orderId": 41111111111111111111, "amount": 12.50, "ratio": 1e400, "user_id": 4111111111111111}`,
			`{"orderId": 41111111111111111111, "amount": 12.50, "ratio": 1e400, "user_id": 4111111111111111}`},
		{`{"card": 4111111111111111, "n": -0.0}`, `{"card": "[redacted card]", "n": -0.0}`},
		{`[4111111111111111, 9007199254740993]`, `["[redacted card]", 9007199254740993]`},
		{`{"api_key": 123456789012}`, `{"api_key": "[redacted secret]"}`},
		{`{"ids": [4111111111111111, "4111111111111111"], "note": "hi\nann@example.com"}`,
			`{"ids": [4111111111111111, "4111111111111111"], "note": "hi\n[redacted email]"}`},
		{`{"note": "line\n4111 1111 1111 1111\tend", "t": "\u003cb\u003e"}`, `{"note": "line\n[redacted card]\tend", "t": "\u003cb\u003e"}`},
		{`{"password": "correct horse \"battery\" staple"}`, `{"password": "[redacted secret]"}`},
		{`{"ann@example.com": {"page_id": "4111111111111111"}}`, `{"[redacted email]": {"page_id": "4111111111111111"}}`},
	} {
		out, found := redact.Default.Redact(tc.in, nil)
		if out != tc.want {
			t.Errorf("Redact(%s)\n = %s\nwant %s", tc.in, out, tc.want)
		}
		if !json.Valid([]byte(out)) {
			t.Errorf("Redact(%s) = %s: not JSON", tc.in, out)
		}
		checkFindings(t, tc.in, out, found)
	}
	// A mask of the user's is escaped as the string it lands in needs.
	r := redact.New(redact.Config{Mask: func(k redact.Kind, _ string) string { return "<\"" + string(k) + "\"\n>" }})
	in := `{"a": "mail ann@example.com", "b": "{\"c\": 4111111111111111}"}`
	want := `{"a": "mail <\"email\"\n>", "b": "{\"c\": \"<\\\"card\\\"\\n>\"}"}`
	if out, _ := r.Redact(in, nil); out != want || !json.Valid([]byte(out)) {
		t.Errorf("Redact(%s)\n = %s\nwant %s", in, out, want)
	}
}

// TestMemory84_RedactEscapedJSONInText: JSON written as an escaped string
// inside text that is not itself a JSON document (a log line) keeps its
// identifiers and loses its secrets too.
func TestMemory84_RedactEscapedJSONInText(t *testing.T) {
	in := `tool said: {\"user_id\":\"4111111111111111\",\"pageId\": 4111111111111111,\"api_key\":\"abcdefghijkl\",\"password\" : \"hunter2hunter2\"} and more`
	want := `tool said: {\"user_id\":\"4111111111111111\",\"pageId\": 4111111111111111,\"api_key\":\"[redacted secret]\",\"password\" : \"[redacted secret]\"} and more`
	if out, _ := redact.Default.Redact(in, nil); out != want {
		t.Errorf("Redact(%s)\n = %s\nwant %s", in, out, want)
	}
}

// BenchmarkRedactJSON redacts about 64 KB of JSON tool result: an array
// of records, each carrying another JSON document as an escaped string
// (redacttest.Nested, one level), with values to mask at both levels.
func BenchmarkRedactJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	var sb strings.Builder
	sb.WriteByte('[')
	for sb.Len() < 64<<10 {
		if sb.Len() > 1 {
			sb.WriteString(",\n")
		}
		sb.WriteString(redacttest.Nested(r, 1).JSON)
	}
	sb.WriteByte(']')
	text := sb.String()
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		redact.Default.Redact(text, nil)
	}
}
