package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/storage"
)

// Bounds of a query.
const (
	// maxQueryTerms caps the terms of a text query: a query of a long
	// text matches on its first 64 distinct terms.
	maxQueryTerms = 64
	// postingsPerTerm is how many of a term's newest documents a text
	// query reads. A term of fewer documents is read whole; a more
	// common one, which weighs little, is read from its newest.
	postingsPerTerm = 64
	// postingsPerQuery caps the postings a query of many terms reads:
	// each of its terms gets an equal share, at least minPostings.
	postingsPerQuery = 512
	minPostings      = 16
	// filterScan caps the postings of a term a query with a filter
	// checks: a term whose newest 10,000 documents pass the filter too
	// few times to fill its list is read no further, and weighed by the
	// documents that passed.
	filterScan = 10_000
	// rescored is the fewest candidates a text query scores in full.
	rescored = 20
	// denseWindow is how many candidates a vector ranks: the text
	// query's best and the collection's most recent, each up to this
	// many.
	denseWindow = 1000
)

// Collections implements [storage.Searcher]. It reads one range of the
// collections' counts, which hold a row for each collection that has a
// document, however many documents each holds.
func (s *Store) Collections(ctx context.Context, prefix string) ([]string, error) {
	return s.withPrefix(ctx, "collections", s.stats, "collection", prefix)
}

// Search implements [storage.Searcher].
//
// A text query ranks by BM25 the terms of [lexical.Terms], as the
// in-memory store does. It reads at most the 64 newest documents of
// each query term in the collection (and filter), and at most 512 in
// all (a query of more than 8 terms reads fewer of each, at least 16),
// or as many of each as the hits asked for if that is more: one range
// of an index per term, so its cost does not grow with the collection.
// A term in fewer documents is read whole and weighed exactly; a more
// common one is weighed by an estimate of how many documents hold it.
// The candidates the terms' weights put first (at least 20, and 1.5
// times the hits asked for) are then scored in full. A filter is checked
// on each posting read, so a query with a filter reads a term's postings
// until enough pass it, at most its 10,000 newest. A vector ranks by cosine similarity the text
// query's best and the collection's most recent documents (up to 1,000
// of each), not the whole collection; vectors are kept as real[] arrays.
func (s *Store) Search(ctx context.Context, collection string, q storage.Query) ([]storage.Hit, error) {
	if err := s.begin(ctx, "search", collection, true); err != nil {
		return nil, err
	}
	k, err := storage.ValidateQuery(q)
	if err != nil {
		return nil, fmt.Errorf("storage/postgres: search %s: %w", storage.Quote(collection), err)
	}
	hits, err := s.search(ctx, collection, q, k)
	if err != nil {
		return nil, s.wrap(ctx, "search", collection, err, false)
	}
	return hits, nil
}

func (s *Store) search(ctx context.Context, collection string, q storage.Query, k int) ([]storage.Hit, error) {
	terms := queryTerms(q.Text)
	if len(q.Vector) == 0 {
		if len(terms) == 0 {
			if strings.TrimSpace(q.Text) != "" {
				return nil, nil // only stop words: nothing to match
			}
			rows, err := s.recent(ctx, collection, q.Filter, k, q.Oldest)
			return storage.TopHits(rows, k), err
		}
		rows, err := s.text(ctx, collection, terms, q.Filter, k)
		return storage.TopHits(rows, k), err
	}
	return s.hybrid(ctx, collection, terms, q, k)
}

// hybrid ranks by q's vector the text query's best and the collection's
// most recent documents, and fuses that ranking with the text query's.
func (s *Store) hybrid(ctx context.Context, collection string, terms []string, q storage.Query, k int) ([]storage.Hit, error) {
	var text []storage.Ranked
	if len(terms) > 0 {
		var err error
		if text, err = s.text(ctx, collection, terms, q.Filter, denseWindow); err != nil {
			return nil, err
		}
	}
	recent, err := s.recent(ctx, collection, q.Filter, denseWindow, false)
	if err != nil {
		return nil, err
	}
	dense := storage.RankByVector(q.Vector, text, recent)
	if len(terms) == 0 {
		return storage.TopHits(dense, k), nil
	}
	return storage.TopHits(storage.Fuse(text, dense), k), nil
}

// filterArg returns a filter as a JSON object for jsonb containment (@>):
// every entry must be among a document's fields.
func filterArg(filter map[string]string) map[string]string {
	if filter == nil {
		return map[string]string{}
	}
	return filter
}

func (s *Store) rows(ctx context.Context, query string, args ...any) ([]storage.Ranked, error) {
	rs, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []storage.Ranked
	for rs.Next() {
		var r storage.Ranked
		var fields []byte
		if err := rs.Scan(&r.ID, &r.Text, &fields, &r.Vector, &r.Seq, &r.Score); err != nil {
			return nil, err
		}
		if string(fields) != "{}" {
			if err := json.Unmarshal(fields, &r.Fields); err != nil {
				return nil, fmt.Errorf("document %s: fields: %w", storage.Quote(r.ID), err)
			}
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// text ranks the documents of collection that pass filter and hold a
// term of terms, best first, and returns at most limit of them.
func (s *Store) text(ctx context.Context, collection string, terms []string, filter map[string]string, limit int) ([]storage.Ranked, error) {
	perTerm := max(postingsOf(len(terms)), limit)
	post, st, err := s.postingsOf(ctx, collection, terms, filter, perTerm)
	if err != nil || st.docs == 0 {
		return nil, err // no term matched: nothing more to read
	}
	idf := make([]float64, len(terms))
	for i, p := range post {
		idf[i] = lexical.IDF(st.docs, p.df(perTerm, st))
	}
	seqs := firstCandidates(post, idf, max(rescored, limit+limit/2))
	rows, err := s.rows(ctx, `SELECT id, text, fields, vec, seq, 0::float8 FROM `+s.docs+`
		WHERE seq = ANY($1) AND collection = $2 AND fields @> $3`, seqs, collection, filterArg(filter))
	if err != nil {
		return nil, err
	}
	storage.Rescore(rows, terms, idf, st.avg)
	return rows[:min(limit, len(rows))], nil
}

// collectionStats are a collection's number of documents, their
// average length in terms (1 when they have none) and the ordinal of its
// next document.
type collectionStats struct {
	docs, next int
	avg        float64
}

// postingList is the newest documents of one term, by seq, newest first,
// and, when as many were read as asked for, the ordinal of the oldest.
type postingList struct {
	seqs   []int64
	oldest *int64
}

// df returns how many documents of a collection of stats st hold the
// term: the length of the list when it was read whole. Else it is
// estimated as the collection's docs in the proportion perTerm bears to
// the documents given since the oldest read, which the ordinals say.
// Documents deleted since count as given, so the estimate errs low.
func (p postingList) df(perTerm int, st collectionStats) int {
	if p.oldest == nil {
		return len(p.seqs)
	}
	since := max(st.next-int(*p.oldest), perTerm)
	return min(st.docs, max(perTerm, perTerm*st.docs/since))
}

// postingsSQL returns the statement that reads, for each term of $2,
// its perTerm ($3) newest postings in collection $1, and the ordinal of
// the oldest when the list is full, with the collection's counts on
// every row: one backward range of the postings' primary key per term.
// With a filter, each posting is kept only if the document is posted
// under every field token of $4, and at most $5 of the term's newest
// postings are checked.
func (s *Store) postingsSQL(filtered bool) string {
	newest := s.postings + ` p WHERE p.collection = $1 AND p.term = q.term`
	if filtered {
		newest = `(SELECT p.seq FROM ` + newest + ` ORDER BY p.seq DESC LIMIT $5) p
			WHERE (SELECT count(*) FROM ` + s.postings + ` f
				WHERE f.collection = $1 AND f.term = ANY($4::text[]) AND f.seq = p.seq) = cardinality($4::text[])`
	}
	return `SELECT q.i, x.seqs, o.ord, st.docs, st.next,
			CASE WHEN st.length > 0 THEN st.length::float8 / st.docs ELSE 1 END
		FROM ` + s.stats + ` st
		CROSS JOIN unnest($2::text[]) WITH ORDINALITY AS q(term, i)
		CROSS JOIN LATERAL (SELECT coalesce(array_agg(p.seq ORDER BY p.seq DESC), '{}') AS seqs FROM (
			SELECT p.seq FROM ` + newest + `
			ORDER BY p.seq DESC LIMIT $3) p) x
		LEFT JOIN LATERAL (SELECT ord FROM ` + s.docs + ` WHERE seq = x.seqs[$3]) o ON true
		WHERE st.collection = $1`
}

// postingsOf reads each term's newest postings, at most perTerm, and the
// collection's counts, in one statement. The counts are zero when the
// collection has no document or no term any posting.
func (s *Store) postingsOf(ctx context.Context, collection string, terms []string, filter map[string]string, perTerm int) ([]postingList, collectionStats, error) {
	args := []any{collection, terms, perTerm}
	if len(filter) > 0 {
		args = append(args, fieldTokens(filter), filterScan)
	}
	rs, err := s.pool.Query(ctx, s.postingsSQL(len(filter) > 0), args...)
	if err != nil {
		return nil, collectionStats{}, err
	}
	defer rs.Close()
	post := make([]postingList, len(terms))
	var st collectionStats
	found := false
	for rs.Next() {
		var i int
		var p postingList
		if err := rs.Scan(&i, &p.seqs, &p.oldest, &st.docs, &st.next, &st.avg); err != nil {
			return nil, collectionStats{}, err
		}
		post[i-1] = p
		found = found || len(p.seqs) > 0
	}
	if !found {
		st = collectionStats{}
	}
	return post, st, rs.Err()
}

// postingsOf returns how many postings a query of n terms reads of each:
// postingsPerTerm, less for a query of many terms, so that it reads at
// most postingsPerQuery in all, but never fewer than minPostings.
func postingsOf(n int) int {
	return min(postingsPerTerm, max(minPostings, postingsPerQuery/max(n, 1)))
}

// firstCandidates returns the seqs of at most n documents of the
// postings, by the sum of the idf of the terms they hold (BM25 with
// every count 1 and every length the average), ties newest first.
func firstCandidates(post []postingList, idf []float64, n int) []int64 {
	weight := map[int64]float64{}
	for i, p := range post {
		for _, seq := range p.seqs {
			weight[seq] += idf[i]
		}
	}
	seqs := slices.SortedFunc(maps.Keys(weight), func(a, b int64) int {
		return cmp.Or(cmp.Compare(weight[b], weight[a]), cmp.Compare(b, a))
	})
	return seqs[:min(n, len(seqs))]
}

// recent lists the documents that pass filter, newest (or oldest)
// first. With a filter it walks the postings of the first field's
// token, so it reads about as many rows as it returns when the field is
// selective; the other fields are checked on the way.
func (s *Store) recent(ctx context.Context, collection string, filter map[string]string, limit int, oldest bool) ([]storage.Ranked, error) {
	order := "DESC"
	if oldest {
		order = "ASC"
	}
	if len(filter) == 0 {
		return s.rows(ctx, `SELECT id, text, fields, vec, seq, 0::float8 FROM `+s.docs+`
			WHERE collection = $1 ORDER BY seq `+order+` LIMIT $2`, collection, limit)
	}
	return s.rows(ctx, `SELECT d.id, d.text, d.fields, d.vec, d.seq, 0::float8
		FROM `+s.postings+` f JOIN `+s.docs+` d ON d.seq = f.seq
		WHERE f.collection = $1 AND f.term = $2 AND d.collection = $1 AND d.fields @> $3
		ORDER BY f.seq `+order+` LIMIT $4`, collection, fieldTokens(filter)[0], filter, limit)
}

// queryTerms returns the distinct terms of a query's text, at most
// maxQueryTerms, in the order they first occur.
func queryTerms(text string) []string {
	var out []string
	for _, t := range lexical.Terms(nil, text) {
		if len(out) == maxQueryTerms {
			break
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

var _ storage.Searcher = (*Store)(nil)
