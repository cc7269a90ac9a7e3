// Package evict orders a layer's items for eviction by utility density,
// through the store's search index, at a cost that does not grow with
// the number of items.
//
// An item's utility density at time now is
//
//	importance × exp(−λ·(now − touched)) × (1 + uses) / tokens
//
// where touched is when it was last written or recalled, uses how often
// it was recalled and λ = ln 2 / half-life. Its logarithm is the item's
// [Key] minus λ·now, and λ·now is the same for every item: the order of
// the keys is the order of the densities at any time. So a key is
// computed once, when the item is written or its uses change, and never
// again as time passes.
//
// Keys are cut into bands of width [BandWidth] (a factor of √2 in
// density). The index holds one small document per evictable item, with
// its band as a filter field; [Victims] asks for the lowest band first,
// the least recently indexed first within a band. A ledger kept by the
// layer names the lowest band that may hold an item, so finding a victim
// costs one query per band probed, and a band found empty is not probed
// again until an item is written below it.
package evict

import (
	"context"
	"math"
	"strconv"
	"time"

	"github.com/memlayer/memlayer/storage"
)

// BandWidth is the width of a band of keys: ln √2. Items whose densities
// differ by less than a factor √2 may share a band, and leave in the
// order they were indexed.
var BandWidth = math.Ln2 / 2

// MinImportance is the importance a key counts for an item of less, so
// that an item of importance 0 still has a finite key.
const MinImportance = 1e-3

// MaxUses is the most recalls a key counts.
const MaxUses = 1 << 20

// FieldBand is the filter field of an item's band in its document.
const FieldBand = "band"

// None is the lowest band of a ledger that has had no evictable item.
const None = math.MaxInt64

// Policy is how a layer weighs its items.
type Policy struct {
	// HalfLife is the time over which an item not recalled loses half
	// its utility. Zero or less means no decay.
	HalfLife time.Duration
}

// lambda returns λ per second.
func (p Policy) lambda() float64 {
	if p.HalfLife <= 0 {
		return 0
	}
	return math.Ln2 / p.HalfLife.Seconds()
}

// Item is what an item's key is made of.
type Item struct {
	Importance float64
	Uses       int64
	Tokens     int
	Touched    time.Time
}

// Key returns the item's key: ln(importance) + ln(1 + uses) − ln(tokens) +
// λ·touched, touched in seconds since the Unix epoch. Keys order items
// as their densities do, at any time.
func (p Policy) Key(it Item) float64 {
	imp := max(it.Importance, MinImportance)
	uses := min(max(it.Uses, 0), MaxUses)
	tok := max(it.Tokens, 1)
	return math.Log(imp) + math.Log1p(float64(uses)) - math.Log(float64(tok)) + p.lambda()*seconds(it.Touched)
}

// Density returns the item's utility density at now.
func (p Policy) Density(it Item, now time.Time) float64 {
	return math.Exp(p.Key(it) - p.lambda()*seconds(now))
}

// Band returns the band of key.
func Band(key float64) int64 { return int64(math.Floor(key / BandWidth)) }

// Top returns the highest band an item can have at now: importance 1,
// MaxUses recalls, one token, touched now. Victims probes no band above
// it.
func (p Policy) Top(now time.Time) int64 {
	return Band(p.Key(Item{Importance: 1, Uses: MaxUses, Tokens: 1, Touched: now}))
}

func seconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// Victims returns up to n documents of collection col, from the lowest
// band up, the least recently indexed first within a band, leaving out
// the documents skip rejects. It starts at band *low, probes no band
// above top, and moves *low past the bands it found empty. Its cost is
// one query per band probed.
func Victims(ctx context.Context, ix storage.Searcher, col string, low *int64, top int64, n int, skip func(storage.Hit) bool) ([]storage.Hit, error) {
	var out []storage.Hit
	for b := *low; len(out) < n && b <= top; b++ {
		hits, err := ix.Search(ctx, col, storage.Query{Filter: map[string]string{FieldBand: strconv.FormatInt(b, 10)}, K: n - len(out) + 8, Oldest: true})
		if err != nil {
			return nil, err
		}
		if len(hits) == 0 && b == *low {
			*low = b + 1
		}
		out = appendKept(out, hits, n, skip)
	}
	return out, nil
}

// appendKept appends the hits skip keeps to out, up to n in all.
func appendKept(out, hits []storage.Hit, n int, skip func(storage.Hit) bool) []storage.Hit {
	for _, h := range hits {
		if len(out) < n && !skip(h) {
			out = append(out, h)
		}
	}
	return out
}
