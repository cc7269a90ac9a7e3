package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// TestPragmas checks the settings every connection of the pool gets.
func TestPragmas(t *testing.T) {
	tests := []struct {
		name        string
		cfg         Config
		synchronous int // 1 NORMAL, 2 FULL
		busyMS      int // SQLite's own wait: short, the rest is retried in Go
		journal     string
	}{
		{"defaults", Config{}, 1, 20, "wal"},
		{"full", Config{Sync: SyncFull, BusyTimeout: 250 * time.Millisecond}, 2, 20, "wal"},
		{"short busy timeout", Config{BusyTimeout: 5 * time.Millisecond}, 1, 5, "wal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Path = filepath.Join(t.TempDir(), "p.db")
			s, err := Open(t.Context(), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// Hold several connections at once so the check covers more
			// than the first one.
			for range 3 {
				conn, err := s.db.Conn(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				var syn, busy int
				var journal string
				if err := conn.QueryRowContext(t.Context(), "PRAGMA synchronous").Scan(&syn); err != nil {
					t.Fatal(err)
				}
				if err := conn.QueryRowContext(t.Context(), "PRAGMA busy_timeout").Scan(&busy); err != nil {
					t.Fatal(err)
				}
				if err := conn.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&journal); err != nil {
					t.Fatal(err)
				}
				if syn != tc.synchronous || busy != tc.busyMS || journal != tc.journal {
					t.Errorf("synchronous=%d busy_timeout=%d journal_mode=%s; want %d %d %s",
						syn, busy, journal, tc.synchronous, tc.busyMS, tc.journal)
				}
			}
		})
	}
}

// TestFieldsTableFilledFromOldDocuments: a file whose documents predate
// the fields table (as written by the first search layout) gets the table
// filled from them when opened, so filtered listings find them.
func TestFieldsTableFilledFromOldDocuments(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	col := storage.IndexName("notes", storage.ResourceScope("u1"), "docs")
	if err := s.Index(ctx, col, storage.Document{ID: "a", Text: "alpha", Fields: map[string]string{"kind": "fact"}},
		storage.Document{ID: "b", Text: "beta", Fields: map[string]string{"kind": "turn"}}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{`DROP TRIGGER ` + fieldsTable + `_ai`, `DROP TRIGGER ` + fieldsTable + `_ad`, `DROP TABLE ` + fieldsTable} {
		if _, err := s.db.ExecContext(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hits, err := s.Search(ctx, col, storage.Query{Filter: map[string]string{"kind": "fact"}})
	if err != nil || len(hits) != 1 || hits[0].ID != "a" {
		t.Fatalf("filtered listing after the upgrade: %+v, %v", hits, err)
	}
}

// TestGetManyUsesTheKeyIndex checks that GetMany finds each key through
// the primary key's index rather than scanning the table.
func TestGetManyUsesTheKeyIndex(t *testing.T) {
	s, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "p.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	joined := queryPlan(t, s, getManySQL, `["a","b"]`)
	if !strings.Contains(joined, "SEARCH "+table+" USING INDEX") || strings.Contains(joined, "SCAN "+table) {
		t.Errorf("GetMany's plan is %q, want a search of %s through its key's index", joined, table)
	}
}

// queryPlan returns the details of q's plan, joined by "; ".
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.db.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}
