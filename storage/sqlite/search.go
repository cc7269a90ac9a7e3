package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
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

// The search index: documents in one table, their text in an FTS5 table
// that reads it (external content), kept in step by triggers.
const (
	docsTable   = "memlayer_docs"
	ftsTable    = "memlayer_fts"
	fieldsTable = "memlayer_doc_fields"
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

// searchSchema creates the index's tables in a file of any earlier
// layout: opening an old file adds them, empty.
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
	`CREATE VIRTUAL TABLE IF NOT EXISTS ` + ftsTable + ` USING fts5(text, content='` + docsTable + `',
		content_rowid='rowid', tokenize='porter unicode61 remove_diacritics 2')`,
	`CREATE TRIGGER IF NOT EXISTS ` + docsTable + `_ai AFTER INSERT ON ` + docsTable + ` BEGIN
		INSERT INTO ` + ftsTable + ` (rowid, text) VALUES (new.rowid, new.text);
	END`,
	`CREATE TRIGGER IF NOT EXISTS ` + docsTable + `_ad AFTER DELETE ON ` + docsTable + ` BEGIN
		INSERT INTO ` + ftsTable + ` (` + ftsTable + `, rowid, text) VALUES ('delete', old.rowid, old.text);
	END`,
	`CREATE TRIGGER IF NOT EXISTS ` + docsTable + `_au AFTER UPDATE ON ` + docsTable + ` BEGIN
		INSERT INTO ` + ftsTable + ` (` + ftsTable + `, rowid, text) VALUES ('delete', old.rowid, old.text);
		INSERT INTO ` + ftsTable + ` (rowid, text) VALUES (new.rowid, new.text);
	END`,
	// Deleting a document removes its terms from the index at once,
	// rather than leaving them in a segment until a merge.
	`INSERT INTO ` + ftsTable + ` (` + ftsTable + `, rank) VALUES ('secure-delete', 1)`,
}

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
	rows := make([][]any, len(docs))
	for i, d := range docs {
		fields, err := json.Marshal(d.Fields)
		if err != nil {
			return fmt.Errorf("storage/sqlite: index %s: %w", storage.Quote(collection), err)
		}
		if d.Fields == nil {
			fields = []byte("{}")
		}
		rows[i] = []any{collection, d.ID, d.Text, string(fields), encodeVector(d.Vector)}
	}
	return s.writeTx(ctx, "index", collection, func(tx *sql.Tx) error {
		for _, r := range rows {
			// Delete, then insert: a replaced document takes a new
			// rowid and so counts as the newest.
			if _, err := tx.Exec(`DELETE FROM `+docsTable+` WHERE collection = ? AND id = ?`, r[0], r[1]); err != nil {
				return err
			}
			if _, err := tx.Exec(`INSERT INTO `+docsTable+` (collection, id, text, fields, vector) VALUES (?, ?, ?, ?, ?)`, r...); err != nil {
				return err
			}
		}
		return nil
	})
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

// Search implements [storage.Searcher]. A text query runs FTS5 with the
// query's words joined by OR, ranked by bm25(). A vector ranks by cosine
// similarity the text query's best and the collection's most recent
// documents (up to 1,000 of each), not the whole collection.
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
	match := matchExpr(q.Text)
	if len(q.Vector) == 0 {
		if match == "" {
			if strings.TrimSpace(q.Text) != "" {
				return nil, nil // only stop words: nothing to match
			}
			rows, err := s.recent(ctx, collection, q.Filter, k, q.Oldest)
			return storage.TopHits(rows, k), err
		}
		rows, err := s.text(ctx, collection, match, q.Filter, k)
		return storage.TopHits(rows, k), err
	}
	var text []storage.Ranked
	if match != "" {
		var err error
		if text, err = s.text(ctx, collection, match, q.Filter, denseWindow); err != nil {
			return nil, err
		}
	}
	recent, err := s.recent(ctx, collection, q.Filter, denseWindow, false)
	if err != nil {
		return nil, err
	}
	dense := storage.RankByVector(q.Vector, text, recent)
	if match == "" {
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

func (s *Store) text(ctx context.Context, collection, match string, filter map[string]string, limit int) ([]storage.Ranked, error) {
	cond, fargs := filterSQL(filter)
	query := `SELECT d.id, d.text, d.fields, d.vector, d.rowid, -bm25(` + ftsTable + `)
		FROM ` + ftsTable + ` JOIN ` + docsTable + ` d ON d.rowid = ` + ftsTable + `.rowid
		WHERE ` + ftsTable + ` MATCH ? AND d.collection = ?` + cond + `
		ORDER BY bm25(` + ftsTable + `), d.rowid DESC LIMIT ?`
	args := append(append([]any{match, collection}, fargs...), limit)
	return s.rows(ctx, query, args)
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

func (s *Store) rows(ctx context.Context, query string, args []any) ([]storage.Ranked, error) {
	rs, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []storage.Ranked
	for rs.Next() {
		var r storage.Ranked
		var fields string
		var vec []byte
		if err := rs.Scan(&r.ID, &r.Text, &fields, &vec, &r.Seq, &r.Score); err != nil {
			return nil, err
		}
		if fields != "{}" {
			if err := json.Unmarshal([]byte(fields), &r.Fields); err != nil {
				return nil, fmt.Errorf("document %s: fields: %w", storage.Quote(r.ID), err)
			}
		}
		r.Vector = decodeVector(vec)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return out, rs.Close()
}

// matchExpr turns a query's text into an FTS5 expression: its distinct
// words, English function words left out, each quoted as a string (so
// no word is read as FTS5 syntax), joined by OR. It is "" when no word
// is left.
func matchExpr(text string) string {
	var b strings.Builder
	seen := map[string]bool{}
	for _, t := range lexical.Tokens(nil, text) {
		if seen[t] || lexical.IsStopWord(t) {
			continue
		}
		seen[t] = true
		if len(seen) > maxQueryTerms {
			break
		}
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"` + strings.ReplaceAll(t, `"`, `""`) + `"`)
	}
	return b.String()
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
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = '`+fieldsTable+`'`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	for _, st := range fieldsSchema {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	return tx.Commit()
}
