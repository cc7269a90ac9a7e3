package semantictest_test

import (
	"context"
	"fmt"

	"github.com/memlayer/memlayer/semanticmemory/semantictest"
)

// The zero NGramEmbedder is ready to use. Vectors have unit length, so the
// cosine similarity of two texts is the dot product of their vectors:
// texts sharing word fragments score well above unrelated ones.
func ExampleNGramEmbedder() {
	ctx := context.Background()
	var e semantictest.NGramEmbedder

	docs, err := e.EmbedDocuments(ctx, []string{
		"Alice prefers invoices by e-mail",
		"The staging server runs on Fridays",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	q, err := e.EmbedQuery(ctx, "how does Alice want her invoice?")
	if err != nil {
		fmt.Println(err)
		return
	}
	cosine := func(a, b []float32) float32 {
		var s float32
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	fmt.Println("dimensions:", len(q))
	fmt.Printf("invoice fact: %.2f\n", cosine(q, docs[0]))
	fmt.Printf("server fact:  %.2f\n", cosine(q, docs[1]))
	// Output:
	// dimensions: 512
	// invoice fact: 0.47
	// server fact:  0.02
}
