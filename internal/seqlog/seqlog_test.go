package seqlog

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
)

var errVersion = errors.New("test: newer version")

type head struct{ Next int64 }

func decodeHead(b []byte) (head, error) {
	var h head
	if err := json.Unmarshal(b, &h); err != nil {
		return head{}, err
	}
	if h.Next > 100 {
		return head{}, errVersion
	}
	return h, nil
}

func newLog() *Log {
	return &Log{Store: storage.NewMemoryStore(), LayerID: "l", Scope: "s", Pkg: "test", ErrVersion: errVersion, MaxRetries: 4,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return time.Unix(1, 0) }}
}

// fresh numbers the new head above every record "r<n>".
func fresh(names []string) head {
	var h head
	for _, name := range names {
		if n, err := strconv.ParseInt(name[1:], 10, 64); name[0] == 'r' && err == nil {
			h.Next = max(h.Next, n+1)
		}
	}
	return h
}

func TestReadHeadQuarantine(t *testing.T) {
	ctx := context.Background()
	g := newLog()
	if h, v, err := ReadHead(ctx, g, decodeHead, fresh); err != nil || h.Next != 0 || v != storage.NoVersion {
		t.Fatalf("no head: %+v %d %v", h, v, err)
	}
	for _, name := range []string{"r3", "r7"} {
		g.Store.Put(ctx, g.Key(name), []byte(`{}`), storage.NoVersion)
	}
	g.Store.Put(ctx, g.Key(HeadName), []byte(`not json`), storage.NoVersion)
	h, _, err := ReadHead(ctx, g, decodeHead, fresh)
	if err != nil || h.Next != 8 {
		t.Fatalf("after an unreadable head: %+v %v, want next 8", h, err)
	}
	if it, err := g.Store.Get(ctx, g.Key(storage.QuarantinePrefix+"1000000000")); err != nil || string(it.Value) != "not json" {
		t.Fatalf("quarantined head: %q %v", it.Value, err)
	}
	g.Store.Put(ctx, g.Key(HeadName), []byte(`{"Next":101}`), storage.AnyVersion)
	if _, _, err := ReadHead(ctx, g, decodeHead, fresh); !errors.Is(err, errVersion) {
		t.Fatalf("newer head: %v", err)
	}
}

func TestRead(t *testing.T) {
	ctx := context.Background()
	g := newLog()
	g.Store.Put(ctx, g.Key("bad"), []byte(`[`), storage.NoVersion)
	g.Store.Put(ctx, g.Key("new"), []byte(`{"Next":200}`), storage.NoVersion)
	g.Store.Put(ctx, g.Key("ok"), []byte(`{"Next":2}`), storage.NoVersion)
	for name, want := range map[string]bool{"missing": false, "bad": false, "ok": true} {
		if _, ok, err := Read(ctx, g, name, decodeHead); ok != want || err != nil {
			t.Errorf("Read(%s) = %v, %v; want %v", name, ok, err, want)
		}
	}
	if _, err := g.Store.Get(ctx, g.Key("bad")); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("unreadable record not quarantined: %v", err)
	}
	if _, _, err := Read(ctx, g, "new", decodeHead); !errors.Is(err, errVersion) {
		t.Errorf("newer record: %v", err)
	}
}

func TestSwapCatchesUp(t *testing.T) {
	ctx := context.Background()
	g := newLog()
	v0, _ := g.Store.Put(ctx, g.Key(HeadName), []byte(`{"Next":1}`), storage.NoVersion)
	v1, _ := g.Store.Put(ctx, g.Key(HeadName), []byte(`{"Next":5}`), v0) // another writer
	caughtUp := 0
	catchUp := func() (head, int64, error) {
		caughtUp++
		h, v, err := ReadHead(ctx, g, decodeHead, fresh)
		return h, v, err
	}
	next := func(h *head) bool { h.Next++; return true }
	h, v, ok, err := Swap(ctx, g, head{Next: 1}, v0, next, catchUp)
	if err != nil || !ok || h.Next != 6 || v == v1 || caughtUp != 1 {
		t.Fatalf("Swap = %+v, %d, %v, %v after %d catch-ups; want next 6 after 1", h, v, ok, err, caughtUp)
	}
	if _, _, ok, err := Swap(ctx, g, h, v, func(*head) bool { return false }, catchUp); ok || err != nil {
		t.Fatalf("Swap without a change = %v, %v", ok, err)
	}
	if err := g.Purge(ctx, func(name string) bool { return name != HeadName }); err != nil {
		t.Fatal(err)
	}
	keys, _ := g.Store.List(ctx, storage.LayerPrefix("l", "s"))
	if !slices.Equal(keys, []string{g.Key(HeadName)}) {
		t.Fatalf("after Purge: %q", keys)
	}
}

func TestReadMany(t *testing.T) {
	ctx := context.Background()
	g := newLog()
	cs := &storagetest.Counting{MemoryStore: storage.NewMemoryStore()}
	g.Store = cs
	other := newLog()
	other.Store, other.Scope = cs, "s/x" // a nested scope's records
	g.Store.Put(ctx, g.Key("r1"), []byte(`{"Next":1}`), storage.NoVersion)
	g.Store.Put(ctx, g.Key("bad"), []byte(`[`), storage.NoVersion)
	g.Store.Put(ctx, g.Key("r3"), []byte(`{"Next":3}`), storage.NoVersion)
	other.Store.Put(ctx, other.Key("r2"), []byte(`{"Next":22}`), storage.NoVersion)
	var asked []int
	decode := func(i int, b []byte) (head, error) {
		asked = append(asked, i)
		return decodeHead(b)
	}
	recs, err := ReadMany(ctx, g, []string{"r3", "r2", "bad", "r1"}, decode)
	if err != nil {
		t.Fatal(err)
	}
	if want := []head{{3}, {}, {}, {1}}; !slices.Equal(recs, want) {
		t.Errorf("ReadMany = %v, want %v (missing and unreadable records zero)", recs, want)
	}
	if !slices.Equal(asked, []int{0, 2, 3}) {
		t.Errorf("decode was asked for %v, want the stored records 0, 2, 3", asked)
	}
	if trips, gets := cs.Trips.Load(), cs.Gets.Load(); trips != 1 || gets != 4 {
		t.Errorf("ReadMany read %d records in %d round trips, want 4 in one", gets, trips)
	}
	if _, err := g.Store.Get(ctx, g.Key("bad")); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("unreadable record not quarantined: %v", err)
	}
	if it, err := g.Store.Get(ctx, g.Key(storage.QuarantinePrefix+"1000000000")); err != nil || string(it.Value) != "[" {
		t.Errorf("quarantined record: %q %v", it.Value, err)
	}
	if recs, err := ReadMany(ctx, g, nil, decode); err != nil || len(recs) != 0 {
		t.Errorf("ReadMany of no names = %v, %v", recs, err)
	}
	if _, err := ReadMany(ctx, g, []string{"r1", "r1"}, decode); !errors.Is(err, storage.ErrInvalidKey) {
		t.Errorf("ReadMany of a name twice: %v, want ErrInvalidKey", err)
	}
	g.Store.Put(ctx, g.Key("r4"), []byte(`{"Next":200}`), storage.NoVersion)
	if _, err := ReadMany(ctx, g, []string{"r1", "r4"}, decode); !errors.Is(err, errVersion) {
		t.Errorf("ReadMany of a newer record: %v, want errVersion", err)
	}
	if _, err := g.Store.Get(ctx, g.Key("r4")); err != nil {
		t.Errorf("a newer record must stay stored: %v", err)
	}
}

// TestReadManyWithoutTheCapability reads through a store that has Get
// alone, as Read would, one Get per record.
func TestReadManyWithoutTheCapability(t *testing.T) {
	ctx := context.Background()
	g := newLog()
	g.Store = struct{ storage.Store }{g.Store}
	g.Store.Put(ctx, g.Key("r1"), []byte(`{"Next":1}`), storage.NoVersion)
	g.Store.Put(ctx, g.Key("bad"), []byte(`[`), storage.NoVersion)
	recs, err := ReadMany(ctx, g, []string{"missing", "bad", "r1"}, func(_ int, b []byte) (head, error) { return decodeHead(b) })
	if want := []head{{}, {}, {1}}; err != nil || !slices.Equal(recs, want) {
		t.Fatalf("ReadMany = %v, %v; want %v", recs, err, want)
	}
	if _, err := g.Store.Get(ctx, g.Key("bad")); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("unreadable record not quarantined: %v", err)
	}
}

// TestReadEachStops: the records after the one each stops at are read
// but neither decoded nor quarantined, nor an error when newer.
func TestReadEachStops(t *testing.T) {
	ctx := context.Background()
	g := newLog()
	g.Store.Put(ctx, g.Key("r1"), []byte(`{"Next":1}`), storage.NoVersion)
	g.Store.Put(ctx, g.Key("bad"), []byte(`[`), storage.NoVersion)
	g.Store.Put(ctx, g.Key("new"), []byte(`{"Next":200}`), storage.NoVersion)
	var seen []int
	var oks []bool
	decoded := 0
	err := ReadEach(ctx, g, []string{"missing", "r1", "bad", "new"}, func(_ int, b []byte) (head, error) {
		decoded++
		return decodeHead(b)
	}, func(i int, h head, ok bool) bool {
		seen, oks = append(seen, i), append(oks, ok)
		return h.Next != 1
	})
	if err != nil || !slices.Equal(seen, []int{0, 1}) || !slices.Equal(oks, []bool{false, true}) || decoded != 1 {
		t.Fatalf("ReadEach = %v, handed %v (ok %v) after %d decodes; want records 0 (missing) and 1, one decode", err, seen, oks, decoded)
	}
	if _, err := g.Store.Get(ctx, g.Key("bad")); err != nil {
		t.Errorf("a record after the stop was quarantined: %v", err)
	}
}
