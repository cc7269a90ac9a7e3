package thread_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/inspect"
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
// are listed. Users "a", "a/b" and "" write threads at once; erasing "a"
// leaves "a/b"'s list as it was.
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
		lists := func(want map[string][]string) {
			t.Helper()
			for r, w := range want {
				got := listAll(t, c, r, thread.ListQuery{Limit: 10}, nil)
				slices.Sort(got)
				if !slices.Equal(got, w) {
					t.Errorf("threads of %q: %v, want %v", r, got, w)
				}
			}
		}
		lists(map[string][]string{"a": {"t1", "t2", "u-a"}, "a/b": {"u-a/b"}})

		// Erasing "a" leaves "a/b" listed; a thread of "a" written again
		// after the erase is a new thread, listed again (its head, with
		// the flag, went with the erase).
		if _, err := (inspect.Inspector{Store: st}).EraseResource(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Get(ctx, storage.ThreadKey("t1", thread.HeadName)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("the head of an erased user's thread: %v, want storage.ErrNotFound", err)
		}
		lists(map[string][]string{"a": nil, "a/b": {"u-a/b"}})
		step(t, rc, "t1", "a", "start over")
		if n := rc.count(thread.IndexKey("a")); n != 1 {
			t.Errorf("a thread written again after its user's erase read the list %d times, want 1", n)
		}
		lists(map[string][]string{"a": {"t1"}, "a/b": {"u-a/b"}})
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
