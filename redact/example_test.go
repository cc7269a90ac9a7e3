package redact_test

import (
	"fmt"

	"github.com/memlayer/memlayer/redact"
)

// Default masks personal data and secrets, and keeps identifiers: the
// page ID would pass the card check, but it is the value of an "id" key,
// and the tool-call ID is passed in keep.
func Example() {
	text := `{"id": 4111111111111111, "note": "call +44 20 7946 0958 or mail ana@example.com, card 4111 1111 1111 1111"} call_4242424242424242`
	out, found := redact.Default.Redact(text, []string{"call_4242424242424242"})
	fmt.Println(out)
	fmt.Println(len(found), "findings")
	// Output:
	// {"id": 4111111111111111, "note": "call [redacted phone] or mail [redacted email], card [redacted card]"} call_4242424242424242
	// 3 findings
}
