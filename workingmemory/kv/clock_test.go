package kv

import (
	"context"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// TestTrust315_ClockAheadDeletesNoOnesEntries: two processes share a
// resource's key-value memory; one's clock is a year ahead. Its reads
// hide what its clock says expired, but its writes keep every entry it
// did not change itself, so the other process still finds its live
// entries. A process does remove the entries its own clock set to expire,
// once that clock says they have.
func TestTrust315_ClockAheadDeletesNoOnesEntries(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	env := testEnv(store)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	open := func(clock func() time.Time) *Layer {
		return boundKV(t, LayerConfig{Spec: layer.Spec{Scope: layer.ScopeResource}, Memory: Config{Now: clock}}, env)
	}
	right := open(func() time.Time { return now })
	ahead := open(func() time.Time { return now.AddDate(1, 0, 0) })
	if err := SetWith(right.Memory(), "plan", "draft the launch post", Meta{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := SetWith(right.Memory(), "user-7/plan", "ship on Friday", Meta{ExpiresAt: now.Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := right.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// The process ahead writes a key of its own: it takes the stored
	// entries on the conflict, hides the two it thinks expired, and
	// writes the scope back.
	if err := SetWith(ahead.Memory(), "note", "seen", Meta{}); err != nil {
		t.Fatal(err)
	}
	if err := ahead.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ahead.Memory().Contains("plan") {
		t.Errorf("the process ahead reads an entry its clock says expired")
	}
	if got := ahead.Memory().Purge(); got != 0 {
		t.Errorf("the process ahead purged %d entries it did not set", got)
	}
	if err := SetWith(ahead.Memory(), "note2", "seen", Meta{}); err != nil {
		t.Fatal(err)
	}
	if err := ahead.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	later := open(func() time.Time { return now.Add(time.Minute) })
	for _, k := range []string{"plan", "user-7/plan", "note", "note2"} {
		if !later.Memory().Contains(k) {
			t.Errorf("entry %q is gone for a process whose clock is right", k)
		}
	}
	// The right clock removes its own entry once it expired.
	now = now.Add(2 * time.Hour)
	if err := SetWith(right.Memory(), "other", 1, Meta{}); err != nil {
		t.Fatal(err)
	}
	if err := right.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	it, err := store.Get(ctx, right.key)
	if err != nil {
		t.Fatal(err)
	}
	snap, _, _, err := right.mem.parseSnapshot(it.Value)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Entries["plan"]; ok {
		t.Errorf("the expired entry its own clock set is still stored: %s", it.Value)
	}
	for _, k := range []string{"user-7/plan", "note", "note2", "other"} {
		if _, ok := snap.Entries[k]; !ok {
			t.Errorf("entry %q is not stored: %s", k, it.Value)
		}
	}
}
