package sqlite

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/storage"
)

// The search index: documents in one table; their postings, each term
// tagged with the document's collection, in a b-tree that a text query
// reads newest first, one range per term; and the count and length of
// each collection's documents, which BM25 weighs the terms with.
const (
	docsTable     = "memlayer_docs"
	postingsTable = "memlayer_postings"
	statsTable    = "memlayer_doc_stats"
	fieldsTable   = "memlayer_doc_fields"
	// termsTable is the FTS5 term index of earlier files; opening such
	// a file replaces it with the postings (see [postingsSchema]).
	termsTable = "memlayer_terms"
	// oldFTSTable is the index of still earlier files, which ranked
	// with FTS5's bm25() over every match; opening such a file replaces
	// it too.
	oldFTSTable = "memlayer_fts"
)

// fieldsSchema creates the table of the documents' fields, one row per
// field, so that a filtered listing reads an index range instead of the
// collection. A file whose documents predate it is filled from them once,
// when the table is created.
var fieldsSchema = []string{
	`CREATE TABLE ` + fieldsTable + ` (
		doc        INTEGER NOT NULL,
		collection TEXT NOT NULL,
		name       TEXT NOT NULL,
		value      TEXT NOT NULL
	)`,
	`CREATE INDEX ` + fieldsTable + `_value ON ` + fieldsTable + ` (collection, name, value, doc)`,
	`CREATE INDEX ` + fieldsTable + `_doc ON ` + fieldsTable + ` (doc)`,
	`INSERT INTO ` + fieldsTable + ` (doc, collection, name, value)
		SELECT d.rowid, d.collection, j.key, j.value FROM ` + docsTable + ` d, json_each(d.fields) j`,
	`CREATE TRIGGER ` + fieldsTable + `_ai AFTER INSERT ON ` + docsTable + ` BEGIN
		INSERT INTO ` + fieldsTable + ` (doc, collection, name, value)
			SELECT new.rowid, new.collection, key, value FROM json_each(new.fields);
	END`,
	`CREATE TRIGGER ` + fieldsTable + `_ad AFTER DELETE ON ` + docsTable + ` BEGIN
		DELETE FROM ` + fieldsTable + ` WHERE doc = old.rowid;
	END`,
}

// searchSchema creates the documents' table in a file of any earlier
// layout: opening an old file adds it, empty.
var searchSchema = []string{
	`CREATE TABLE IF NOT EXISTS ` + docsTable + ` (
		rowid      INTEGER PRIMARY KEY,
		collection TEXT NOT NULL,
		id         TEXT NOT NULL,
		text       TEXT NOT NULL,
		fields     TEXT NOT NULL,
		vector     BLOB,
		UNIQUE (collection, id)
	)`,
	`CREATE INDEX IF NOT EXISTS ` + docsTable + `_recent ON ` + docsTable + ` (collection, rowid)`,
}

// earlierIndexes drops the term indexes of earlier files with their
// triggers: the FTS5 table of the documents' text, and the FTS5 term
// index that the postings replace.
var earlierIndexes = []string{
	`DROP TRIGGER IF EXISTS ` + docsTable + `_ai`,
	`DROP TRIGGER IF EXISTS ` + docsTable + `_ad`,
	`DROP TRIGGER IF EXISTS ` + docsTable + `_au`,
	`DROP TABLE IF EXISTS ` + oldFTSTable,
	`DROP TRIGGER IF EXISTS ` + termsTable + `_ai`,
	`DROP TRIGGER IF EXISTS ` + termsTable + `_ad`,
	`DROP TABLE IF EXISTS ` + termsTable,
}

// statsSchema creates the collections' counts and the documents'
// lengths and ordinals, in a file whose documents predate them; they
// are then written by [indexEarlier].
var statsSchema = []string{
	// A collection's docs, their total length, and the ordinal its next
	// document takes.
	`CREATE TABLE ` + statsTable + ` (
		collection TEXT PRIMARY KEY,
		docs       INTEGER NOT NULL,
		length     INTEGER NOT NULL,
		next       INTEGER NOT NULL
	) WITHOUT ROWID`,
	// A document's length in terms, and its ordinal in its collection:
	// how many documents the collection had been given before it.
	`ALTER TABLE ` + docsTable + ` ADD COLUMN length INTEGER NOT NULL DEFAULT 0`,
	`ALTER TABLE ` + docsTable + ` ADD COLUMN ord INTEGER NOT NULL DEFAULT 0`,
}

// postingsSchema creates the postings beside the documents' table, and
// the triggers that keep them and the collections' counts. It runs after
// [earlierIndexes] (and [statsSchema] in a file without counts); the
// documents of an earlier file are then posted once, by
// [Store.createPostings], in the same transaction.
//
// A posting is a token and the rowid of a document that holds it. A
// document's tokens (see [docTerms]) are its distinct terms, each
// prefixed by a tag of its collection, and a tag of each of its fields,
// so a term's postings in one collection, newest first, are one
// backward range of the primary key that reads no other collection's.
// The document's row keeps its tokens (a JSON array), from which the
// triggers write its postings when it is inserted and delete them when
// it is deleted. A document without terms has no tokens and no
// postings. The same triggers keep the collection's count and total
// length of documents.
var postingsSchema = []string{
	`CREATE TABLE ` + postingsTable + ` (
		token TEXT NOT NULL,
		doc   INTEGER NOT NULL,
		PRIMARY KEY (token, doc)
	) WITHOUT ROWID`,
	`ALTER TABLE ` + docsTable + ` ADD COLUMN tokens TEXT`,
	`CREATE TRIGGER ` + postingsTable + `_ai AFTER INSERT ON ` + docsTable + ` WHEN new.tokens IS NOT NULL BEGIN
		INSERT OR IGNORE INTO ` + postingsTable + ` (token, doc) SELECT value, new.rowid FROM json_each(new.tokens);
	END`,
	`CREATE TRIGGER ` + postingsTable + `_ad AFTER DELETE ON ` + docsTable + ` WHEN old.tokens IS NOT NULL BEGIN
		DELETE FROM ` + postingsTable + ` WHERE token IN (SELECT value FROM json_each(old.tokens)) AND doc = old.rowid;
	END`,
	`CREATE TRIGGER ` + statsTable + `_ai AFTER INSERT ON ` + docsTable + ` BEGIN
		INSERT INTO ` + statsTable + ` (collection, docs, length, next) VALUES (new.collection, 1, new.length, new.ord + 1)
			ON CONFLICT (collection) DO UPDATE SET docs = docs + 1, length = length + excluded.length, next = excluded.next;
	END`,
	`CREATE TRIGGER ` + statsTable + `_ad AFTER DELETE ON ` + docsTable + ` BEGIN
		UPDATE ` + statsTable + ` SET docs = docs - 1, length = length - old.length WHERE collection = old.collection;
		DELETE FROM ` + statsTable + ` WHERE collection = old.collection AND docs <= 0;
	END`,
}

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

// Index implements [storage.Searcher]. The documents are written in one
// transaction: a failed call indexes none of them.
func (s *Store) Index(ctx context.Context, collection string, docs ...storage.Document) error {
	if err := s.begin(ctx, "index", collection, true); err != nil {
		return err
	}
	for _, d := range docs {
		if err := storage.ValidateDocument(d); err != nil {
			return fmt.Errorf("storage/sqlite: index %s: %w", storage.Quote(collection), err)
		}
	}
	if len(docs) == 0 {
		return nil
	}
	rows := make([]indexRow, len(docs))
	for i, d := range docs {
		r, err := newIndexRow(collection, d)
		if err != nil {
			return fmt.Errorf("storage/sqlite: index %s: %w", storage.Quote(collection), err)
		}
		rows[i] = r
	}
	if err := s.warm(ctx, deleteDocSQL, insertDocSQL); err != nil {
		return s.wrap(ctx, "index", collection, err)
	}
	return s.writeTx(ctx, "index", collection, func(tx *sql.Tx) error {
		st, err := s.indexStmts(ctx, tx)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if err := r.write(ctx, st); err != nil {
				return err
			}
		}
		return nil
	})
}

// indexRow is a document as [Store.Index] writes it.
type indexRow struct {
	collection, id, text, fields string
	vector                       []byte
	tokens                       any // its tokens, a JSON array; nil without terms
	length                       int // its number of terms
}

func newIndexRow(collection string, d storage.Document) (indexRow, error) {
	fields, err := json.Marshal(d.Fields)
	if err != nil {
		return indexRow{}, err
	}
	if d.Fields == nil {
		fields = []byte("{}")
	}
	tokens, length := docTerms(collection, d.Text, d.Fields)
	return indexRow{collection, d.ID, d.Text, string(fields), encodeVector(d.Vector), tokens, length}, nil
}

// The statements of an index write.
const (
	deleteDocSQL = `DELETE FROM ` + docsTable + ` WHERE collection = ? AND id = ?`
	insertDocSQL = `INSERT INTO ` + docsTable + ` (collection, id, text, fields, vector, length, tokens, ord)
		VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, coalesce((SELECT next FROM ` + statsTable + ` WHERE collection = ?1), 0))`
)

// indexStmts are the statements of an index write, prepared once for
// the transaction.
type indexStmts struct{ del, doc *sql.Stmt }

func (s *Store) indexStmts(ctx context.Context, tx *sql.Tx) (indexStmts, error) {
	var st indexStmts
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&st.del, deleteDocSQL}, {&st.doc, insertDocSQL}} {
		var err error
		if *p.stmt, err = s.txStmt(ctx, tx, p.sql); err != nil {
			return st, err
		}
	}
	return st, nil
}

// write replaces the document of the row's ID: delete, then insert, so
// a replaced document takes a new rowid and counts as the newest. The
// triggers delete the old document's postings and write the new one's.
// A document without terms gets no postings: no text query can match
// it, and a filter without text reads the fields' table. A record of
// progress replaced at every step (a layer's marker) then costs the
// postings nothing.
func (r indexRow) write(ctx context.Context, st indexStmts) error {
	if _, err := st.del.ExecContext(ctx, r.collection, r.id); err != nil {
		return err
	}
	_, err := st.doc.ExecContext(ctx, r.collection, r.id, r.text, r.fields, r.vector, r.length, r.tokens)
	return err
}

// Unindex implements [storage.Searcher].
func (s *Store) Unindex(ctx context.Context, collection string, ids ...string) error {
	if err := s.begin(ctx, "unindex", collection, true); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	return s.writeTx(ctx, "unindex", collection, func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.Exec(`DELETE FROM `+docsTable+` WHERE collection = ? AND id = ?`, collection, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// Drop implements [storage.Searcher].
func (s *Store) Drop(ctx context.Context, collection string) error {
	if err := s.begin(ctx, "drop", collection, true); err != nil {
		return err
	}
	return s.writeTx(ctx, "drop", collection, func(tx *sql.Tx) error {
		_, err := tx.Exec(`DELETE FROM `+docsTable+` WHERE collection = ?`, collection)
		return err
	})
}

// Collections implements [storage.Searcher]. It seeks the index once per
// collection, however many documents each holds.
func (s *Store) Collections(ctx context.Context, prefix string) ([]string, error) {
	if err := s.begin(ctx, "collections", prefix, false); err != nil {
		return nil, err
	}
	var names []string
	if s.noIndex {
		return names, nil
	}
	err := s.retry(ctx, func() error {
		names = names[:0]
		q := `SELECT collection FROM ` + docsTable + ` WHERE collection >= ? ORDER BY collection LIMIT 1`
		from := prefix
		for {
			var c string
			err := s.db.QueryRowContext(ctx, q, from).Scan(&c)
			if errors.Is(err, sql.ErrNoRows) || err == nil && !strings.HasPrefix(c, prefix) {
				return nil
			}
			if err != nil {
				return err
			}
			names = append(names, c)
			q = `SELECT collection FROM ` + docsTable + ` WHERE collection > ? ORDER BY collection LIMIT 1`
			from = c
		}
	})
	if err != nil {
		return nil, s.wrap(ctx, "collections", prefix, err)
	}
	return slices.Clip(names), nil
}

// Search implements [storage.Searcher].
//
// A text query ranks by BM25 the terms of [lexical.Terms], as the
// in-memory store does, and reads at most the 64 newest documents of
// each query term in the collection (and filter), and at most 512 in
// all (a query of more than 8 terms reads fewer of each, at least 16),
// or as many of each as the hits asked for if that is more: one range
// of an index per term, so its cost does not grow with the collection.
// A term in fewer documents is read whole and weighed exactly; a more
// common one is weighed by an estimate of how many documents hold it.
// The candidates the terms' weights put first (at least 20, and 1.5
// times the hits asked for) are then scored in full. A filter is
// checked on each posting read, so a query with a filter reads a term's
// postings until enough pass it, at most its 10,000 newest. A vector
// ranks by cosine similarity the text query's best and the collection's
// most recent documents (up to 1,000 of each), not the whole
// collection.
func (s *Store) Search(ctx context.Context, collection string, q storage.Query) ([]storage.Hit, error) {
	if err := s.begin(ctx, "search", collection, true); err != nil {
		return nil, err
	}
	k, err := storage.ValidateQuery(q)
	if err != nil {
		return nil, fmt.Errorf("storage/sqlite: search %s: %w", storage.Quote(collection), err)
	}
	var hits []storage.Hit
	err = s.retry(ctx, func() error {
		var err error
		hits, err = s.search(ctx, collection, q, k)
		return err
	})
	if err != nil {
		return nil, s.wrap(ctx, "search", collection, err)
	}
	return hits, nil
}

func (s *Store) search(ctx context.Context, collection string, q storage.Query, k int) ([]storage.Hit, error) {
	if s.noIndex {
		return nil, nil
	}
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

// filterSQL returns the WHERE conditions and arguments of a filter, in a
// fixed order. Field names are passed as JSON paths, never spliced in.
func filterSQL(filter map[string]string) (string, []any) {
	var b strings.Builder
	var args []any
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		b.WriteString(` AND json_extract(d.fields, ?) = ?`)
		args = append(args, `$."`+name+`"`, filter[name])
	}
	return b.String(), args
}

// text ranks the documents of collection that pass filter and hold a
// term of terms, best first, and returns at most limit of them.
func (s *Store) text(ctx context.Context, collection string, terms []string, filter map[string]string, limit int) ([]storage.Ranked, error) {
	perTerm := max(postingsOf(len(terms)), limit)
	post, err := s.postings(ctx, collection, terms, filter, perTerm)
	if err != nil || !slices.ContainsFunc(post, func(p []int64) bool { return len(p) > 0 }) {
		return nil, err // no term matched: nothing more to read
	}
	var st collectionStats
	err = s.queryRow(ctx, `SELECT docs, length, next FROM `+statsTable+` WHERE collection = ?`, collection).Scan(&st.docs, &st.length, &st.next)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	idf, err := s.idf(ctx, post, perTerm, st)
	if err != nil {
		return nil, err
	}
	ids := firstCandidates(post, idf, max(rescored, limit+limit/2))
	rows, fields, err := s.byRowid(ctx, collection, filter, ids)
	if err != nil {
		return nil, err
	}
	storage.Rescore(rows, terms, idf, st.avg())
	rows = rows[:min(limit, len(rows))]
	return rows, decodeFields(rows, fields)
}

// collectionStats are a collection's number of documents, their total
// length in terms, and the ordinal of its next document.
type collectionStats struct{ docs, length, next int }

// avg returns the documents' average length, 1 when there is none.
func (st collectionStats) avg() float64 {
	if st.docs == 0 || st.length == 0 {
		return 1
	}
	return float64(st.length) / float64(st.docs)
}

// postings returns, for each term, the rowids of the newest documents
// of collection (and filter) that hold it, newest first, at most
// perTerm of each: one statement, one backward range of the postings
// per term. With a filter, a posting is kept only if the document is
// also posted under each field token of the filter, and at most
// filterScan of the term's newest postings are checked.
func (s *Store) postings(ctx context.Context, collection string, terms []string, filter map[string]string, perTerm int) ([][]int64, error) {
	query, args := postingsSQL(collection, terms, filter, perTerm)
	rs, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	post := make([][]int64, len(terms))
	for rs.Next() {
		var i int
		var rowid int64
		if err := rs.Scan(&i, &rowid); err != nil {
			return nil, err
		}
		post[i] = append(post[i], rowid)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return post, rs.Close()
}

// postingsSQL returns the statement of [Store.postings] and its
// arguments: a union of one backward range of the postings' primary
// key per term, each row the term's index and a document's rowid.
func postingsSQL(collection string, terms []string, filter map[string]string, perTerm int) (string, []any) {
	var b strings.Builder
	tags := fieldTags(collection, filter)
	args := make([]any, 0, len(terms)*(1+len(tags)))
	for i, t := range terms {
		if i > 0 {
			b.WriteString(" UNION ALL ")
		}
		args = append(args, termToken(collection, t))
		if len(tags) == 0 {
			fmt.Fprintf(&b, `SELECT %d, doc FROM (SELECT doc FROM `+postingsTable+` WHERE token = ? ORDER BY doc DESC LIMIT %d)`, i, perTerm)
			continue
		}
		fmt.Fprintf(&b, `SELECT %d, doc FROM (SELECT p.doc FROM (SELECT doc FROM `+postingsTable+` WHERE token = ? ORDER BY doc DESC LIMIT %d) p WHERE true`, i, filterScan)
		for _, tag := range tags {
			b.WriteString(` AND EXISTS (SELECT 1 FROM ` + postingsTable + ` f WHERE f.token = ? AND f.doc = p.doc)`)
			args = append(args, tag)
		}
		fmt.Fprintf(&b, ` ORDER BY p.doc DESC LIMIT %d)`, perTerm)
	}
	return b.String(), args
}

// idf returns the inverse document frequency of each term of a query
// whose postings are post, read at most perTerm of each, in a
// collection of stats st. A list shorter than perTerm was read whole and
// gives its term's exact document count; a full one gives an estimate
// (see [estimateDF]) from the ordinal of its oldest document, which one
// read gives for all the full lists.
func (s *Store) idf(ctx context.Context, post [][]int64, perTerm int, st collectionStats) ([]float64, error) {
	var oldest []int64
	for _, p := range post {
		if len(p) == perTerm {
			oldest = append(oldest, p[perTerm-1])
		}
	}
	ords, err := s.ordinals(ctx, oldest)
	if err != nil {
		return nil, err
	}
	idf := make([]float64, len(post))
	for i, p := range post {
		df := len(p)
		if df == perTerm {
			df = estimateDF(ords[p[df-1]], perTerm, st)
		}
		idf[i] = lexical.IDF(st.docs, df)
	}
	return idf, nil
}

// ordinals returns the ordinals of the documents of the given rowids, in
// one read. A rowid deleted since is left out, and reads as ordinal 0:
// as old as can be, so its term's estimate errs low.
func (s *Store) ordinals(ctx context.Context, rowids []int64) (map[int64]int, error) {
	if len(rowids) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(rowids)
	if err != nil {
		return nil, err
	}
	rs, err := s.query(ctx, `SELECT rowid, ord FROM `+docsTable+` WHERE rowid IN (SELECT value FROM json_each(?))`, string(list))
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	ords := make(map[int64]int, len(rowids))
	for rs.Next() {
		var rowid int64
		var ord int
		if err := rs.Scan(&rowid, &ord); err != nil {
			return nil, err
		}
		ords[rowid] = ord
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return ords, rs.Close()
}

// estimateDF estimates how many documents of a collection of stats st
// hold a term whose perTerm newest documents go back to the document of
// ordinal ord: the collection's docs in the proportion perTerm bears to
// the documents given since, as the ordinals say. Documents deleted
// since count as given, so the estimate errs low.
func estimateDF(ord, perTerm int, st collectionStats) int {
	since := max(st.next-ord, perTerm)
	return min(st.docs, max(perTerm, perTerm*st.docs/since))
}

// postingsOf returns how many postings a query of n terms reads of each:
// postingsPerTerm, less for a query of many terms, so that it reads at
// most postingsPerQuery in all, but never fewer than minPostings.
func postingsOf(n int) int {
	return min(postingsPerTerm, max(minPostings, postingsPerQuery/max(n, 1)))
}

// firstCandidates returns the rowids of at most n documents of the
// postings, by the sum of the idf of the terms they hold (BM25 with
// every count 1 and every length the average), ties newest first.
func firstCandidates(post [][]int64, idf []float64, n int) []int64 {
	score := map[int64]float64{}
	for i, p := range post {
		for _, r := range p {
			score[r] += idf[i]
		}
	}
	ids := slices.Collect(maps.Keys(score))
	slices.SortFunc(ids, func(a, b int64) int {
		if c := cmp.Compare(score[b], score[a]); c != 0 {
			return c
		}
		return cmp.Compare(b, a)
	})
	return ids[:min(n, len(ids))]
}

// byRowid reads the documents of the given rowids that are in collection
// and pass filter. A rowid of another collection (whose tag collided
// with this one's) is left out here.
// Their fields are left encoded, by rowid, for [decodeFields]: a query
// scores more candidates than it returns.
func (s *Store) byRowid(ctx context.Context, collection string, filter map[string]string, ids []int64) ([]storage.Ranked, map[int64]string, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, nil, err
	}
	cond, fargs := filterSQL(filter)
	query := `SELECT d.id, d.text, d.fields, d.vector, d.rowid, 0 FROM ` + docsTable + ` d
		WHERE d.rowid IN (SELECT value FROM json_each(?)) AND d.collection = ?` + cond
	return s.encodedRows(ctx, query, append([]any{string(list), collection}, fargs...))
}

// recent lists the documents that pass filter, newest (or oldest)
// first. With a filter it walks the index of the first field's value,
// so it reads about as many rows as it returns when the field is
// selective; the other fields are checked on the way.
func (s *Store) recent(ctx context.Context, collection string, filter map[string]string, limit int, oldest bool) ([]storage.Ranked, error) {
	order := "DESC"
	if oldest {
		order = "ASC"
	}
	if len(filter) == 0 {
		query := `SELECT d.id, d.text, d.fields, d.vector, d.rowid, 0 FROM ` + docsTable + ` d
			WHERE d.collection = ? ORDER BY d.rowid ` + order + ` LIMIT ?`
		return s.rows(ctx, query, []any{collection, limit})
	}
	names := slices.Sorted(maps.Keys(filter))
	rest := maps.Clone(filter)
	delete(rest, names[0])
	cond, fargs := filterSQL(rest)
	query := `SELECT d.id, d.text, d.fields, d.vector, d.rowid, 0 FROM ` + fieldsTable + ` f
		JOIN ` + docsTable + ` d ON d.rowid = f.doc
		WHERE f.collection = ? AND f.name = ? AND f.value = ?` + cond + ` ORDER BY f.doc ` + order + ` LIMIT ?`
	args := append(append([]any{collection, names[0], filter[names[0]]}, fargs...), limit)
	return s.rows(ctx, query, args)
}

// rows runs a query of documents (id, text, fields, vector, rowid,
// score) and returns them.
func (s *Store) rows(ctx context.Context, query string, args []any) ([]storage.Ranked, error) {
	out, fields, err := s.encodedRows(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return out, decodeFields(out, fields)
}

// encodedRows is [Store.rows] with the documents' fields left encoded:
// the JSON object of each document that has fields, by rowid.
func (s *Store) encodedRows(ctx context.Context, query string, args []any) ([]storage.Ranked, map[int64]string, error) {
	rs, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rs.Close()
	var out []storage.Ranked
	fields := map[int64]string{}
	for rs.Next() {
		var r storage.Ranked
		var f string
		var vec []byte
		if err := rs.Scan(&r.ID, &r.Text, &f, &vec, &r.Seq, &r.Score); err != nil {
			return nil, nil, err
		}
		if f != "{}" {
			fields[r.Seq] = f
		}
		r.Vector = decodeVector(vec)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, nil, err
	}
	return out, fields, rs.Close()
}

// decodeFields sets the fields of rows from their encoded form.
func decodeFields(rows []storage.Ranked, fields map[int64]string) error {
	for i := range rows {
		f, ok := fields[rows[i].Seq]
		if !ok {
			continue
		}
		if err := json.Unmarshal([]byte(f), &rows[i].Fields); err != nil {
			return fmt.Errorf("document %s: fields: %w", storage.Quote(rows[i].ID), err)
		}
	}
	return nil
}

// queryTerms returns the distinct terms of a query's text, at most
// maxQueryTerms, in the order they first occur.
func queryTerms(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range lexical.Terms(nil, text) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
		if len(out) == maxQueryTerms {
			break
		}
	}
	return out
}

// docTerms returns a document's tokens, a JSON array of its distinct
// terms and its fields each as a token of its collection, and its
// length: the number of its terms, with repeats. A document without
// terms has no tokens (nil), so it gets no postings.
func docTerms(collection, text string, fields map[string]string) (any, int) {
	terms := lexical.Terms(nil, text)
	if len(terms) == 0 {
		return nil, 0
	}
	var b strings.Builder
	b.WriteByte('[')
	seen := make(map[string]bool, len(terms))
	add := func(tok string) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		// A token is of a-z, 0-9, '-', '_', '.', ':' and '/' alone (see
		// termToken): it needs no escape in JSON.
		b.WriteString(`"` + tok + `"`)
	}
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			add(termToken(collection, t))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		add(fieldToken(collection, name, fields[name]))
	}
	b.WriteByte(']')
	return b.String(), len(terms)
}

// fieldTags returns the tokens of the fields of filter, in a fixed
// order: the documents posted under all of them pass it.
func fieldTags(collection string, filter map[string]string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(filter)) {
		out = append(out, fieldToken(collection, name, filter[name]))
	}
	return out
}

// termToken is the token of a term of a collection's document in the
// postings: "t", a tag of the collection, "_" and the term. A term of
// bytes other than a-z, 0-9 and the joiners of [lexical.Tokens] (a word
// of another script) is written in hex, so every token is of those
// bytes alone and needs no escaping.
func termToken(collection, term string) string {
	if strings.Trim(term, "abcdefghijklmnopqrstuvwxyz0123456789-_.:/") != "" {
		term = "x" + hex.EncodeToString([]byte(term))
	}
	return "t" + collectionTag(collection) + "_" + term
}

// fieldToken is the token of a field of a collection's document.
func fieldToken(collection, name, value string) string {
	h := sha256.Sum256([]byte(collection + "\x00" + name + "\x00" + value))
	return "f" + hex.EncodeToString(h[:8])
}

// collectionTag names a collection in the postings: 48 bits of its
// SHA-256. Two collections of one tag share their postings, which costs
// a query of either some of its reach; every hit is checked against the
// collection it was asked of.
func collectionTag(collection string) string {
	h := sha256.Sum256([]byte(collection))
	return hex.EncodeToString(h[:6])
}

// createPostings creates the postings when the file has none, in one
// transaction: it drops the term index of an earlier file, and posts
// the documents an earlier version wrote. A file that has the
// collections' counts (whose term index was an FTS5 table) keeps them,
// with its documents' lengths and ordinals; an older one gets them.
func (s *Store) createPostings(ctx context.Context) error {
	return s.createOnce(ctx, postingsTable, earlierIndexes, func(tx *sql.Tx) error {
		counted, err := txHasTable(ctx, tx, statsTable)
		if err != nil {
			return err
		}
		schema := postingsSchema
		if !counted {
			schema = append(slices.Clip(statsSchema), postingsSchema...)
		}
		for _, st := range schema {
			if _, err := tx.ExecContext(ctx, st); err != nil {
				return err
			}
		}
		if err := indexEarlier(ctx, tx, counted); err != nil {
			return fmt.Errorf("index the documents of an earlier version: %w", err)
		}
		return nil
	})
}

// createOnce runs schema and then fill in one transaction, unless the
// file has the table already.
func (s *Store) createOnce(ctx context.Context, table string, schema []string, fill func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if has, err := txHasTable(ctx, tx, table); err != nil || has {
		return err
	}
	for _, st := range schema {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	if fill != nil {
		if err := fill(tx); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// txHasTable reports whether the database has a table of that name, as
// tx sees it.
func txHasTable(ctx context.Context, tx *sql.Tx, name string) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}

// indexEarlier writes the tokens and postings of the documents a file
// of an earlier version holds. Unless the file has the collections'
// counts already (counted), it also writes the documents' lengths and
// ordinals, and the counts.
func indexEarlier(ctx context.Context, tx *sql.Tx, counted bool) error {
	next := map[string]int{}
	err := eachEarlier(ctx, tx, func(r earlierRow) error {
		if err := r.post(ctx, tx); err != nil || counted {
			return err
		}
		return r.number(ctx, tx, next)
	})
	if err != nil || counted {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO `+statsTable+` (collection, docs, length, next)
		SELECT collection, count(*), sum(length), max(ord) + 1 FROM `+docsTable+` GROUP BY collection`)
	return err
}

// eachEarlier calls fn on each document, oldest first, reading them in
// batches.
func eachEarlier(ctx context.Context, tx *sql.Tx, fn func(earlierRow) error) error {
	var last int64
	for {
		rows, err := earlierBatch(ctx, tx, last)
		if err != nil || len(rows) == 0 {
			return err
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return err
			}
		}
		last = rows[len(rows)-1].rowid
	}
}

// number writes an earlier document's length, and its ordinal: the
// number of its collection's documents before it, which next keeps.
func (r earlierRow) number(ctx context.Context, tx *sql.Tx, next map[string]int) error {
	ord := next[r.collection]
	next[r.collection]++
	_, err := tx.ExecContext(ctx, `UPDATE `+docsTable+` SET length = ?, ord = ? WHERE rowid = ?`, r.length, ord, r.rowid)
	return err
}

// post writes an earlier document's tokens and postings; one without
// terms gets none, as [indexRow.write] writes none.
func (r earlierRow) post(ctx context.Context, tx *sql.Tx) error {
	if r.tokens == nil {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+docsTable+` SET tokens = ? WHERE rowid = ?`, r.tokens, r.rowid); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO `+postingsTable+` (token, doc) SELECT value, ? FROM json_each(?)`, r.rowid, r.tokens)
	return err
}

type earlierRow struct {
	rowid      int64
	collection string
	tokens     any
	length     int
}

// earlierBatch reads up to 1,000 documents after rowid last.
func earlierBatch(ctx context.Context, tx *sql.Tx, last int64) ([]earlierRow, error) {
	rs, err := tx.QueryContext(ctx, `SELECT rowid, collection, text, fields FROM `+docsTable+` WHERE rowid > ? ORDER BY rowid LIMIT 1000`, last)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []earlierRow
	for rs.Next() {
		var r earlierRow
		var text, fields string
		if err := rs.Scan(&r.rowid, &r.collection, &text, &fields); err != nil {
			return nil, err
		}
		var f map[string]string
		if err := json.Unmarshal([]byte(fields), &f); err != nil {
			return nil, fmt.Errorf("document %d: fields: %w", r.rowid, err)
		}
		r.tokens, r.length = docTerms(r.collection, text, f)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return out, rs.Close()
}

// writeTx runs fn in one write transaction under the store's writer slot,
// retrying while the database is busy. Like the single-statement writes,
// it runs on a context without ctx's cancellation once started, so a
// write reported failed has changed nothing.
func (s *Store) writeTx(ctx context.Context, op, collection string, fn func(*sql.Tx) error) error {
	if err := s.lockWrite(ctx, op, collection); err != nil {
		return err
	}
	defer s.unlockWrite()
	err := s.retry(ctx, func() error {
		tx, err := s.db.BeginTx(context.WithoutCancel(ctx), nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
	if ferr := s.checkFile(op, collection); ferr != nil {
		return ferr
	}
	if err != nil {
		return s.wrap(ctx, op, collection, err)
	}
	return nil
}

func encodeVector(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	if len(b) == 0 || len(b)%4 != 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

var _ storage.Searcher = (*Store)(nil)

// createFields creates the fields table, filled from the documents, in
// one transaction, unless it exists.
func (s *Store) createFields(ctx context.Context) error {
	return s.createOnce(ctx, fieldsTable, fieldsSchema, nil)
}
