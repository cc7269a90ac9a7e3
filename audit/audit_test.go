package audit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
)

// TestMemory70_RetentionKeepsTheNewestTurns: a thread keeps its last Keep
// turns, numbered on from the first commit; a long text is cut.
func TestMemory70_RetentionKeepsTheNewestTurns(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	log := audit.New(audit.Config{Store: store, Keep: 3})
	for i := 1; i <= 7; i++ {
		turn, err := log.Commit(ctx, "t1", []audit.Entry{{Op: audit.OpWrite, Layer: "semantic", Key: fmt.Sprintf("f%d", i), Text: strings.Repeat("é", audit.MaxTextBytes)}})
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
		if txt := tr.Entries[0].Text; len(txt) > audit.MaxTextBytes+len("…") || !strings.HasSuffix(txt, "…") || !strings.HasPrefix(txt, "é") {
			t.Errorf("turn %d: text of %d bytes not cut at a rune: %q", tr.Seq, len(txt), txt[len(txt)-8:])
		}
	}
	if !slices.Equal(seqs, []int64{5, 6, 7}) {
		t.Fatalf("kept turns %v, want [5 6 7]", seqs)
	}
	if keys, _ := store.List(ctx, storage.ThreadPrefix("t1")); len(keys) != 3+1 {
		t.Fatalf("stored %v, want the head and 3 turns", keys)
	}
	// A new Log (a new process) numbers on from the stored head.
	if turn, err := audit.New(audit.Config{Store: store, Keep: 3}).Commit(ctx, "t1", nil); err != nil || turn.Seq != 8 {
		t.Fatal(turn, err)
	}
	if keys, _ := store.List(ctx, storage.ThreadPrefix("t1")); len(keys) != 3+1 {
		t.Fatalf("stored %v, want the head and 3 turns", keys)
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
	// A Log with another Keep reads the turns as they were stored.
	if turns, _ := other.Turns(ctx, "t1"); len(turns) != 3 || turns[2].Seq != 8 {
		t.Fatalf("t1 has %+v after t2's commits", turns)
	}
	if _, err := log.Commit(ctx, "", nil); !errors.Is(err, audit.ErrNoThread) {
		t.Fatalf("empty thread: %v", err)
	}
}

// TestMemory71_CorruptRecordsAreSkipped: a stored turn that cannot be
// decoded, or that a newer version wrote, is skipped with a warning, and
// commits go on after it; a head that cannot be decoded is reported and
// replaced, the numbering starting again.
func TestMemory71_CorruptRecordsAreSkipped(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	var logs bytes.Buffer
	log := audit.New(audit.Config{Store: store, Keep: 4, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for range 4 {
		if _, err := log.Commit(ctx, "t1", []audit.Entry{{Op: audit.OpWrite, Key: "f1"}}); err != nil {
			t.Fatal(err)
		}
	}
	slot := func(seq int) string { return storage.ThreadKey("t1", fmt.Sprintf("%s.%d", audit.Name, seq%4)) }
	for seq, v := range map[int]string{1: `{"v":1,"seq":"two"`, 2: "\x00", 3: `{"v":99,"seq":3,"events":[]}`} {
		if _, err := store.Put(ctx, slot(seq), []byte(v), storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := log.Turns(ctx, "t1")
	if err != nil || len(turns) != 1 || turns[0].Seq != 4 {
		t.Fatalf("Turns with three bad turns: %+v, %v", turns, err)
	}
	if n := strings.Count(logs.String(), "skipping a turn"); n != 3 {
		t.Fatalf("%d warnings: %s", n, logs.String())
	}
	// A new Log (a new process) goes on from the stored head, over the
	// bad turns.
	if turn, err := audit.New(audit.Config{Store: store, Keep: 4}).Commit(ctx, "t1", nil); err != nil || turn.Seq != 5 {
		t.Fatalf("Commit after bad turns: %+v, %v", turn, err)
	}
	if turns, err := log.Turns(ctx, "t1"); err != nil || len(turns) != 2 {
		t.Fatalf("%+v, %v", turns, err)
	}

	// A corrupt head: reported, replaced, numbered from 1 again; the
	// turns of the old numbering are not mistaken for the new ones.
	logs.Reset()
	if _, err := store.Put(ctx, storage.ThreadKey("t1", audit.Name), []byte("{"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	if turns, err := log.Turns(ctx, "t1"); err != nil || len(turns) != 0 {
		t.Fatalf("Turns with a corrupt head: %+v, %v", turns, err)
	}
	fresh := audit.New(audit.Config{Store: store, Keep: 4, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	turn, err := fresh.Commit(ctx, "t1", []audit.Entry{{Op: audit.OpRecall}})
	if err != nil || turn.Seq != 1 || !strings.Contains(logs.String(), "cannot be decoded") {
		t.Fatalf("Commit over a corrupt head: %+v, %v; logs %s", turn, err, logs.String())
	}
	if turns, err := fresh.Turns(ctx, "t1"); err != nil || len(turns) != 1 || turns[0].Entries[0].Op != audit.OpRecall {
		t.Fatalf("after a corrupt head: %+v, %v", turns, err)
	}
	if _, err := fresh.Commit(ctx, "t1", []audit.Entry{{Op: audit.OpWrite, Importance: math.NaN()}}); err == nil {
		t.Error("a NaN was committed")
	}
	if _, err := fresh.Commit(ctx, "t1", []audit.Entry{{Op: audit.OpRecall, Candidates: []audit.Candidate{{Key: "f1", Score: math.Inf(1)}}}}); err == nil {
		t.Error("an infinite score was committed")
	}
	// Neither claimed a number: the next turn is the second.
	if turn, err := fresh.Commit(ctx, "t1", []audit.Entry{{Op: audit.OpRecall}}); err != nil || turn.Seq != 2 {
		t.Errorf("after refused turns: %+v, %v; want turn 2", turn, err)
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
	want := []audit.Entry{
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
	if len(turns) != 1 || !slices.EqualFunc(turns[0].Entries, want, func(a, b audit.Entry) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Fatalf("after a restart: %+v\nwant %+v", turns, want)
	}
}

// TestMemory73_ConcurrentCommitsLoseNothing: commits racing on one thread
// each get their own Seq, and the thread keeps the newest Keep.
func TestMemory73_ConcurrentCommitsLoseNothing(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	const n = 8
	var wg sync.WaitGroup
	seqs := make([]int64, n)
	for i := range n {
		wg.Go(func() {
			turn, err := audit.New(audit.Config{Store: store, Keep: n}).Commit(ctx, "t1", []audit.Entry{{Op: audit.OpWrite, Key: fmt.Sprint(i)}})
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

// TestMemory80_FrozenFormatLoads: the records of format version 1, as
// frozen in testdata, still load, every field of every operation.
func TestMemory80_FrozenFormatLoads(t *testing.T) {
	ctx := t.Context()
	data, err := os.ReadFile(filepath.Join("testdata", "frozen_v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var records map[string]json.RawMessage
	if err := json.Unmarshal(data, &records); err != nil {
		t.Fatal(err)
	}
	store := storage.NewMemoryStore()
	for name, v := range records {
		if _, err := store.Put(ctx, storage.ThreadKey("t1", name), v, storage.AnyVersion); err != nil {
			t.Fatal(err)
		}
	}
	turns, err := audit.New(audit.Config{Store: store}).Turns(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[0].Seq != 2 || turns[1].Seq != 3 || turns[1].Dropped != 1 || !turns[0].Time.Equal(time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("turns %+v", turns)
	}
	got := fmt.Sprintf("%+v", turns)
	for _, want := range []string{
		"{Layer:semantic Key:f1 Score:0.775 Tokens:15 Packed:true}", "{Layer:semantic Key:f2 Score:0.41 Tokens:12 Packed:false}",
		"Op:route Step:0 Depth:0 Layer:working-memory Kind:reasoning", "Refused:true", `Reason:kind "gossip"`,
		"Op:write Step:1 Depth:0 Layer:semantic Kind:preference Key:f1 Version:2 Text:Tea, no sugar. Importance:0.8",
		"Op:supersede", "Op:forget Step:1 Depth:0 Layer:semantic Kind: Key:f2", "Op:evict Step:1 Depth:0 Layer:entities", "Count:1",
		"Layer:entities Kind:extracted", "Source:store", "Op:redact Step:1 Depth:0 Layer: Kind:email", "Count:3",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("loaded turns lack %q:\n%s", want, got)
		}
	}
	// A commit goes on from the frozen head, in its window.
	turn, err := audit.New(audit.Config{Store: store, Keep: 2}).Commit(ctx, "t1", nil)
	if err != nil || turn.Seq != 4 {
		t.Fatal(turn, err)
	}
	if turns, _ := audit.New(audit.Config{Store: store}).Turns(ctx, "t1"); len(turns) != 2 || turns[0].Seq != 3 || turns[1].Seq != 4 {
		t.Fatalf("after a commit: %+v", turns)
	}
}
