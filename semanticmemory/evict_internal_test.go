package semanticmemory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// TestLedgerMigration: a log written before the capacity ledger (its
// head and records without one, its index without eviction documents)
// gets a ledger at its first write, counting every live fact, and the
// capacity holds from that write on, the oldest fact going first.
func TestLedgerMigration(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	open := func(c Capacity) *Layer {
		tmpl, err := New(Config{Capacity: c})
		if err != nil {
			t.Fatal(err)
		}
		l, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", ResourceID: "u", Store: store})
		if err != nil {
			t.Fatal(err)
		}
		return l.(*Layer)
	}
	old := open(Capacity{})
	var ids []string
	for i := range 6 {
		f, err := old.Remember(ctx, Memo{Text: fmt.Sprintf("Old fact %d about %c", i, 'a'+i), Importance: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.ID)
	}
	if err := old.Forget(ctx, ids[5]); err != nil {
		t.Fatal(err)
	}
	// Make it an old log: no ledger in the head, no eviction documents.
	key := old.log.Key("head")
	it, err := store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	h, err := decodeHead(it.Value)
	if err != nil || h.Ledger == nil {
		t.Fatalf("head %+v, %v: want a ledger", h, err)
	}
	h.Ledger = nil
	if _, err := store.Put(ctx, key, encode(h), it.Version); err != nil {
		t.Fatal(err)
	}
	if err := store.Drop(ctx, old.evcol); err != nil {
		t.Fatal(err)
	}

	l := open(Capacity{MaxFacts: 4})
	if _, ok := l.Metrics()["facts"]; ok {
		t.Fatalf("an old log has a ledger before its first write: %v", l.Metrics())
	}
	if _, err := l.Remember(ctx, Memo{Text: "A new fact about z", Importance: 0.5}); err != nil {
		t.Fatal(err)
	}
	// Five live facts and the new one, capacity four: the two oldest go.
	if m := l.Metrics(); m["facts"] != 4 {
		t.Fatalf("ledger after the first write = %v, want 4 facts", m)
	}
	live, err := l.Facts(ctx)
	if err != nil || len(live) != 4 {
		t.Fatalf("Facts = %d, %v; want 4", len(live), err)
	}
	for i, id := range ids[:5] {
		vs, err := l.Versions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := vs[len(vs)-1].Evicted, i < 2; got != want {
			t.Errorf("fact %s evicted = %v, want %v", id, got, want)
		}
	}
}

// TestDecodeLedger: a head or record whose ledger counts below zero is
// corrupt.
func TestDecodeLedger(t *testing.T) {
	if _, err := decodeHead([]byte(`{"v":1,"base":0,"next":1,"ledger":{"n":-1,"tok":0,"low":0}}`)); err == nil {
		t.Error("a head with a negative count decoded")
	}
	if _, err := decodeRecord([]byte(`{"v":1,"seq":0,"facts":[],"ledger":{"n":0,"tok":-5,"low":0}}`), 0); err == nil {
		t.Error("a record with negative tokens decoded")
	}
	if _, err := decodeHead([]byte(`{"v":1,"base":0,"next":1,"ledger":{"n":3,"tok":30,"low":7}}`)); err != nil {
		t.Errorf("a good ledger refused: %v", err)
	}
}

// TestUsesCountWhatIsShown: a fact counts as recalled when Recall or
// scored assembly (RenderBlock) shows it, not when Candidates offers it:
// assembly drops some of those, and the write gate reads them to compare
// a write with.
func TestUsesCountWhatIsShown(t *testing.T) {
	ctx := context.Background()
	tmpl, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", ResourceID: "u", Store: storage.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	l := b.(*Layer)
	for _, text := range []string{"The user edits the pricing page.", "The pricing page is in French."} {
		if _, err := l.Remember(ctx, Memo{Text: text, Importance: 0.5}); err != nil {
			t.Fatal(err)
		}
	}
	cands, err := l.Candidates(ctx, layer.Query{Text: "pricing page", Budget: layer.Unbounded})
	if err != nil || len(cands) != 2 {
		t.Fatalf("Candidates = %v, %v; want the 2 facts", cands, err)
	}
	if len(l.uses) != 0 {
		t.Errorf("Candidates counted %d uses, want none", len(l.uses))
	}
	l.RenderBlock(cands[:1])
	if len(l.uses) != 1 || l.uses[cands[0].Key] != 1 {
		t.Errorf("after showing %s: uses %v, want it alone", cands[0].Key, l.uses)
	}
}

// TestUsesCountedOncePerGrain: recalls of a fact closer together than
// HalfLife/useGrain count once, and write its eviction document once.
func TestUsesCountedOncePerGrain(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	tmpl, err := New(Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	store := storage.NewMemoryStore()
	open := func() *Layer {
		b, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", ResourceID: "u", Store: store})
		if err != nil {
			t.Fatal(err)
		}
		return b.(*Layer)
	}
	f, err := open().Remember(ctx, Memo{Text: "The user edits the pricing page.", Importance: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	grain := DefaultHalfLife / useGrain
	uses := func() int64 {
		t.Helper()
		e, ok, err := open().lookupEvict(ctx, f.ID)
		if err != nil || !ok {
			t.Fatalf("eviction document of %s: %v, %v", f.ID, ok, err)
		}
		return e.uses
	}
	run := func() {
		t.Helper()
		l := open()
		if _, err := l.Recall(ctx, layer.Query{Text: "pricing page"}); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(grain) // a grain after the write
	run()
	if got := uses(); got != 1 {
		t.Fatalf("after one recall: %d uses, want 1", got)
	}
	for range 3 { // within the grain: not counted again
		now = now.Add(grain / 4)
		run()
	}
	if got := uses(); got != 1 {
		t.Errorf("after three more recalls within %v: %d uses, want 1", grain, got)
	}
	now = now.Add(grain)
	run()
	if got := uses(); got != 2 {
		t.Errorf("after a recall a grain later: %d uses, want 2", got)
	}
}
