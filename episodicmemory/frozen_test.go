package episodicmemory_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/storage"
)

var update = flag.Bool("update", false, "rewrite the frozen log in testdata")

// frozen is testdata/log-v1.json: a stored log of format version 1 (its
// records by name under the layer's scope) and a snapshot of it.
type frozen struct {
	Records  map[string]json.RawMessage `json:"records"`
	Snapshot json.RawMessage            `json:"snapshot"`
}

// A log written by format version 1 — compacted, with dropped raw
// episodes and a turn — still loads, recalls and reads; its snapshot
// still restores. Run with -update only when adding a version: the file
// of an old version is never rewritten.
func TestEpisodic20_FrozenV1Loads(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join("testdata", "log-v1.json")
	cfg := episodicmemory.Config{CompactAfter: 4, Retain: 3}
	prefix := storage.LayerPrefix(episodicmemory.DefaultStorageID, storage.ThreadScope("t"))
	if *update {
		st := storage.NewMemoryStore()
		l := bound(t, cfg, st, "t", "")
		for n := range 9 {
			store(t, l, pageStep(n))
		}
		store(t, l, turnStep(9, "Which page did I create first?", "page-0, Page 0."))
		keys, _ := st.List(ctx, prefix)
		f := frozen{Records: map[string]json.RawMessage{}}
		for _, k := range keys {
			it, _ := st.Get(ctx, k)
			name, _ := storage.Unescape(strings.TrimPrefix(k, prefix))
			f.Records[name] = it.Value
		}
		f.Snapshot, _ = l.Snapshot(ctx)
		data, _ := json.MarshalIndent(f, "", "  ")
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f frozen
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	st := storage.NewMemoryStore()
	for name, v := range f.Records {
		if _, err := st.Put(ctx, storage.LayerKey(episodicmemory.DefaultStorageID, storage.ThreadScope("t"), name), v, storage.NoVersion); err != nil {
			t.Fatal(err)
		}
	}
	l := bound(t, cfg, st, "t", "")
	if s := int(l.Metrics()["entries"]); s != 10 {
		t.Errorf("the frozen log holds %d episodes, want 10", s)
	}
	if b := recall(t, l, "page-0"); !strings.Contains(b, "[call-0]") || !strings.Contains(b, "] step 9 \"Which page did I create first?\" → ") {
		t.Errorf("recall of the frozen log:\n%s", b)
	}
	if _, whole, err := l.Read(ctx, "call-0"); err != nil || whole {
		t.Errorf("Read(call-0): whole=%v %v; want its digest (dropped)", whole, err)
	}
	if e, whole, err := l.Read(ctx, "call-8"); err != nil || !whole || !strings.Contains(e.Result, "page-8") {
		t.Errorf("Read(call-8) = %+v %v %v", e, whole, err)
	}
	fresh := bound(t, cfg, storage.NewMemoryStore(), "u", "")
	if err := fresh.Restore(ctx, f.Snapshot); err != nil {
		t.Fatalf("Restore of the frozen snapshot: %v", err)
	}
	if got, want := recall(t, fresh, "page-0"), recall(t, l, "page-0"); got != want {
		t.Errorf("the restored snapshot recalls differently:\n%s\n---\n%s", got, want)
	}
	// Appending to the frozen log goes on from its head.
	store(t, l, pageStep(10))
	if _, _, err := bound(t, cfg, st, "t", "").Read(ctx, "call-10"); err != nil {
		t.Errorf("append to the frozen log: %v", err)
	}
}
