package audit_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// TestMemory70_RetentionKeepsTheNewestTurns: a thread keeps its last Keep
// turns, numbered on from the first commit; a long text is cut.
func TestMemory70_RetentionKeepsTheNewestTurns(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemory()
	log := audit.New(audit.Config{Store: store, Keep: 3})
	for i := 1; i <= 7; i++ {
		turn, err := log.Commit(ctx, "t1", []audit.Event{{Op: audit.OpWrite, Layer: "semantic", Key: fmt.Sprintf("f%d", i), Text: strings.Repeat("é", audit.MaxTextBytes)}})
		if err != nil {
			t.Fatal(err)
		}
		if turn.Seq != int64(i) {
			t.Fatalf("commit %d: Seq %d", i, turn.Seq)
		}
	}
	turns, err := log.Turns(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, tr := range turns {
		seqs = append(seqs, tr.Seq)
		if got := tr.Writes(); len(got) != 1 || got[0].Key != fmt.Sprintf("f%d", tr.Seq) {
			t.Errorf("turn %d: writes %+v", tr.Seq, got)
		}
		if txt := tr.Events[0].Text; len(txt) > audit.MaxTextBytes+len("…") || !strings.HasSuffix(txt, "…") || !strings.HasPrefix(txt, "é") {
			t.Errorf("turn %d: text of %d bytes not cut at a rune: %q", tr.Seq, len(txt), txt[len(txt)-8:])
		}
	}
	if !slices.Equal(seqs, []int64{5, 6, 7}) {
		t.Fatalf("kept turns %v, want [5 6 7]", seqs)
	}
	// Another thread's audit is its own, and the default keeps 20.
	other := audit.New(audit.Config{Store: store})
	for range audit.DefaultKeep + 2 {
		if _, err := other.Commit(ctx, "t2", nil); err != nil {
			t.Fatal(err)
		}
	}
	if turns, _ := other.Turns(ctx, "t2"); len(turns) != audit.DefaultKeep || turns[0].Seq != 3 {
		t.Fatalf("t2 keeps %d turns from %d, want %d from 3", len(turns), turns[0].Seq, audit.DefaultKeep)
	}
	if turns, _ := other.Turns(ctx, "t1"); len(turns) != 3 {
		t.Fatalf("t1 has %d turns after t2's commits", len(turns))
	}
	if _, err := log.Commit(ctx, "", nil); !errors.Is(err, audit.ErrNoThread) {
		t.Fatalf("empty thread: %v", err)
	}
}

// TestMemory71_CorruptRecordsDoNotStopTheAudit: a stored value that is
// not an audit record fails Turns with ErrCorrupt, and the next commit
// sets it aside (kept, reported) and starts afresh; a bad turn inside a
// good record is skipped with a warning; a record from a newer version
// fails both and is left as it was.
func TestMemory71_CorruptRecordsDoNotStopTheAudit(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemory()
	var logs bytes.Buffer
	log := audit.New(audit.Config{Store: store, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	key := storage.ThreadKey("t1", audit.Name)
	garbage := []byte(`{"v":1,"turns":"not a list"`)
	if _, err := store.Put(ctx, key, garbage, storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Turns(ctx, "t1"); !errors.Is(err, audit.ErrCorrupt) {
		t.Fatalf("Turns of a corrupt record: %v", err)
	}
	turn, err := log.Commit(ctx, "t1", []audit.Event{{Op: audit.OpRecall, Layer: "semantic"}})
	if err != nil || turn.Seq != 1 {
		t.Fatalf("Commit over a corrupt record: %+v, %v", turn, err)
	}
	keys, _ := store.List(ctx, storage.ThreadPrefix("t1"))
	var aside []string
	for _, k := range keys {
		if strings.Contains(k, "quarantine") {
			aside = append(aside, k)
		}
	}
	if len(aside) != 1 {
		t.Fatalf("keys %v: want one set aside", keys)
	}
	if it, _ := store.Get(ctx, aside[0]); !bytes.Equal(it.Value, garbage) {
		t.Fatalf("set aside %q, want the corrupt record", it.Value)
	}
	if !strings.Contains(logs.String(), "set aside") {
		t.Fatalf("no warning: %s", logs.String())
	}

	// One bad turn among good ones.
	logs.Reset()
	bad := []byte(`{"v":1,"next":3,"turns":[{"seq":1,"events":[]},{"seq":"two"},{"seq":3,"events":[{"op":"write","key":"f1"}]}]}`)
	if _, err := store.Put(ctx, key, bad, storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	turns, err := log.Turns(ctx, "t1")
	if err != nil || len(turns) != 2 || turns[1].Events[0].Key != "f1" {
		t.Fatalf("Turns with a bad turn: %+v, %v", turns, err)
	}
	if !strings.Contains(logs.String(), "skipping a turn") {
		t.Fatalf("no warning: %s", logs.String())
	}
	if turn, err := log.Commit(ctx, "t1", nil); err != nil || turn.Seq != 4 {
		t.Fatalf("Commit after a bad turn: %+v, %v", turn, err)
	}

	// A newer version is not ours to touch.
	newer := []byte(`{"v":99,"next":1,"turns":[]}`)
	if _, err := store.Put(ctx, key, newer, storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Commit(ctx, "t1", nil); !errors.Is(err, audit.ErrVersion) {
		t.Fatalf("Commit over a newer record: %v", err)
	}
	if _, err := log.Turns(ctx, "t1"); !errors.Is(err, audit.ErrVersion) {
		t.Fatalf("Turns of a newer record: %v", err)
	}
	if it, _ := store.Get(ctx, key); !bytes.Equal(it.Value, newer) {
		t.Fatalf("newer record changed to %s", it.Value)
	}
}

// TestMemory72_AuditSurvivesARestartOnSQLite: turns committed through
// one SQLite store are read back by a new one on the same file.
func TestMemory72_AuditSurvivesARestartOnSQLite(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "memory.db")
	open := func() *sqlite.Store {
		s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	want := []audit.Event{
		{Op: audit.OpRoute, Step: 1, Layer: "working-memory", Kind: "reasoning", Reason: "transient reasoning goes to the scratchpad"},
		{Op: audit.OpWrite, Step: 1, Layer: "semantic", Key: "f1", Version: 2, Kind: "preference", Text: "Tea, not coffee.", Importance: 0.8},
		{Op: audit.OpRecall, Step: 0, Layer: "semantic", Tokens: 12, Candidates: []audit.Candidate{{Layer: "semantic", Key: "f1", Score: 0.71, Tokens: 9, Packed: true}}},
	}
	if _, err := audit.New(audit.Config{Store: s}).Commit(ctx, "t1", want); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	turns, err := audit.New(audit.Config{Store: s}).Turns(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || !slices.EqualFunc(turns[0].Events, want, func(a, b audit.Event) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("after a restart: %+v\nwant %+v", turns, want)
	}
}

// TestMemory73_ConcurrentCommitsLoseNothing: commits racing on one thread
// each get their own Seq, and the thread keeps the newest Keep.
func TestMemory73_ConcurrentCommitsLoseNothing(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemory()
	const n = 8
	var wg sync.WaitGroup
	seqs := make([]int64, n)
	for i := range n {
		wg.Go(func() {
			turn, err := audit.New(audit.Config{Store: store, Keep: n}).Commit(ctx, "t1", []audit.Event{{Op: audit.OpWrite, Key: fmt.Sprint(i)}})
			if err != nil {
				t.Error(err)
			}
			seqs[i] = turn.Seq
		})
	}
	wg.Wait()
	slices.Sort(seqs)
	if !slices.Equal(seqs, []int64{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("seqs %v", seqs)
	}
	turns, err := audit.New(audit.Config{Store: store, Keep: n}).Turns(ctx, "t1")
	if err != nil || len(turns) != n {
		t.Fatalf("%d turns, %v", len(turns), err)
	}
}
