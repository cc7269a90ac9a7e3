package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStmts bounds the statements a Store keeps prepared. The
// queries it builds at run time vary only with the number of a query's
// terms or filter fields, so a few dozen are ever made.
const maxCachedStmts = 256

// stmtCache keeps the statements of the queries a Store builds at run
// time prepared, so a search parses no SQL after its first of a shape.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// query runs q with args through its cached statement.
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, cached, err := s.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if !cached {
		defer st.Close()
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is [Store.query] of a query of one row.
func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, cached, err := s.stmt(ctx, q)
	if err != nil {
		// A Row that reports err: the query cannot run.
		return s.db.QueryRowContext(ctx, q, args...)
	}
	if !cached {
		defer st.Close()
	}
	return st.QueryRowContext(ctx, args...)
}

// txStmt returns the statement of q in tx: the cached one, prepared on
// the transaction's connection once and then kept, or else one prepared
// for tx alone. It never takes a connection other than the
// transaction's (an in-memory store has only one). The transaction
// closes the statement.
func (s *Store) txStmt(ctx context.Context, tx *sql.Tx, q string) (*sql.Stmt, error) {
	c := &s.stmts
	c.mu.Lock()
	st, ok := c.stmts[q]
	c.mu.Unlock()
	if ok {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, q)
}

// warm prepares and caches the statements of qs, outside a transaction,
// so that [Store.txStmt] finds them.
func (s *Store) warm(ctx context.Context, qs ...string) error {
	for _, q := range qs {
		st, cached, err := s.stmt(ctx, q)
		if err != nil {
			return err
		}
		if !cached {
			st.Close()
		}
	}
	return nil
}

// stmt returns the prepared statement of q, and whether the cache keeps
// it (a statement it does not keep is the caller's to close).
func (s *Store) stmt(ctx context.Context, q string) (*sql.Stmt, bool, error) {
	c := &s.stmts
	c.mu.Lock()
	st, ok := c.stmts[q]
	c.mu.Unlock()
	if ok {
		return st, true, nil
	}
	st, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.stmts[q]; ok {
		st.Close()
		return old, true, nil
	}
	if len(c.stmts) >= maxCachedStmts {
		return st, false, nil
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[q] = st
	return st, true, nil
}

// close closes the cached statements.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = nil
}
