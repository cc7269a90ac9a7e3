package agentloop

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// vanishingStore answers the next misses reads of a segment with
// storage.ErrNotFound, as a store does once a newer run of the thread
// replaced the head a load read and deleted the records it named, and
// counts the reads of heads.
type vanishingStore struct {
	storage.Store
	misses, heads int
}

func (s *vanishingStore) Get(ctx context.Context, key string) (storage.Item, error) {
	if strings.HasSuffix(key, "/"+storage.Escape(thread.HeadName)) {
		s.heads++
	}
	if strings.Contains(key, "/"+storage.Escape("seg.")) && s.misses > 0 {
		s.misses--
		return storage.Item{}, storage.ErrNotFound
	}
	return s.Store.Get(ctx, key)
}

// TestLoadRereadsTheHead: a load that finds a record the head names gone
// reads the head again, up to maxLoadAttempts times; then it fails with
// an error that is ErrCheckpoint and storage.ErrNotFound.
func TestLoadRereadsTheHead(t *testing.T) {
	ctx := t.Context()
	store := &vanishingStore{Store: storage.NewMemoryStore()}
	a, err := New(Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("hi"))), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, RunInput{ThreadID: "t", Input: "hello"}); err != nil {
		t.Fatal(err)
	}
	for misses := range maxLoadAttempts + 1 {
		store.misses, store.heads = misses, 0
		l, err := a.load(ctx, "t")
		if misses < maxLoadAttempts {
			if err != nil || l == nil || len(l.msgs) != 2 || store.heads != misses+1 {
				t.Errorf("%d misses: %v, %d head reads", misses, err, store.heads)
			}
			continue
		}
		if !errors.Is(err, ErrCheckpoint) || !errors.Is(err, storage.ErrNotFound) || store.heads != maxLoadAttempts {
			t.Errorf("%d misses: %v, %d head reads; want ErrCheckpoint and storage.ErrNotFound after %d", misses, err, store.heads, maxLoadAttempts)
		}
	}
}
