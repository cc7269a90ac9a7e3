package episodicmemory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// TestTrust315_EpisodeRecencyDoesNotTrustTheWritersClock: processes whose
// clocks are a year ahead or behind record a resource's episodes. Scored
// assembly sees them in the order the log took them: an episode recorded
// later is never older than one recorded before it, and one stamped in
// the reader's future is no newer than now or than the episodes recorded
// after it.
func TestTrust315_EpisodeRecencyDoesNotTrustTheWritersClock(t *testing.T) {
	const day, year = 24 * time.Hour, 365 * 24 * time.Hour
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var at time.Time
	for _, c := range []struct {
		name             string
		oldSkew, newSkew time.Duration
	}{
		{"writer behind records the newer episode", 0, -year},
		{"writer ahead recorded the older episode", year, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := storage.NewMemoryStore()
			writer := func(skew time.Duration, thread string) *episodicmemory.Layer {
				return bound(t, episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, Now: func() time.Time { return at.Add(skew) }}, store, thread, "site-1")
			}
			at = now.Add(-30 * day)
			w1 := writer(c.oldSkew, "t1")
			storeClosed(t, w1, pageStep(1))
			at = now.Add(-day)
			w2 := writer(c.newSkew, "t2")
			storeClosed(t, w2, pageStep(2))
			r := bound(t, episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, Now: func() time.Time { return now }}, store, "t3", "site-1")
			cands, err := r.Candidates(context.Background(), layer.Query{Text: "cms_createPage page"})
			if err != nil {
				t.Fatal(err)
			}
			var p1, p2 *layer.Candidate
			for i := range cands {
				switch {
				case strings.Contains(cands[i].Text, "page-1"):
					p1 = &cands[i]
				case strings.Contains(cands[i].Text, "page-2"):
					p2 = &cands[i]
				}
			}
			if p1 == nil || p2 == nil {
				t.Fatalf("candidates lack an episode: %+v", cands)
			}
			if p1.Time.After(now) || p2.Time.After(now) {
				t.Errorf("a time in the reader's future: page-1 %v, page-2 %v (now %v)", p1.Time, p2.Time, now)
			}
			if p1.Time.After(p2.Time) {
				t.Errorf("the episode recorded 30 days ago (%v) is newer than the one recorded yesterday (%v)", p1.Time, p2.Time)
			}
		})
	}
}

// storeClosed stores turns and closes the layer, so its episodes are in
// the store.
func storeClosed(t *testing.T, l *episodicmemory.Layer, turns ...layer.Turn) {
	t.Helper()
	store(t, l, turns...)
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
