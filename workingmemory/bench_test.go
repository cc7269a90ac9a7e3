package workingmemory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/memlayer/memlayer/internal/benchmetric"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// peerWorkload is testdata/peer-workload: a schema, an initial state,
// eight updates and the expected final state.
type peerWorkload struct {
	schema  []byte
	initial []byte
	updates [][]byte
	final   []byte
}

func loadPeerWorkload(tb testing.TB) peerWorkload {
	tb.Helper()
	dir := filepath.Join("..", "testdata", "peer-workload")
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	w := peerWorkload{schema: read("schema.json"), initial: read("initial.json"), final: read("final.json")}
	sc := bufio.NewScanner(bytes.NewReader(read("updates.jsonl")))
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			w.updates = append(w.updates, bytes.Clone(line))
		}
	}
	if len(w.updates) != 8 {
		tb.Fatalf("updates.jsonl: %d updates, want 8", len(w.updates))
	}
	return w
}

// peerLayer returns a resource-scoped scratchpad with the workload's
// schema, initialised on a fresh in-memory store holding initial.json.
func peerLayer(tb testing.TB, w peerWorkload) (*Layer, storage.Store) {
	tb.Helper()
	l, err := New(Config{Schema: w.schema, Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		tb.Fatal(err)
	}
	st := storage.NewMemoryStore()
	ctx := context.Background()
	if _, err := st.Put(ctx, storage.LayerKey(DefaultStorageID, storage.ResourceScope("user-1"), "state"), w.initial, storage.NoVersion); err != nil {
		tb.Fatal(err)
	}
	bound, err := l.Init(ctx, layer.Env{ThreadID: "thread-1", ResourceID: "user-1", Store: st})
	if err != nil {
		tb.Fatal(err)
	}
	return bound.(*Layer), st
}

func TestPeerWorkloadReplay(t *testing.T) {
	w := loadPeerWorkload(t)
	l, st := peerLayer(t, w)
	initial, err := st.Get(t.Context(), storage.LayerKey(DefaultStorageID, storage.ResourceScope("user-1"), "state"))
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range w.updates {
		if err := l.Update(t.Context(), u); err != nil {
			t.Fatalf("update %d: %v", i+1, err)
		}
	}
	var want any
	if err := json.Unmarshal(w.final, &want); err != nil {
		t.Fatal(err)
	}
	gotMem := roundTrip(t, l.State())
	if !jsonDeepEqual(gotMem, want) {
		t.Errorf("state after 8 updates:\n%s\nwant final.json:\n%s", mustJSON(t, gotMem), w.final)
	}
	it, err := st.Get(t.Context(), storage.LayerKey(DefaultStorageID, storage.ResourceScope("user-1"), "state"))
	if err != nil {
		t.Fatal(err)
	}
	var gotStored any
	if err := json.Unmarshal(it.Value, &gotStored); err != nil {
		t.Fatal(err)
	}
	delete(gotStored.(map[string]any), writesKey) // the write log
	if !jsonDeepEqual(gotStored, want) {
		t.Errorf("stored state after 8 updates:\n%s\nwant final.json", it.Value)
	}
	// Storage versions are opaque, but the in-memory store adds one per
	// write within a key's life: 8 updates, 8 writes.
	if it.Version-initial.Version != 8 {
		t.Errorf("stored version %d, %d writes after the initial put's %d; want 8 (one per update)", it.Version, it.Version-initial.Version, initial.Version)
	}
	// A second cycle starts from and returns to final.json.
	for _, u := range w.updates {
		if err := l.Update(t.Context(), u); err != nil {
			t.Fatal(err)
		}
	}
	if got := roundTrip(t, l.State()); !jsonDeepEqual(got, want) {
		t.Errorf("second cycle ends at\n%s", mustJSON(t, got))
	}
}

// BenchmarkPeerUpdate replays the peer workload's updates cyclically:
// decode the argument bytes, merge, validate the merged state against the
// schema, encode, persist with compare-and-swap to storage.NewMemoryStore.
func BenchmarkPeerUpdate(b *testing.B) {
	w := loadPeerWorkload(b)
	l, _ := peerLayer(b, w)
	ctx := context.Background()
	for _, u := range w.updates { // first cycle: reach the steady state
		if err := l.Update(ctx, u); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu := benchmetric.StartCPU()
	var bt benchmetric.Batch
	i := 0
	for b.Loop() {
		if err := l.Update(ctx, w.updates[i%len(w.updates)]); err != nil {
			b.Fatal(err)
		}
		bt.Tick()
		i++
	}
	cpu.Report(b)
	bt.Report(b)
}

// BenchmarkPeerRecall renders the working-memory block of final.json, as
// before every model call. The block is cached per state.
func BenchmarkPeerRecall(b *testing.B) {
	w := loadPeerWorkload(b)
	l, _ := peerLayer(b, w)
	ctx := context.Background()
	for _, u := range w.updates {
		if err := l.Update(ctx, u); err != nil {
			b.Fatal(err)
		}
	}
	q := layer.Query{Text: "what next?"}
	b.ReportAllocs()
	cpu := benchmetric.StartCPU()
	var bt benchmetric.Batch
	for b.Loop() {
		items, err := l.Recall(ctx, q)
		if err != nil || len(items) != 1 {
			b.Fatal(err, len(items))
		}
		bt.Tick()
	}
	cpu.Report(b)
	bt.Report(b)
}

// BenchmarkPeerUpdateRecall is an update followed by the Recall that
// renders its new state: the cost when every step changes the memory.
func BenchmarkPeerUpdateRecall(b *testing.B) {
	w := loadPeerWorkload(b)
	l, _ := peerLayer(b, w)
	ctx := context.Background()
	q := layer.Query{Text: "what next?"}
	b.ReportAllocs()
	cpu := benchmetric.StartCPU()
	var bt benchmetric.Batch
	i := 0
	for b.Loop() {
		if err := l.Update(ctx, w.updates[i%len(w.updates)]); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Recall(ctx, q); err != nil {
			b.Fatal(err)
		}
		bt.Tick()
		i++
	}
	cpu.Report(b)
	bt.Report(b)
}

// TestScratchpadMemory10k measures the heap of 10,000 resource-scoped
// scratchpads holding final.json: the layers alone (the store filled
// beforehand), the in-memory store's copies, and the rendered blocks once
// each has been recalled.
func TestScratchpadMemory10k(t *testing.T) {
	if testing.Short() || benchmetric.Race {
		t.Skip("memory measurement: not under -short or -race")
	}
	w := loadPeerWorkload(t)
	tmpl, err := New(Config{Schema: w.schema, Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10000
	ctx := context.Background()
	resources := make([]string, n)
	for i := range resources {
		resources[i] = fmt.Sprintf("user-%05d", i)
	}
	base := benchmetric.HeapInUse()
	st := storage.NewMemoryStore()
	for _, r := range resources {
		if _, err := st.Put(ctx, storage.LayerKey(DefaultStorageID, storage.ResourceScope(r), "state"), w.final, storage.NoVersion); err != nil {
			t.Fatal(err)
		}
	}
	withStore := benchmetric.HeapInUse()
	layers := make([]layer.Layer, n)
	for i, r := range resources {
		if layers[i], err = tmpl.Init(ctx, layer.Env{ThreadID: "t", ResourceID: r, Store: st}); err != nil {
			t.Fatal(err)
		}
	}
	withLayers := benchmetric.HeapInUse()
	for _, l := range layers {
		if _, err := l.Recall(ctx, layer.Query{}); err != nil {
			t.Fatal(err)
		}
	}
	withBlocks := benchmetric.HeapInUse()
	for _, l := range layers {
		if err := l.(*Layer).Update(ctx, w.updates[0]); err != nil {
			t.Fatal(err)
		}
	}
	hot := benchmetric.HeapInUse()
	runtime.KeepAlive(layers)
	runtime.KeepAlive(st)
	per := func(d uint64) float64 { return float64(d) / n }
	t.Logf("store copies of final.json: %.0f B per scratchpad", per(withStore-base))
	t.Logf("scratchpad layers holding final.json: %.0f B per scratchpad", per(withLayers-withStore))
	t.Logf("after Recall (rendered block cached): %.0f B per scratchpad", per(withBlocks-withStore))
	t.Logf("after an update (decoded tree kept, block not yet rendered): %.0f B per scratchpad", per(hot-withStore))
	if per(withLayers-withStore) > 1024 {
		t.Errorf("an idle scratchpad holding final.json takes %.0f B, want under 1 KiB", per(withLayers-withStore))
	}
}

// BenchmarkUpdateStages times each stage of one update (the largest of the
// workload, the eighth) on its own, to show where BenchmarkPeerUpdate's
// time goes.
func BenchmarkUpdateStages(b *testing.B) {
	w := loadPeerWorkload(b)
	l, _ := peerLayer(b, w)
	ctx := context.Background()
	for _, u := range w.updates {
		if err := l.Update(ctx, u); err != nil {
			b.Fatal(err)
		}
	}
	cur := l.cur.Load()
	raw := w.updates[7]
	upd, err := l.decodeUpdate(raw)
	if err != nil {
		b.Fatal(err)
	}
	merged, err := l.c.merger.mergeState(cur.tree(), upd)
	if err != nil {
		b.Fatal(err)
	}
	next := newState(merged, 0)
	store := storage.NewMemoryStore()
	stages := []struct {
		name string
		fn   func()
	}{
		{"decode", func() { _, _ = l.decodeUpdate(raw) }},
		{"merge", func() { _, _ = l.c.merger.mergeState(cur.tree(), upd) }},
		{"validate", func() {
			if err := l.c.schema.validate(merged); err != nil {
				b.Fatal(err)
			}
		}},
		{"encode", func() { _ = newState(merged, 0) }},
		{"put", func() { _, _ = store.Put(ctx, "layers/working-memory/user-1/state", next.enc, storage.AnyVersion) }},
		{"render", func() { s := newState(merged, 0); _ = s.rendered(Tag) }},
	}
	for _, s := range stages {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.fn()
			}
		})
	}
}
