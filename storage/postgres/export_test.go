package postgres

import "context"

// PostingsPerTerm is how many postings a text query of one term reads.
const PostingsPerTerm = postingsPerTerm

// PostingsSQL returns the statement that reads a text query's postings:
// $1 the collection, $2 the terms, $3 the postings per term and, when
// filtered, $4 the filter's field tokens.
func (s *Store) PostingsSQL(filtered bool) string { return s.postingsSQL(filtered) }

// FieldTokens returns the posting terms of a filter's fields.
var FieldTokens = fieldTokens

// EstimateDF returns how many postings of term a one-term query reads in
// collection, and the number of documents it takes to hold the term.
func (s *Store) EstimateDF(ctx context.Context, collection, term string) (read, df int, err error) {
	post, st, err := s.postingsOf(ctx, collection, []string{term}, nil, postingsPerTerm)
	if err != nil {
		return 0, 0, err
	}
	return len(post[0].seqs), post[0].df(postingsPerTerm, st), nil
}
