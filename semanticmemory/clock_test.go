package semanticmemory_test

import (
	"context"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// TestTrust315_RecencyDoesNotTrustTheWritersClock: processes whose clocks
// are a year ahead or behind share a resource's facts. Scored assembly
// must still see the facts in the order the store took them: a fact
// written later is never older than one written before it, a fact
// stamped in the reader's future is no newer than the facts written
// after it nor than the reader's now, so a 30-day-old fact never wins on
// recency over a newer one.
func TestTrust315_RecencyDoesNotTrustTheWritersClock(t *testing.T) {
	ctx := context.Background()
	const day, year = 24 * time.Hour, 365 * 24 * time.Hour
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC) // the reader's clock, and the true time
	var at time.Time                                    // the true time of the write being made
	writer := func(store storage.Store, skew time.Duration) *semanticmemory.Layer {
		return bind(t, semanticmemory.Config{Now: func() time.Time { return at.Add(skew) }}, store, "t")
	}
	reader := func(store storage.Store) map[string]layer.Candidate {
		l := bind(t, semanticmemory.Config{Now: func() time.Time { return now }}, store, "r")
		cands, err := l.Candidates(ctx, layer.Query{Text: "where is the launch party"})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]layer.Candidate{}
		for _, c := range cands {
			out[c.Key] = c
		}
		return out
	}
	score := prompt.Scoring{Now: now}
	for _, c := range []struct {
		name       string
		skew       time.Duration // of the writer of the older fact
		newSkew    time.Duration // of the writer of the newer fact
		oldAt      time.Duration // before now
		newAt      time.Duration
		oldT, newT string
	}{
		{"writer behind writes the newer fact", 0, -year, 30 * day, 1 * day,
			"The launch party is in the Lisbon office.", "The launch party moved to the Porto warehouse."},
		{"writer ahead wrote the older fact", year, 0, 30 * day, 1 * day,
			"The launch party is in the Lisbon office.", "The launch party moved to the Porto warehouse."},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := storage.NewMemoryStore()
			at = now.Add(-c.oldAt)
			old := remember(t, writer(store, c.skew), "fact", c.oldT)
			at = now.Add(-c.newAt)
			nw := remember(t, writer(store, c.newSkew), "fact", c.newT)
			if old.ID == nw.ID {
				t.Fatalf("the facts are one: %+v", nw)
			}
			cands := reader(store)
			o, n := cands[old.ID], cands[nw.ID]
			if o.Key == "" || n.Key == "" {
				t.Fatalf("candidates %v lack %s or %s", cands, old.ID, nw.ID)
			}
			if o.Time.After(now) || n.Time.After(now) {
				t.Errorf("a candidate's time is in the reader's future: old %v, new %v (now %v)", o.Time, n.Time, now)
			}
			// Same similarity and importance: recency alone decides.
			o.Similarity, n.Similarity = 1, 1
			if so, sn := score.Score(o), score.Score(n); so > sn {
				t.Errorf("the %d-day-old fact (time %v, score %.3f) beats the newer one (time %v, score %.3f)",
					int(c.oldAt/day), o.Time, so, n.Time, sn)
			}
		})
	}
}
