package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/storage"
)

// Bounds of a query.
const (
	// maxQueryTerms caps the terms of a text query: a query of a long
	// text matches on its first 64 distinct words.
	maxQueryTerms = 64
	// denseWindow is how many candidates a vector ranks: the text
	// query's best and the collection's most recent, each up to this
	// many.
	denseWindow = 1000
)

// tsConfig is the text search configuration of the index: English
// stemming and stop words.
const tsConfig = "english"

// Index implements [storage.Searcher]. The documents are written in one
// transaction: a failed call indexes none of them. A replaced document
// takes a new place in the order of indexing, as the newest.
func (s *Store) Index(ctx context.Context, collection string, docs ...storage.Document) error {
	if err := s.begin(ctx, "index", collection, true); err != nil {
		return err
	}
	for _, d := range docs {
		if err := storage.ValidateDocument(d); err != nil {
			return fmt.Errorf("storage/postgres: index %s: %w", storage.Quote(collection), err)
		}
		if strings.IndexByte(d.Text, 0) >= 0 || strings.IndexByte(d.ID, 0) >= 0 {
			return fmt.Errorf("storage/postgres: index %s: document %s: %w: a NUL byte", storage.Quote(collection), storage.Quote(d.ID), storage.ErrInvalidDocument)
		}
	}
	if len(docs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, d := range docs {
		fields := d.Fields
		if fields == nil {
			fields = map[string]string{}
		}
		var vec []float32
		if len(d.Vector) > 0 {
			vec = d.Vector
		}
		b.Queue(`DELETE FROM `+s.docs+` WHERE collection = $1 AND id = $2`, collection, d.ID)
		b.Queue(`INSERT INTO `+s.docs+` (collection, id, text, fields, vec, tsv)
			VALUES ($1, $2, $3, $4, $5, to_tsvector('`+tsConfig+`', $6))`, collection, d.ID, d.Text, fields, vec,
			// Folded here: a database of locale C folds only ASCII.
			strings.ToLower(d.Text))
	}
	return s.writeBatch(ctx, "index", collection, b)
}

// writeBatch runs b in one transaction.
func (s *Store) writeBatch(ctx context.Context, op, collection string, b *pgx.Batch) error {
	c, wctx, done, err := s.acquire(ctx, op, collection)
	if err != nil {
		return err
	}
	defer done()
	err = pgx.BeginFunc(wctx, c, func(tx pgx.Tx) error {
		return tx.SendBatch(wctx, b).Close()
	})
	if err != nil {
		return s.wrap(ctx, op, collection, err, true)
	}
	return nil
}

// Unindex implements [storage.Searcher].
func (s *Store) Unindex(ctx context.Context, collection string, ids ...string) error {
	if err := s.begin(ctx, "unindex", collection, true); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	c, wctx, done, err := s.acquire(ctx, "unindex", collection)
	if err != nil {
		return err
	}
	defer done()
	if _, err := c.Exec(wctx, `DELETE FROM `+s.docs+` WHERE collection = $1 AND id = ANY($2)`, collection, ids); err != nil {
		return s.wrap(ctx, "unindex", collection, err, true)
	}
	return nil
}

// Drop implements [storage.Searcher].
func (s *Store) Drop(ctx context.Context, collection string) error {
	if err := s.begin(ctx, "drop", collection, true); err != nil {
		return err
	}
	c, wctx, done, err := s.acquire(ctx, "drop", collection)
	if err != nil {
		return err
	}
	defer done()
	if _, err := c.Exec(wctx, `DELETE FROM `+s.docs+` WHERE collection = $1`, collection); err != nil {
		return s.wrap(ctx, "drop", collection, err, true)
	}
	return nil
}

// Collections implements [storage.Searcher]. It seeks the index once per
// collection (a loose index scan), however many documents each holds.
func (s *Store) Collections(ctx context.Context, prefix string) ([]string, error) {
	if err := s.begin(ctx, "collections", prefix, false); err != nil {
		return nil, err
	}
	names := []string{}
	from, ok := validPart(prefix)
	if !ok || strings.IndexByte(prefix, 0) >= 0 {
		return names, nil
	}
	rows, err := s.pool.Query(ctx, `WITH RECURSIVE c(name) AS (
			(SELECT collection FROM `+s.docs+` WHERE collection >= $1 ORDER BY collection LIMIT 1)
			UNION ALL
			SELECT (SELECT collection FROM `+s.docs+` WHERE collection > c.name ORDER BY collection LIMIT 1)
			FROM c WHERE c.name IS NOT NULL AND starts_with(c.name, $1)
		) SELECT name FROM c WHERE name IS NOT NULL`, from)
	if err != nil {
		return nil, s.wrap(ctx, "collections", prefix, err, false)
	}
	all, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.wrap(ctx, "collections", prefix, err, false)
	}
	for _, n := range all {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	return names, nil
}

// Search implements [storage.Searcher]. A text query matches the
// documents that share any of its words (a tsquery of the words joined by
// OR, English stemming, served by the GIN index). Each matching word adds
// its weight, ln(1 + M/m) for m of the M matching documents holding it,
// so more and rarer words rank first; ts_rank_cd breaks ties. Vectors are
// kept as real[] arrays: a vector ranks by cosine similarity the text
// query's best and the collection's most recent documents (up to 1,000
// of each), not the whole collection, and with text the two rankings are
// fused by reciprocal rank.
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

func (s *Store) text(ctx context.Context, collection string, terms []string, filter map[string]string, limit int) ([]storage.Ranked, error) {
	all := strings.Join(terms, " | ")
	query := `WITH m AS MATERIALIZED (
			SELECT seq, tsv FROM ` + s.docs + `
			WHERE collection = $1 AND tsv @@ to_tsquery('` + tsConfig + `', $2) AND fields @> $4),
		w AS MATERIALIZED (
			SELECT u.q, ln(1 + (SELECT count(*) FROM m)::float8 /
				greatest(1, (SELECT count(*) FROM m WHERE m.tsv @@ to_tsquery('` + tsConfig + `', u.q)))) AS w
			FROM unnest($3::text[]) AS u(q))
		SELECT d.id, d.text, d.fields, d.vec, d.seq,
			(SELECT coalesce(sum(w.w), 0) FROM w WHERE m.tsv @@ to_tsquery('` + tsConfig + `', w.q))
				+ 0.1 * ts_rank_cd(m.tsv, to_tsquery('` + tsConfig + `', $2), 1) AS score
		FROM m JOIN ` + s.docs + ` d ON d.seq = m.seq
		ORDER BY score DESC, d.seq DESC LIMIT $5`
	return s.rows(ctx, query, collection, all, terms, filterArg(filter), limit)
}

func (s *Store) recent(ctx context.Context, collection string, filter map[string]string, limit int, oldest bool) ([]storage.Ranked, error) {
	order := "DESC"
	if oldest {
		order = "ASC"
	}
	query := `SELECT id, text, fields, vec, seq, 0::float8 FROM ` + s.docs + `
		WHERE collection = $1 AND fields @> $2 ORDER BY seq ` + order + ` LIMIT $3`
	return s.rows(ctx, query, collection, filterArg(filter), limit)
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

// queryTerms returns a query's distinct words, English function words
// left out, each quoted as a tsquery lexeme (so no word is read as
// tsquery syntax; to_tsquery still stems it).
func queryTerms(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range lexical.Tokens(nil, text) {
		if seen[t] || lexical.IsStopWord(t) || strings.IndexByte(t, 0) >= 0 {
			continue
		}
		seen[t] = true
		if len(seen) > maxQueryTerms {
			break
		}
		t = strings.ReplaceAll(t, `\`, `\\`)
		out = append(out, `'`+strings.ReplaceAll(t, `'`, `''`)+`'`)
	}
	return out
}

var _ storage.Searcher = (*Store)(nil)
