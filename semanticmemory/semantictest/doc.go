// Package semantictest holds test support for semantic (long-term) memory:
// a deterministic, offline embedder and a synthetic retrieval evaluation set
// with a harness that measures recall@k.
//
// [NGramEmbedder] implements langchaingo's embeddings.Embedder with hashed
// character n-grams. It needs no network and no model, gives the same
// vector for the same text on every machine, and places texts that share
// word fragments close together, so tests of anything that takes an
// embeddings.Embedder can use it in place of a hosted model.
package semantictest
