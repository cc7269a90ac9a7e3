package entitymemory

import (
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// TestTrust315_EntitySeenWithClockAheadAgesOut: an entity recorded while
// the process's clock was a year ahead is stamped a year in the future.
// Once the clock is right again it counts as seen when the clock first
// reads before its stamp, and ages out a TTL later, instead of a year
// later. Another process's entity stamped in the future counts as seen
// no later than the entities recorded after it (the logical clock orders
// them).
func TestTrust315_EntitySeenWithClockAheadAgesOut(t *testing.T) {
	t.Run("own clock set back", func(t *testing.T) {
		c := newClock()
		real := c.t
		c.t = real.AddDate(1, 0, 0)
		l := initLayer(t, mustNew(t, Config{TTL: time.Hour, Now: c.Now}), env(storage.NewMemoryStore(), "t"))
		store(t, l, result("get_page", ``, `{"id":"p1","title":"Seen ahead"}`))
		c.t = real.Add(time.Minute) // the clock is set right
		if got := ids(l.Entities()); len(got) != 1 {
			t.Fatalf("tracked %v, want p1", got)
		}
		c.Advance(61 * time.Minute)
		if got := ids(l.Entities()); len(got) != 0 {
			t.Errorf("a TTL (1h) after the clock was set right, still tracked: %v", got)
		}
	})
	t.Run("another process ahead", testAnotherProcessAhead)
}

func testAnotherProcessAhead(t *testing.T) {
	st := storage.NewMemoryStore()
	now := newClock()
	ahead := &clock{t: now.t.AddDate(1, 0, 0)}
	w, b := sharedPair(t, st, Config{TTL: time.Hour}, ahead.Now, now.Now)
	store(t, w, result("get_page", ``, `{"id":"p1","title":"Seen ahead"}`))
	now.Advance(time.Minute)
	store(t, b, result("get_page", ``, `{"id":"p2","title":"Seen after it"}`))
	load := func() []string {
		r := initLayer(t, mustNew(t, Config{Spec: layer.Spec{Scope: layer.ScopeResource}, TTL: time.Hour, Now: now.Now}), layer.Env{ThreadID: "t3", ResourceID: "site-1", Store: st})
		for _, e := range r.Entities() {
			if e.SeenAt.After(now.t) {
				t.Errorf("%s is seen at %v, after now (%v)", e.ID, e.SeenAt, now.t)
			}
		}
		return ids(r.Entities())
	}
	now.Advance(30 * time.Minute)
	if got := load(); len(got) != 2 {
		t.Errorf("within the TTL, tracked %v, want p2 and p1", got)
	}
	now.Advance(time.Hour)
	if got := load(); len(got) != 0 {
		t.Errorf("past the TTL of both, still tracked %v (p1 was seen before p2)", got)
	}
}
