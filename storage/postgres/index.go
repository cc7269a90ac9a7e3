package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/storage"
)

// The search index is three tables. docs holds the documents, each with
// its postings' terms, its length in terms and its ordinal in its
// collection. postings holds one row per distinct term of a document
// and per field, keyed (collection, term, seq): a term's newest
// documents in a collection are one backward range of the primary key.
// doc_stats holds each collection's count of documents, their total
// length and the ordinal its next document takes, kept in the
// transaction that writes the documents: BM25 reads them without a scan.
// Its row of a collection is locked by each write to the collection
// until the write commits, so concurrent writers of one collection
// commit one after another; writers of different collections do not
// wait for each other.

// Index implements [storage.Searcher]. The documents are written in one
// transaction: a failed call indexes none of them. A replaced document
// takes a new place in the order of indexing, as the newest.
func (s *Store) Index(ctx context.Context, collection string, docs ...storage.Document) error {
	if err := s.begin(ctx, "index", collection, true); err != nil {
		return err
	}
	for _, d := range docs {
		if err := checkDocument(d); err != nil {
			return fmt.Errorf("storage/postgres: index %s: %w", storage.Quote(collection), err)
		}
	}
	if len(docs) == 0 {
		return nil
	}
	docs = lastOfEachID(docs)
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	// The counts are locked first, the documents replaced deleted in
	// one statement, and the counts moved once past the new documents.
	b := &pgx.Batch{}
	b.Queue(s.lockStatsSQL(true), collection)
	b.Queue(s.deleteDocsSQL(), collection, ids)
	total := 0
	for i, d := range docs {
		terms, length := docTerms(d.Text, d.Fields)
		total += length
		b.Queue(s.insertDocSQL(), collection, d.ID, d.Text, filterArg(d.Fields), vectorArg(d.Vector), terms, length, i)
	}
	b.Queue(`UPDATE `+s.stats+` SET docs = docs + $2, length = length + $3, next = next + $2 WHERE collection = $1`,
		collection, len(docs), total)
	return s.writeBatch(ctx, "index", collection, b)
}

// lastOfEachID returns docs without the documents a later one of the
// same ID replaces: what indexing them one after another leaves.
func lastOfEachID(docs []storage.Document) []storage.Document {
	last := make(map[string]int, len(docs))
	for i, d := range docs {
		last[d.ID] = i
	}
	if len(last) == len(docs) {
		return docs
	}
	out := make([]storage.Document, 0, len(last))
	for i, d := range docs {
		if last[d.ID] == i {
			out = append(out, d)
		}
	}
	return out
}

// checkDocument reports whether d can be indexed.
func checkDocument(d storage.Document) error {
	if err := storage.ValidateDocument(d); err != nil {
		return err
	}
	if strings.IndexByte(d.Text, 0) >= 0 || strings.IndexByte(d.ID, 0) >= 0 {
		return fmt.Errorf("document %s: %w: a NUL byte", storage.Quote(d.ID), storage.ErrInvalidDocument)
	}
	return nil
}

// vectorArg returns a document's vector as a real[] parameter: NULL when
// it has none.
func vectorArg(v []float32) []float32 {
	if len(v) == 0 {
		return nil
	}
	return v
}

// lockStatsSQL locks the counts of collection $1 for the transaction,
// its first statement, so that writers of one collection take their
// locks in one order and never deadlock. With create, the row is created
// if missing (a write that adds documents); the write then counts them.
func (s *Store) lockStatsSQL(create bool) string {
	if create {
		return `INSERT INTO ` + s.stats + ` AS st (collection, docs, length, next) VALUES ($1, 0, 0, 0)
			ON CONFLICT (collection) DO UPDATE SET next = st.next`
	}
	return `SELECT 1 FROM ` + s.stats + ` WHERE collection = $1 FOR UPDATE`
}

// deleteDocsSQL deletes the documents of collection $1 whose IDs are in
// $2, with their postings, and takes them off the collection's counts.
func (s *Store) deleteDocsSQL() string {
	return `WITH d AS (DELETE FROM ` + s.docs + ` WHERE collection = $1 AND id = ANY($2) RETURNING seq, terms, length),
		p AS (DELETE FROM ` + s.postings + ` p USING d, unnest(d.terms) AS t(term)
			WHERE p.collection = $1 AND p.term = t.term AND p.seq = d.seq)
		UPDATE ` + s.stats + ` st SET docs = st.docs - x.n, length = st.length - x.len
		FROM (SELECT count(*) AS n, coalesce(sum(length), 0) AS len FROM d) x
		WHERE st.collection = $1 AND x.n > 0`
}

// insertDocSQL adds a document to collection $1, with its postings. It
// takes the ordinal $8 places after the collection's next, which the
// write then moves past its documents.
func (s *Store) insertDocSQL() string {
	return `WITH d AS (INSERT INTO ` + s.docs + ` (collection, id, text, fields, vec, terms, length, ord)
			SELECT $1, $2, $3, $4, $5, $6, $7, st.next + $8 FROM ` + s.stats + ` st WHERE st.collection = $1 RETURNING seq)
		INSERT INTO ` + s.postings + ` (collection, term, seq) SELECT $1, t, d.seq FROM d, unnest($6::text[]) AS t`
}

// dropEmptySQL deletes collection $1's counts when it has no document
// left, so that nothing of an emptied collection stays behind.
func (s *Store) dropEmptySQL() string {
	return `DELETE FROM ` + s.stats + ` WHERE collection = $1 AND docs <= 0`
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
	b := &pgx.Batch{}
	b.Queue(s.lockStatsSQL(false), collection)
	b.Queue(s.deleteDocsSQL(), collection, ids)
	b.Queue(s.dropEmptySQL(), collection)
	return s.writeBatch(ctx, "unindex", collection, b)
}

// Drop implements [storage.Searcher]. It deletes the collection's
// counts (first, as every write of the collection locks them first),
// postings and documents in one transaction.
func (s *Store) Drop(ctx context.Context, collection string) error {
	if err := s.begin(ctx, "drop", collection, true); err != nil {
		return err
	}
	b := &pgx.Batch{}
	for _, t := range []string{s.stats, s.postings, s.docs} {
		b.Queue(`DELETE FROM `+t+` WHERE collection = $1`, collection)
	}
	return s.writeBatch(ctx, "drop", collection, b)
}

// docTerms returns the terms a document is posted under, each once: its
// distinct terms of [lexical.Terms], then a token of each field; and its
// length, the number of its terms with repeats.
func docTerms(text string, fields map[string]string) ([]string, int) {
	terms := lexical.Terms(nil, text)
	out := make([]string, 0, len(terms)+len(fields))
	seen := make(map[string]bool, len(terms)+len(fields))
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if t := fieldToken(name, fields[name]); !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, len(terms)
}

// fieldToken is the posting term of a document's field: "=" and 64 bits
// of the SHA-256 of its name and value. No term of [lexical.Terms]
// starts with "=". Two fields of one token share their postings, which
// costs a filtered query some of its reach; every hit is checked against
// its fields.
func fieldToken(name, value string) string {
	h := sha256.Sum256([]byte(name + "\x00" + value))
	return "=" + hex.EncodeToString(h[:8])
}

// fieldTokens returns the posting terms of a filter's fields, in the
// order of their names.
func fieldTokens(filter map[string]string) []string {
	out := make([]string, 0, len(filter))
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		out = append(out, fieldToken(name, filter[name]))
	}
	return out
}

// postEarlier posts the documents that tables of schema version 2 hold:
// their terms, lengths and ordinals, and their collections' counts. It
// runs in the transaction of the migration, reading 1,000 documents at
// a time.
func (s *Store) postEarlier(ctx context.Context, tx pgx.Tx) error {
	next := map[string]int64{}
	var last int64
	for {
		rows, err := s.earlierBatch(ctx, tx, last)
		if err != nil || len(rows) == 0 {
			if err == nil {
				_, err = tx.Exec(ctx, `INSERT INTO `+s.stats+` (collection, docs, length, next)
					SELECT collection, count(*), sum(length), max(ord) + 1 FROM `+s.docs+` GROUP BY collection`)
			}
			return err
		}
		b := &pgx.Batch{}
		for _, r := range rows {
			b.Queue(`WITH d AS (UPDATE `+s.docs+` SET terms = $2, length = $3, ord = $4 WHERE seq = $1 RETURNING collection, seq)
				INSERT INTO `+s.postings+` (collection, term, seq) SELECT d.collection, t, d.seq FROM d, unnest($2::text[]) AS t`,
				r.seq, r.terms, r.length, next[r.collection])
			next[r.collection]++
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		last = rows[len(rows)-1].seq
	}
}

// earlierRow is a document of earlier tables, with its postings.
type earlierRow struct {
	seq        int64
	collection string
	terms      []string
	length     int
}

// earlierBatch reads up to 1,000 documents after seq last.
func (s *Store) earlierBatch(ctx context.Context, tx pgx.Tx, last int64) ([]earlierRow, error) {
	rs, err := tx.Query(ctx, `SELECT seq, collection, text, fields FROM `+s.docs+` WHERE seq > $1 ORDER BY seq LIMIT 1000`, last)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rs, func(row pgx.CollectableRow) (earlierRow, error) {
		var r earlierRow
		var text string
		var fields []byte
		if err := row.Scan(&r.seq, &r.collection, &text, &fields); err != nil {
			return r, err
		}
		var f map[string]string
		if err := json.Unmarshal(fields, &f); err != nil {
			return r, fmt.Errorf("document %d: fields: %w", r.seq, err)
		}
		r.terms, r.length = docTerms(text, f)
		return r, nil
	})
}
