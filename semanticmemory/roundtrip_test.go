package semanticmemory

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// TestOpenRunRoundTrips: on a store without search, a run fills its
// private index from the newest records, recordsPerRead of them per
// GetMany; a store without GetMany is read one Get per record, and the
// run holds the same facts.
func TestOpenRunRoundTrips(t *testing.T) {
	ctx := context.Background()
	const records = 300 // one fact each, as runs write them
	tmpl, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var recalled [2]string
	for i, many := range []bool{true, false} {
		c := &storagetest.Counting{MemoryStore: storage.NewMemoryStore()}
		var st storage.Store = struct {
			storage.Store
			storage.MultiGetter
		}{c, c} // no search
		if !many {
			st = struct{ storage.Store }{c}
		}
		key := func(name string) string {
			return storage.LayerKey(DefaultStorageID, storage.ResourceScope("user-1"), name)
		}
		t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		for seq := range int64(records) {
			f := Fact{ID: "f" + strconv.FormatInt(seq, 10), Kind: "fact", Importance: 0.5, Source: Source{By: "code"},
				Text: "Fact " + strconv.FormatInt(seq, 10) + " about page w" + strconv.FormatInt(seq, 10), Created: t0, Updated: t0, Version: 1}
			if _, err := st.Put(ctx, key(recName(seq)), encode(record{Version: FormatVersion, Seq: seq, Facts: []Fact{f}}), storage.NoVersion); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Put(ctx, key("head"), encode(head{Version: FormatVersion, Next: records}), storage.NoVersion); err != nil {
			t.Fatal(err)
		}
		l, err := tmpl.Init(ctx, layer.Env{ThreadID: "t", ResourceID: "user-1", Store: st})
		if err != nil {
			t.Fatal(err)
		}
		items, err := l.Recall(ctx, layer.Query{Text: "page w7 and w250"})
		if err != nil || len(items) != 1 {
			t.Fatalf("Recall = %v, %v", items, err)
		}
		recalled[i] = items[0].Text
		if m := l.(*Layer).Metrics()["entries"]; m != records {
			t.Errorf("entries = %d, want %d", m, records)
		}
		trips, read := c.Trips.Load(), c.Gets.Load()
		t.Logf("%d records, GetMany %v: %d records read in %d round trips", records, many, read, trips)
		if read < records {
			t.Errorf("%d records read, want every record (%d)", read, records)
		}
		if want := int64(2 + (records+recordsPerRead-1)/recordsPerRead); many && trips > want {
			t.Errorf("with GetMany: %d round trips, want at most %d (the head's, twice, and one a %d records)", trips, want, recordsPerRead)
		}
		if !many && trips != read {
			t.Errorf("without GetMany: %d round trips for %d records, want one each", trips, read)
		}
	}
	if recalled[0] != recalled[1] {
		t.Errorf("recall with GetMany differs from recall without:\n%s\n---\n%s", recalled[0], recalled[1])
	}
}
