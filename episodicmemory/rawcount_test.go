package episodicmemory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// segReads is an in-memory store (with its index) that counts the reads
// of the log's segments.
type segReads struct {
	*storage.MemoryStore
	n atomic.Int64
}

func isSegment(key string) bool { return strings.Contains(key, "/seg%2F") }

func (s *segReads) Get(ctx context.Context, key string) (storage.Item, error) {
	if isSegment(key) {
		s.n.Add(1)
	}
	return s.MemoryStore.Get(ctx, key)
}

func (s *segReads) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	for _, k := range keys {
		if isSegment(k) {
			s.n.Add(1)
		}
	}
	return s.MemoryStore.GetMany(ctx, keys)
}

// storedHead returns the key of the log's head record and the record,
// decoded as JSON; nil when there is none.
func storedHead(t *testing.T, st storage.Store) (string, map[string]any) {
	t.Helper()
	keys, err := st.List(context.Background(), "layers/episodic-memory/")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.HasSuffix(k, "/head") {
			it, err := st.Get(context.Background(), k)
			if err != nil {
				t.Fatal(err)
			}
			var h map[string]any
			if err := json.Unmarshal(it.Value, &h); err != nil {
				t.Fatal(err)
			}
			return k, h
		}
	}
	return "", nil
}

// rawTokens is the size of an episode for Config.CompactTokens.
func rawTokens(e episodicmemory.Episode) int {
	return 1 + layer.Query{}.Count(e.Arguments) + layer.Query{}.Count(e.Query) + layer.Query{}.Count(e.Result)
}

// checkCounts checks that the head's counts are those of the raw
// episodes a fresh run reads.
func checkCounts(t *testing.T, st storage.Store, cfg episodicmemory.Config, thread, resource string) {
	t.Helper()
	_, h := storedHead(t, st)
	if h["counted"] != true {
		t.Fatalf("the head keeps no counts: %v", h)
	}
	eps := bound(t, cfg, st, thread, resource).Episodes()
	toks := 0
	for _, e := range eps {
		toks += rawTokens(e)
	}
	raw, _ := h["raw"].(float64)
	rawToks, _ := h["rawTokens"].(float64)
	if int(raw) != len(eps) || int(rawToks) != toks {
		t.Errorf("the head counts %v raw episodes of %v tokens; the log holds %d of %d", raw, rawToks, len(eps), toks)
	}
}

// A run's steps read no segment of the log until compaction is due: the
// head counts the raw episodes. Before, every run read the raw tail (up
// to Config.CompactAfter episodes) at its first step.
func TestEpisodicStoreReadsNoSegment(t *testing.T) {
	st := &segReads{MemoryStore: storage.NewMemoryStore()}
	cfg := episodicmemory.Config{CompactAfter: 8}
	compactions := 0
	for run := range 30 {
		before := st.n.Load()
		_, h := storedHead(t, st)
		l := bound(t, cfg, st, "t", "")
		store(t, l, pageStep(run))
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, after := storedHead(t, st)
		folded := h != nil && after["digested"] != h["digested"]
		if folded {
			compactions++
		}
		if n := st.n.Load() - before; n > 0 && !folded {
			t.Errorf("run %d read %d segments without compacting", run, n)
		}
	}
	if compactions == 0 {
		t.Error("no run compacted: the head's counts never reached the threshold")
	}
	checkCounts(t, st, cfg, "t", "")
}

// A head written without counts (by an older version) is counted by the
// first run that reads the raw episodes, and is then trusted.
func TestEpisodicOldHeadIsCounted(t *testing.T) {
	ctx := context.Background()
	st := &segReads{MemoryStore: storage.NewMemoryStore()}
	cfg := episodicmemory.Config{}
	l := bound(t, cfg, st, "t", "")
	for n := range 5 {
		store(t, l, pageStep(n))
	}
	key, h := storedHead(t, st)
	delete(h, "raw")
	delete(h, "rawTokens")
	delete(h, "counted")
	b, _ := json.Marshal(h)
	if _, err := st.Put(ctx, key, b, storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	before := st.n.Load()
	store(t, bound(t, cfg, st, "t", ""), pageStep(5))
	if st.n.Load() == before {
		t.Error("a head without counts: the run did not read the raw episodes")
	}
	checkCounts(t, st, cfg, "t", "")
	before = st.n.Load()
	store(t, bound(t, cfg, st, "t", ""), pageStep(6))
	if n := st.n.Load() - before; n != 0 {
		t.Errorf("the counted head: the run read %d segments", n)
	}
	checkCounts(t, st, cfg, "t", "")
}

// Threads writing one resource's log at once, each run a fresh layer,
// with compaction on the way, leave counts that match the log.
func TestEpisodicCountsUnderConcurrentWriters(t *testing.T) {
	st := storage.NewMemoryStore()
	cfg := episodicmemory.Config{CompactAfter: 6, Spec: layer.Spec{Scope: layer.ScopeResource}}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for run := range 8 {
				l := bound(t, cfg, st, fmt.Sprintf("thread-%d", w), "u")
				for step := range 2 {
					if err := l.Store(context.Background(), pageStep(100*w+10*run+step)); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
				if err := l.Close(context.Background()); err != nil {
					t.Errorf("writer %d: close: %v", w, err)
				}
			}
		}()
	}
	wg.Wait()
	checkCounts(t, st, cfg, "check", "u")
}
