package sqlite

import (
	"path/filepath"
	"testing"
	"time"
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
