package thread_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// readCounter is a store that counts the reads of each key.
type readCounter struct {
	storage.Store
	mu    sync.Mutex
	reads map[string]int
}

func (r *readCounter) Get(ctx context.Context, key string) (storage.Item, error) {
	r.mu.Lock()
	r.reads[key]++
	r.mu.Unlock()
	return r.Store.Get(ctx, key)
}

func (r *readCounter) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.reads[key]
	r.reads = map[string]int{}
	return n
}

// TestIndexReadOnlyForNewThreads: a run of a thread already on its
// resource's list does not read the list (which grows with the
// resource's threads); a new thread, a thread whose head predates the
// flag, and a thread that moves to another resource read it once and
// are listed. Users "a", "a/b" and "" write threads at once.
func TestIndexReadOnlyForNewThreads(t *testing.T) {
	onEach(t, func(t *testing.T, st storage.Store) {
		ctx := t.Context()
		rc := &readCounter{Store: st, reads: map[string]int{}}
		step(t, rc, "t1", "a", "create a page")
		if n := rc.count(thread.IndexKey("a")); n != 1 {
			t.Errorf("a new thread read its resource's list %d times, want 1", n)
		}
		for i := range 3 {
			step(t, rc, "t1", "a", "and again")
			if n := rc.count(thread.IndexKey("a")); n != 0 {
				t.Errorf("run %d of a listed thread read its resource's list %d times, want 0", i+2, n)
			}
		}

		// A head written before the flag: the next run makes sure the
		// thread is listed, then stops reading the list.
		step(t, rc, "t2", "a", "another")
		rc.count(thread.IndexKey("a"))
		unflag(t, st, "t2")
		if err := thread.Unindex(ctx, st, "a", "t2"); err != nil {
			t.Fatal(err)
		}
		step(t, rc, "t2", "a", "more")
		if n := rc.count(thread.IndexKey("a")); n != 1 {
			t.Errorf("a thread without the flag read its resource's list %d times, want 1", n)
		}
		step(t, rc, "t2", "a", "more")
		if n := rc.count(thread.IndexKey("a")); n != 0 {
			t.Errorf("after that, the list was read %d times, want 0", n)
		}

		// Users whose IDs nest or are empty, at once.
		var wg sync.WaitGroup
		for _, r := range []string{"a", "a/b", ""} {
			wg.Go(func() {
				for range 3 {
					step(t, st, "u-"+r, r, "hello")
				}
			})
		}
		wg.Wait()
		c := thread.Catalog{Store: st}
		for r, want := range map[string][]string{"a": {"t1", "t2", "u-a"}, "a/b": {"u-a/b"}} {
			got := listAll(t, c, r, thread.ListQuery{Limit: 10}, nil)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("threads of %q: %v, want %v", r, got, want)
			}
		}
	})
}

// unflag rewrites a thread's head as a build before the Indexed flag
// wrote it.
func unflag(t *testing.T, st storage.Store, threadID string) {
	t.Helper()
	key := storage.ThreadKey(threadID, thread.HeadName)
	it, err := st.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	var head map[string]any
	if err := json.Unmarshal(it.Value, &head); err != nil {
		t.Fatal(err)
	}
	if head["indexed"] != true {
		t.Fatalf("the head of %s lacks the flag: %s", threadID, it.Value)
	}
	delete(head, "indexed")
	data, err := json.Marshal(head)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Put(t.Context(), key, data, it.Version); err != nil {
		t.Fatal(err)
	}
}
