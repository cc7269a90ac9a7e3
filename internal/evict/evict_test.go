package evict

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// TestKeyOrdersDensity: for random items, the order of their keys is
// the order of their densities at any later time, and a density halves
// over a half-life.
func TestKeyOrdersDensity(t *testing.T) {
	p := Policy{HalfLife: 24 * time.Hour}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	items := make([]Item, 200)
	for i := range items {
		items[i] = Item{Importance: rng.Float64(), Uses: rng.Int64N(10), Tokens: 1 + rng.IntN(500),
			Touched: t0.Add(time.Duration(rng.IntN(90*24)) * time.Hour)}
	}
	byKey := slices.Clone(items)
	slices.SortFunc(byKey, func(a, b Item) int { return cmpFloat(p.Key(a), p.Key(b)) })
	for _, now := range []time.Time{t0.Add(90 * 24 * time.Hour), t0.Add(400 * 24 * time.Hour)} {
		for i := 1; i < len(byKey); i++ {
			if p.Density(byKey[i-1], now) > p.Density(byKey[i], now)*(1+1e-9) {
				t.Fatalf("at %v, key order and density order differ at %d", now, i)
			}
		}
	}
	it := items[0]
	d0, d1 := p.Density(it, it.Touched), p.Density(it, it.Touched.Add(24*time.Hour))
	if r := d1 / d0; r < 0.4999 || r > 0.5001 {
		t.Errorf("density after one half-life = %v of the first, want 0.5", r)
	}
	if k := (Policy{}).Key(Item{Importance: 0, Tokens: 0}); math.IsNaN(k) || math.IsInf(k, 0) {
		t.Errorf("key of an item of importance 0 and no tokens = %v, want finite", k)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestVictims: the lowest band comes first, the least recently indexed
// first within it; skipped documents are left; a band found empty moves
// the ledger's low past it; nothing above top is probed.
func TestVictims(t *testing.T) {
	ctx := context.Background()
	ix := &storage.MemoryIndex{}
	add := func(id string, band int64) {
		if err := ix.Index(ctx, "c", storage.Document{ID: id, Fields: map[string]string{FieldBand: strconv.FormatInt(band, 10)}}); err != nil {
			t.Fatal(err)
		}
	}
	add("b5-old", 5)
	add("b7", 7)
	add("b5-new", 5)
	add("b9", 9)
	ids := func(hs []storage.Hit) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.ID)
		}
		return out
	}
	none := func(storage.Hit) bool { return false }
	low := int64(2)
	hs, err := Victims(ctx, ix, "c", &low, 100, 3, none)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hs); !slices.Equal(got, []string{"b5-old", "b5-new", "b7"}) {
		t.Errorf("victims = %v", got)
	}
	if low != 5 {
		t.Errorf("low = %d, want 5 (bands 2-4 empty)", low)
	}
	hs, _ = Victims(ctx, ix, "c", &low, 100, 2, func(h storage.Hit) bool { return h.ID == "b5-old" })
	if got := ids(hs); !slices.Equal(got, []string{"b5-new", "b7"}) {
		t.Errorf("victims skipping b5-old = %v", got)
	}
	low = 6
	hs, _ = Victims(ctx, ix, "c", &low, 8, 5, none)
	if got := ids(hs); !slices.Equal(got, []string{"b7"}) {
		t.Errorf("victims up to band 8 = %v, want b7 only", got)
	}
	low = None
	if hs, _ = Victims(ctx, ix, "c", &low, 100, 5, none); len(hs) != 0 {
		t.Errorf("victims from None = %v", ids(hs))
	}
}
