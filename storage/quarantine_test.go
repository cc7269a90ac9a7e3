package storage_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
)

func TestQuarantine(t *testing.T) {
	ctx := t.Context()
	s := storage.NewMemoryStore()
	key := storage.LayerKey("kv-memory", "thread/1", "state")
	_, err := s.Put(ctx, key, []byte("garbage"), storage.NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	it, _ := s.Get(ctx, key)
	qkey, err := storage.Quarantine(ctx, s, it, "kv-memory", "thread/1", time.Unix(0, 42))
	if err != nil {
		t.Fatal(err)
	}
	if want := storage.LayerKey("kv-memory", "thread/1", storage.QuarantinePrefix+"42"); qkey != want {
		t.Errorf("quarantine key %q, want %q", qkey, want)
	}
	if q, err := s.Get(ctx, qkey); err != nil || !bytes.Equal(q.Value, []byte("garbage")) {
		t.Errorf("quarantined copy: %q, %v", q.Value, err)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the state key is still there: %v", err)
	}

	// A writer that replaced the value meanwhile wins: the new value stays.
	if _, err := s.Put(ctx, key, []byte("bad again"), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	stale, _ := s.Get(ctx, key)
	if _, err := s.Put(ctx, key, []byte(`{"good":true}`), stale.Version); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.Quarantine(ctx, s, stale, "kv-memory", "thread/1", time.Unix(0, 43)); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("quarantine of a replaced value: %v, want ErrConflict", err)
	}
	if cur, _ := s.Get(ctx, key); string(cur.Value) != `{"good":true}` {
		t.Errorf("the newer value was lost: %q", cur.Value)
	}
}
