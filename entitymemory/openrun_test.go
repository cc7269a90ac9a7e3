package entitymemory

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
	"github.com/memlayer/memlayer/storage/storagetest/allstores"
)

// openRunNow is the clock of the open-a-run benchmark: every seeded
// entity was seen within the archive's TTL of it.
func openRunNow() time.Time { return time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC) }

// openRunConfig is the layer of the open-a-run benchmark: resource scope,
// with an archive large enough to hold the seeded entities (the default
// capacity, 10,000, would evict the oldest).
var openRunConfig = Config{Spec: layer.Spec{Scope: layer.ScopeResource}, ArchiveCapacity: 200_000, Now: openRunNow}

// openRunQuery is the benchmark's message: it names the page seen first,
// long out of the recent list.
var openRunQuery = layer.Query{Text: `Go back to the page from turn 2 ("Pricing for Nonprofits 2") and publish it`}

// seedArchive writes the entity memory of resource "user-1" directly, as
// a long run would have left it: n pages archived (one record and one
// index document each, and the head's count), the newest Capacity of
// them in the recent list. It returns the layer's scope.
func seedArchive(tb testing.TB, st storage.Store, n int) string {
	ctx := context.Background()
	tmpl, err := New(openRunConfig)
	if err != nil {
		tb.Fatal(err)
	}
	scope := storage.ResourceScope("user-1")
	a := newArchive(st, tmpl.cfg.StorageName(), scope, tmpl.cfg)
	t0 := openRunNow().Add(-time.Duration(n+1) * time.Minute)
	page := func(i int) Entity {
		return Entity{Type: "page", ID: "page-" + strconv.Itoa(i), Name: "Pricing for Nonprofits " + strconv.Itoa(i),
			Slug: "pricing-np-" + strconv.Itoa(i), SeenAt: t0.Add(time.Duration(i) * time.Minute), seq: uint64(i + 1)}
	}
	var writes []storage.Write
	var docs []storage.Document
	flush := func(force bool) {
		if !force && len(writes) < 512 {
			return
		}
		if err := putAll(ctx, st, writes); err != nil {
			tb.Fatal(err)
		}
		if err := a.index.Index(ctx, a.col, docs...); err != nil {
			tb.Fatal(err)
		}
		writes, docs = writes[:0], docs[:0]
	}
	for i := range n {
		e := page(i)
		data, err := json.Marshal(archived{e.Type, e.ID, e.Name, e.Slug, e.Parent, e.SeenAt})
		if err != nil {
			tb.Fatal(err)
		}
		writes = append(writes, storage.Write{Key: a.recordKey(&e), Value: data, IfVersion: storage.AnyVersion})
		docs = append(docs, document(&e))
		flush(false)
	}
	flush(true)
	var list []Entity
	for i := n - 1; i >= max(n-tmpl.cfg.Capacity, 0); i-- {
		list = append(list, page(i))
	}
	recs := []storage.Write{
		{Key: a.head, Value: []byte(strconv.Itoa(n)), IfVersion: storage.AnyVersion},
		{Key: storage.LayerKey(tmpl.cfg.StorageName(), scope, StateName), Value: encodeState(list, uint64(n)), IfVersion: storage.AnyVersion},
	}
	if err := putAll(ctx, st, recs); err != nil {
		tb.Fatal(err)
	}
	return scope
}

// putAll writes a batch: in one transaction on a storage.Batcher, else
// one record at a time.
func putAll(ctx context.Context, st storage.Store, writes []storage.Write) error {
	if len(writes) == 0 {
		return nil
	}
	if b, ok := st.(storage.Batcher); ok {
		_, err := b.WriteBatch(ctx, writes)
		return err
	}
	for _, w := range writes {
		if _, err := st.Put(ctx, w.Key, w.Value, w.IfVersion); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkOpenRun opens a run on a user's entity memory with 100 and
// with 100,000 archived entities (Init, resource scope) and makes its
// first Recall, for a message that names the page archived first. The
// issue's bar: at 100,000 at most twice the time at 100, on SQLite (with
// its index).
func BenchmarkOpenRun(b *testing.B) {
	ctx := context.Background()
	tmpl, err := New(openRunConfig)
	if err != nil {
		b.Fatal(err)
	}
	backends := allstores.Backends("bench-openrun-ent")
	seed := func(b *testing.B, st storage.Store, n int) { seedArchive(b, st, n) }
	storagetest.BenchmarkOpenRun(b, backends, "archived", seed, func(st storage.Store) error {
		_, err := layertest.FirstRecall(ctx, tmpl, layer.Env{ThreadID: "t-new", ResourceID: "user-1", Store: st}, openRunQuery)
		return err
	})
}

// TestOpenRunSeed checks the seeded archive is one the layer reads: a
// run starts with the newest pages as its recent list and recalls the
// first page, named by title, from the archive; another user's run sees
// none of it.
func TestOpenRunSeed(t *testing.T) {
	ctx := context.Background()
	for name, open := range archiveStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			seedArchive(t, st, 1000)
			tmpl := mustNew(t, openRunConfig)
			l := initLayer(t, tmpl, layer.Env{ThreadID: "t-new", ResourceID: "user-1", Store: st})
			if got := l.Entities(); len(got) != DefaultCapacity || got[0].ID != "page-999" {
				t.Fatalf("recent list = %+v", got)
			}
			items, err := l.Recall(ctx, openRunQuery)
			if err != nil || len(items) != 1 {
				t.Fatalf("Recall = %v, %v", items, err)
			}
			_, recalled, ok := strings.Cut(items[0].Text, RecalledHeader)
			if !ok || !strings.Contains(recalled, `"Pricing for Nonprofits 2" (page-2`) {
				t.Errorf("page-2 not recalled:\n%s", items[0].Text)
			}
			other := initLayer(t, tmpl, layer.Env{ThreadID: "t-new", ResourceID: "user-1/x", Store: st})
			if items, err := other.Recall(ctx, openRunQuery); err != nil || len(items) != 0 {
				t.Errorf("another user's run recalls %v, %v", items, err)
			}
		})
	}
}
