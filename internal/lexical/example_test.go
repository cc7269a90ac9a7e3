package lexical_test

import (
	"fmt"

	"github.com/memlayer/memlayer/internal/lexical"
)

// Rank scores a small corpus against a query naming an ID; Similarity
// is the score divided by the top one.
func ExampleCorpus_Rank() {
	var c lexical.Corpus
	c.Add("call-1", `cms_createPage {"title":"About"} → page-123`)
	c.Add("call-2", `cms_createPage {"title":"Contact"} → page-124`)
	c.Add("call-3", `cms_updateSection → sec-9 of page-123`)
	for _, h := range c.Rank("publish page-123") {
		fmt.Printf("%s %.2f\n", h.Key, h.Similarity)
	}
	fmt.Println(lexical.Tokens(nil, "Open Page-123!"))
	// Output:
	// call-1 1.00
	// call-3 0.90
	// call-2 0.12
	// [open page 123 page-123]
}
