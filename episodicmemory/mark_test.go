package episodicmemory_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// refs returns the references of the layer's raw episodes, oldest first.
func refs(l *episodicmemory.Layer) []string {
	var out []string
	for _, e := range l.Episodes() {
		out = append(out, e.Ref)
	}
	return out
}

// A snapshot of a stored log is a mark whose size does not grow with the
// log (on SQLite, through compactions), and it restores, after a
// restart, the view it marked: the episodes appended since (a run that
// stopped before its checkpoint) leave the log.
func TestEpisodic25_SnapshotIsAMark(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "mark.db")
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := episodicmemory.Config{CompactAfter: 16}
	l := bound(t, cfg, st, "t", "")
	sizes := map[int]int{}
	var at200 []byte
	var want []string
	for n := range 220 {
		store(t, l, pageStep(n))
		if n == 19 || n == 199 {
			snap, err := l.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sizes[n+1] = len(snap)
			if n == 199 {
				at200, want = snap, refs(l)
			}
		}
	}
	if sizes[200] > sizes[20]+16 || sizes[200] > 512 {
		t.Errorf("snapshot bytes: %d at 20 steps, %d at 200; want at most 512 and no growth", sizes[20], sizes[200])
	}
	if len(want) == 0 || !slices.Contains(want, "call-199") {
		t.Fatalf("the view at step 200 holds %q", want)
	}
	// A restart: a new layer on the same file restores the mark of step
	// 200, and its view is the view then.
	st2, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	again := bound(t, cfg, st2, "t", "")
	if err := again.Restore(ctx, at200); err != nil {
		t.Fatalf("Restore of the mark: %v", err)
	}
	if got := refs(again); !slices.Equal(got, want) {
		t.Errorf("restored view:\n%q\nwant\n%q", got, want)
	}
	if _, _, err := again.Read(ctx, "call-210"); !errors.Is(err, episodicmemory.ErrNoEpisode) {
		t.Errorf("Read(call-210) after restoring the mark of step 200: %v, want ErrNoEpisode", err)
	}
	if _, whole, err := again.Read(ctx, "call-199"); err != nil || !whole {
		t.Errorf("Read(call-199) = whole %v, %v", whole, err)
	}
	// Restoring the mark of the current state is a no-op, and a mark is
	// not restored into another thread of the same store (see
	// trust3mark_test.go).
	now, _ := again.Snapshot(ctx)
	if err := again.Restore(ctx, now); err != nil {
		t.Fatal(err)
	}
	if after, _ := again.Snapshot(ctx); string(after) != string(now) {
		t.Errorf("restoring the current mark changed it: %s -> %s", now, after)
	}
	other := bound(t, cfg, st2, "other", "")
	if err := other.Restore(ctx, now); !errors.Is(err, episodicmemory.ErrCorrupt) {
		t.Errorf("Restore into another thread = %v, want ErrCorrupt", err)
	}
	if got := refs(other); len(got) != 0 {
		t.Errorf("a refused Restore into another thread read %q", got)
	}
	// The old mark names a view the log no longer holds (restored since,
	// the base moved): refused, the state kept.
	before, _ := again.Snapshot(ctx)
	if err := again.Restore(ctx, at200); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Restore of a mark of a replaced log = %v, want storage.ErrNotFound", err)
	}
	// In another store it is refused too.
	elsewhere := bound(t, cfg, storage.NewMemoryStore(), "t", "")
	store(t, elsewhere, pageStep(1))
	if err := elsewhere.Restore(ctx, at200); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("Restore of a mark in another store = %v, want storage.ErrNotFound", err)
	}
	if after, _ := again.Snapshot(ctx); string(after) != string(before) {
		t.Errorf("a refused Restore changed the state")
	}
	if got := refs(elsewhere); !slices.Equal(got, []string{"call-1"}) {
		t.Errorf("a refused Restore changed the state: %q", got)
	}
}
