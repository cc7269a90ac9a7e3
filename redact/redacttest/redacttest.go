// Package redacttest generates what redaction tests plant: payment card
// numbers, IBANs, e-mail addresses, phone numbers, API keys, long numeric
// identifiers that would pass as card numbers, and JSON documents that
// carry other JSON documents as escaped strings.
//
// It is written apart from package redact and imports nothing of it:
// card check digits are computed by the doubling rule, IBAN check digits
// with math/big, JSON is written by encoding/json, so a mistake in the
// redactor's checks cannot hide itself. Every generator takes the
// *rand.Rand it draws from, so a test with a fixed seed is repeatable.
package redacttest

import (
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Alnum is the alphabet of generated keys and passwords.
const Alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// Word returns n bytes drawn from the alphabet from.
func Word(r *rand.Rand, n int, from string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = from[r.IntN(len(from))]
	}
	return string(b)
}

// Digits returns n random decimal digits.
func Digits(r *rand.Rand, n int) string { return Word(r, n, "0123456789") }

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

// Luhn returns an n-digit number that starts with prefix and passes the
// Luhn check.
func Luhn(r *rand.Rand, prefix string, n int) string {
	body := prefix + Digits(r, n-len(prefix)-1)
	return body + string(luhnDigit(body))
}

// Card returns a valid card number of a random network, written plainly,
// in groups of four with spaces, or with dashes.
func Card(r *rand.Rand) string {
	nets := []struct {
		prefix string
		length int
	}{{"4", 16}, {"4", 13}, {"51", 16}, {"55", 16}, {"2221", 16}, {"34", 15}, {"37", 15}, {"6011", 16}, {"65", 16}, {"3530", 16}, {"36", 14}}
	n := nets[r.IntN(len(nets))]
	d := Luhn(r, n.prefix, n.length)
	if r.IntN(3) == 0 {
		return d
	}
	sep := " "
	if r.IntN(2) == 0 {
		sep = "-"
	}
	return group(d, sep)
}

// group writes s in groups of four separated by sep.
func group(s, sep string) string {
	var groups []string
	for i := 0; i < len(s); i += 4 {
		groups = append(groups, s[i:min(i+4, len(s))])
	}
	return strings.Join(groups, sep)
}

// IBAN returns a valid IBAN of one of a few countries, whole or in groups
// of four.
func IBAN(r *rand.Rand) string {
	countries := []struct {
		code   string
		letter int // leading letters of the account part (bank code)
		length int
	}{{"DE", 0, 22}, {"GB", 4, 22}, {"NL", 4, 18}, {"FR", 0, 27}, {"ES", 0, 24}, {"CH", 0, 21}}
	c := countries[r.IntN(len(countries))]
	bban := Word(r, c.letter, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") + Digits(r, c.length-4-c.letter)
	// Check digits: 98 - (BBAN + country + "00" as a number, letters as 10..35) mod 97.
	var num strings.Builder
	for _, ch := range bban + c.code + "00" {
		if ch >= 'A' && ch <= 'Z' {
			num.WriteString(strconv.Itoa(int(ch-'A') + 10))
		} else {
			num.WriteRune(ch)
		}
	}
	n, _ := new(big.Int).SetString(num.String(), 10)
	check := 98 - new(big.Int).Mod(n, big.NewInt(97)).Int64()
	iban := fmt.Sprintf("%s%02d%s", c.code, check, bban)
	if r.IntN(2) == 0 {
		return iban
	}
	return group(iban, " ")
}

// Email returns an e-mail address.
func Email(r *rand.Rand) string {
	users := []string{"ana.perez", "j.smith+news", "ops_team", "m-o", "x"}
	hosts := []string{"example.com", "mail.example.co.uk", "corp-mail.io", "uni.edu"}
	return fmt.Sprintf("%s%d@%s", users[r.IntN(len(users))], r.IntN(100), hosts[r.IntN(len(hosts))])
}

// Phone returns a phone number written in one of a few national and
// international forms. Each is a number a real one could be: an area
// code in use and a subscriber number in its range (London's start with
// 3, 7 or 8; a North American exchange with 2 to 9; French mobiles with
// 06), since a redactor may check numbers against numbering plans.
func Phone(r *rand.Rand) string {
	nanp := func() string { // an area code in use, an exchange 2..9xx
		areas := []string{"212", "415", "312", "617", "202", "305", "206", "512", "646", "303"}
		return areas[r.IntN(len(areas))] + string(rune('2'+r.IntN(8))) + Digits(r, 2) + Digits(r, 4)
	}
	switch r.IntN(5) {
	case 0:
		return "+44 20 " + string("378"[r.IntN(3)]) + Digits(r, 3) + " " + Digits(r, 4)
	case 1:
		n := nanp()
		return "(" + n[:3] + ") " + n[3:6] + "-" + n[6:]
	case 2:
		n := nanp()
		return n[:3] + "-" + n[3:6] + "-" + n[6:]
	case 3:
		return "+1" + nanp()
	default:
		return "06 " + Digits(r, 2) + " " + Digits(r, 2) + " " + Digits(r, 2) + " " + Digits(r, 2)
	}
}

// Secret returns a secret (an API key, a token, a password) and the text
// it is written in.
func Secret(r *rand.Rand) (secret, text string) {
	switch r.IntN(6) {
	case 0:
		s := "sk-proj-" + Word(r, 40, Alnum)
		return s, "use the key " + s + " for the import"
	case 1:
		s := "ghp_" + Word(r, 36, Alnum)
		return s, "token: " + s
	case 2:
		s := "AKIA" + Word(r, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
		return s, "aws access key " + s + " in region eu-west-1"
	case 3:
		s := "eyJ" + Word(r, 20, Alnum) + ".eyJ" + Word(r, 30, Alnum) + "." + Word(r, 25, Alnum)
		return s, "Authorization: Bearer " + s
	case 4:
		s := Word(r, 24, Alnum)
		return s, `{"api_key": "` + s + `", "region": "us"}`
	default:
		s := Word(r, 14, Alnum)
		return s, "password=" + s + " (temporary)"
	}
}

// ID returns a long numeric identifier that would pass as a card number
// (a Visa prefix, sixteen digits, Luhn-valid) and a place for it where it
// is plainly an identifier. A tool-call ID ("call_" and the number) is
// an identifier only when the caller says so: it must be passed in keep.
func ID(r *rand.Rand) (id, text string) {
	id = Luhn(r, "4", 16)
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
		return id, "result of call_" + id
	}
}

// Doc is a generated JSON document and what it holds.
type Doc struct {
	// JSON is the document.
	JSON string
	// Planted are the values a redactor must mask, as written in their
	// innermost document (so, after unescaping).
	Planted []string
	// IDs are the identifiers that must survive, as written in their
	// innermost document.
	IDs []string
}

// Nested returns a tool result whose "body" member is a JSON document
// written as a string, whose own "body" is another, depth levels deep
// (depth 0: no nesting). Every level holds an e-mail address, a card
// number (as a string, and as a JSON number under a non-identifier key),
// an IBAN, a phone number, a prefixed API key, a password and an api_key
// under secret-named keys, an e-mail right after a "\n" escape, and
// identifiers that pass the card check under identifier keys: "user_id"
// and "orderId" as strings and as JSON numbers larger than 2^53, and
// "ids" as an array.
func Nested(r *rand.Rand, depth int) Doc {
	var d Doc
	body := ""
	for level := depth; level >= 0; level-- {
		email, card, num, iban, phone := Email(r), Card(r), Luhn(r, "4", 16), IBAN(r), Phone(r)
		key, password, apiKey, noted := "sk-live-"+Word(r, 28, Alnum), Word(r, 18, Alnum), Word(r, 24, Alnum), Email(r)
		userID, orderID, numID, listID := Luhn(r, "4", 16), Luhn(r, "4", 16), Luhn(r, "4", 19), Luhn(r, "5", 16)
		d.Planted = append(d.Planted, email, card, num, iban, phone, key, password, apiKey, noted)
		d.IDs = append(d.IDs, userID, orderID, numID, listID)
		doc := []member{
			{"level", json.Number(strconv.Itoa(level))},
			{"email", email},
			{"card", card},
			{"card_number", json.Number(num)},
			{"iban", iban},
			{"phone", phone},
			{"token", key},
			{"password", password},
			{"api_key", apiKey},
			{"note", "first line\n" + noted},
			{"user_id", userID},
			{"orderId", json.Number(orderID)},
			{"account_id", json.Number(numID)},
			{"ids", []any{listID, json.Number("7")}},
			{"title", `Quotes "and" back\slashes <b>&</b>`},
		}
		if level < depth {
			doc = append(doc, member{"body", body})
		}
		body = marshalObject(doc)
	}
	d.JSON = body
	return d
}

// member is one member of an object, kept in order.
type member struct {
	key   string
	value any
}

// marshalObject writes the members as a JSON object, in order.
func marshalObject(ms []member) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		v, err := json.Marshal(m.value)
		if err != nil {
			panic(err) // strings, numbers and arrays of them always marshal
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String()
}
