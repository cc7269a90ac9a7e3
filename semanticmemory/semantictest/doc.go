// Package semantictest holds test support for semantic (long-term) memory:
// a deterministic, offline embedder and a synthetic retrieval evaluation set
// with a harness that measures recall@k.
//
// [NGramEmbedder] implements langchaingo's embeddings.Embedder with hashed
// character n-grams. It needs no network and no model, gives the same
// vector for the same text on every machine, and places texts that share
// word fragments close together, so tests of anything that takes an
// embeddings.Embedder can use it in place of a hosted model.
//
// [Load] returns the evaluation set (509 facts about the users, sites and
// decisions of a CMS assistant's workspace; 122 queries with their relevant
// facts, 35 of them paraphrases sharing no word with their facts), and
// [RecallAtK] measures a searcher on it:
//
//	set, err := semantictest.Load()
//	// index set.Facts (their Text) in the memory under test, then:
//	res, err := semantictest.RecallAtK(set, 5, func(q string, k int) ([]string, error) {
//		return search(q, k) // the IDs of the facts found, best first
//	})
//	t.Logf("FIGURE %v", res) // recall@5 all …, paraphrased …, other …
//
// testdata/README.md describes how the set is built; the generator is
// gen_test.go.
package semantictest
