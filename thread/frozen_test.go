package thread_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/thread/threadtest"
)

// putFrozen stores the frozen thread of a version as thread threadID and
// returns its head's version as ReadInfo reads it.
func putFrozen(t *testing.T, store storage.Store, threadID string, version int) int {
	t.Helper()
	data := threadtest.Frozen(t, version)
	threadtest.Put(t, store, threadID, data)
	head, err := store.Get(t.Context(), storage.ThreadKey(threadID, thread.HeadName))
	if err != nil {
		t.Fatal(err)
	}
	info, err := thread.ReadInfo(head.Value)
	if err != nil {
		t.Fatalf("v%d: ReadInfo: %v", version, err)
	}
	return info.Version
}

// TestFrozenVersionsLoad: a frozen thread of every version loads, in the
// current version, as the same thread: its head, its layers and the
// messages after the compacted ones (versions 1 to 3 stored those
// compacted; version 4 stores them as written). Load and LoadAll agree.
func TestFrozenVersionsLoad(t *testing.T) {
	var first *thread.Checkpoint
	for version := 1; version <= thread.Version; version++ {
		store := storage.NewMemoryStore()
		if got := putFrozen(t, store, "t", version); got != version {
			t.Errorf("v%d: ReadInfo says version %d", version, got)
		}
		c, err := thread.LoadAll(t.Context(), store, "t")
		if err != nil {
			t.Fatalf("v%d: %v", version, err)
		}
		l, err := thread.Load(t.Context(), store, "t")
		if err != nil || l == nil {
			t.Fatalf("v%d: Load: %v", version, err)
		}
		if l.Legacy != (version < thread.Version) {
			t.Errorf("v%d: Legacy = %v", version, l.Legacy)
		}
		if c.Version != thread.Version || len(c.Messages) == 0 || c.First+len(c.Messages) != c.Total || c.Compacted > c.Total {
			t.Errorf("v%d loads as version %d, messages %d to %d of %d, %d compacted", version, c.Version, c.First, c.First+len(c.Messages), c.Total, c.Compacted)
		}
		if first == nil {
			first = c
			continue
		}
		if c.Total != first.Total || c.Steps != first.Steps || c.Usage != first.Usage || c.ThreadID != first.ThreadID ||
			c.Agent != first.Agent || !reflect.DeepEqual(c.Layers, first.Layers) {
			t.Errorf("v%d loads as\n%+v\nv1 as\n%+v", version, c, first)
		}
		from := max(c.Compacted, first.Compacted)
		if !reflect.DeepEqual(c.Messages[from-c.First:], first.Messages[from-first.First:]) {
			t.Errorf("v%d: the messages after the compacted ones differ from v1's:\n%+v\n%+v", version, c.Messages[from-c.First:], first.Messages[from-first.First:])
		}
	}
}

// TestLoadAbsent: a thread never stored is (nil, nil) for Load and
// storage.ErrNotFound, as ErrCheckpoint, for LoadAll.
func TestLoadAbsent(t *testing.T) {
	store := storage.NewMemoryStore()
	if l, err := thread.Load(t.Context(), store, "none"); l != nil || err != nil {
		t.Errorf("Load = %v, %v", l, err)
	}
	if _, err := thread.LoadAll(t.Context(), store, "none"); !errors.Is(err, storage.ErrNotFound) || !errors.Is(err, thread.ErrCheckpoint) {
		t.Errorf("LoadAll = %v, want storage.ErrNotFound and ErrCheckpoint", err)
	}
}
