package semanticmemory_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// manualClock is a Now the test moves.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func newManualClock() *manualClock {
	return &manualClock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// liveSummary returns the live facts' IDs by text, their count and
// their tokens, as the audit reads them.
func liveSummary(t testing.TB, l *semanticmemory.Layer) (byText map[string]string, count, tokens int64) {
	t.Helper()
	facts, err := l.Facts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	byText = map[string]string{}
	for _, f := range facts {
		byText[f.Text] = f.ID
		tokens += int64(max(layer.EstimateTokens(f.Text), 1))
	}
	return byText, int64(len(facts)), tokens
}

// checkLedger fails t unless the live facts are within c and the
// layer's ledger counts them exactly.
func checkLedger(t testing.TB, l *semanticmemory.Layer, c semanticmemory.Capacity) {
	t.Helper()
	_, n, tok := liveSummary(t, l)
	if n > int64(c.MaxFacts) || tok > int64(c.MaxTokens) {
		t.Fatalf("%d facts of %d tokens, capacity %d facts and %d tokens", n, tok, c.MaxFacts, c.MaxTokens)
	}
	m := l.Metrics()
	if m["facts"] != n || m["tokens"] != tok {
		t.Fatalf("ledger says %d facts of %d tokens, the log holds %d of %d", m["facts"], m["tokens"], n, tok)
	}
}

func rememberImp(t testing.TB, l *semanticmemory.Layer, text string, imp float64) semanticmemory.Fact {
	t.Helper()
	f, err := l.Remember(context.Background(), semanticmemory.Memo{Text: text, Kind: "fact", Importance: imp})
	if err != nil {
		t.Fatalf("Remember(%q): %v", text, err)
	}
	return f
}

// evicted reports whether fact id's last version is an eviction.
func evicted(t testing.TB, l *semanticmemory.Layer, id string) bool {
	t.Helper()
	vs, err := l.Versions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return len(vs) > 0 && vs[len(vs)-1].Evicted
}

// FuzzCapacity writes, supersedes, forgets and recalls facts of random
// sizes and importances, with the clock moving, under a small capacity:
// after every write the live facts are within it, the ledger counts
// them exactly, and a refused write (ErrCapacity) changed nothing.
func FuzzCapacity(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Add([]byte{200, 201, 202, 203, 204, 205, 206, 207, 208, 0, 0, 0, 0})
	f.Add([]byte("the quick brown fox jumps over the lazy dog again and again"))
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255})
	f.Add([]byte{7, 250, 15, 250, 23, 250, 31, 250, 39, 250, 47, 250, 55, 250, 63, 250, 71, 250, 79, 250, 87, 250, 95, 250, 103, 250, 111})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 96 {
			ops = ops[:96]
		}
		ctx := context.Background()
		clk := newManualClock()
		c := semanticmemory.Capacity{MaxFacts: 6, MaxTokens: 80, HalfLife: 24 * time.Hour}
		cfg := semanticmemory.Config{Now: clk.Now, Capacity: c}
		l := bindUser(t, cfg, storage.NewMemoryStore(), "u", "t")
		words := strings.Fields("tea coffee lisbon paris blue green page hero footer deploy build review")
		for i, op := range ops {
			switch op % 8 {
			case 0: // forget the first live fact
				byText, _, _ := liveSummary(t, l)
				if ids := slices.Sorted(maps.Values(byText)); len(ids) > 0 {
					if err := l.Forget(ctx, ids[0]); err != nil {
						t.Fatal(err)
					}
				}
			case 1: // recall, and end the run
				if _, err := l.Recall(ctx, layer.Query{Text: words[int(op)%len(words)], Budget: layer.Unbounded}); err != nil {
					t.Fatal(err)
				}
				if err := l.Close(ctx); err != nil {
					t.Fatal(err)
				}
			case 2:
				clk.Add(time.Duration(op) * time.Hour)
			default: // remember a fact of 1 to 12 words
				n := 1 + int(op)%12
				var ws []string
				for j := range n {
					ws = append(ws, words[(int(op)+j*i)%len(words)])
				}
				text := fmt.Sprintf("fact %d %s", i%7, strings.Join(ws, " "))
				imp := float64(op%11) / 10
				before, bn, btok := liveSummary(t, l)
				_, err := l.Remember(ctx, semanticmemory.Memo{Text: text, Importance: imp})
				if errors.Is(err, semanticmemory.ErrCapacity) {
					after, an, atok := liveSummary(t, l)
					if an != bn || atok != btok || len(after) != len(before) {
						t.Fatalf("a refused write changed the facts: %v -> %v", before, after)
					}
				} else if err != nil {
					t.Fatal(err)
				}
			}
			checkLedger(t, l, c)
		}
	})
}

// TestEvictionGuard: a fact of importance at or above the guard is never
// evicted, whatever its age or size; when only guarded facts are left, a
// write is refused with ErrCapacity and changes nothing.
func TestEvictionGuard(t *testing.T) {
	ctx := context.Background()
	clk := newManualClock()
	c := semanticmemory.Capacity{MaxFacts: 3, MaxTokens: 1000, GuardImportance: 0.9}
	l := bindUser(t, semanticmemory.Config{Now: clk.Now, Capacity: c}, storage.NewMemoryStore(), "u", "t")
	g1 := rememberImp(t, l, "The user is allergic to peanuts, a long and wordy statement of a critical fact", 0.95)
	clk.Add(90 * 24 * time.Hour)
	g2 := rememberImp(t, l, "The launch date is fixed at March 3", 0.9)
	for i := range 5 {
		clk.Add(time.Hour)
		rememberImp(t, l, fmt.Sprintf("Minor detail %d: %s", i, []string{"apples", "bricks", "clouds", "drums", "eggs"}[i]), 0.5)
		checkLedger(t, l, c)
	}
	for _, id := range []string{g1.ID, g2.ID} {
		if evicted(t, l, id) {
			t.Errorf("guarded fact %s was evicted", id)
		}
	}
	// Fill the third place with a guarded fact: nothing is left to evict.
	rememberImp(t, l, "The account number is 42", 1)
	byText, _, _ := liveSummary(t, l)
	_, err := l.Remember(ctx, semanticmemory.Memo{Text: "One more minor detail", Importance: 0.1})
	if !errors.Is(err, semanticmemory.ErrCapacity) {
		t.Fatalf("a write past a capacity of guarded facts = %v, want ErrCapacity", err)
	}
	after, _, _ := liveSummary(t, l)
	if fmt.Sprint(after) != fmt.Sprint(byText) {
		t.Fatalf("the refused write changed the facts: %v -> %v", byText, after)
	}
	checkLedger(t, l, c)
}

// TestEvictionOrder: with equal importance and size, the fact neither
// written nor recalled for longest goes first (decay); a fact recalled
// outlives an older one that was not and a newer one that was not
// (use, one recall doubling it); and per token, a long fact goes before
// a short one of the same importance and age.
func TestEvictionOrder(t *testing.T) {
	ctx := context.Background()
	day := 24 * time.Hour
	c := semanticmemory.Capacity{MaxFacts: 3, MaxTokens: 10_000, HalfLife: day}
	t.Run("decay", func(t *testing.T) {
		clk := newManualClock()
		l := bindUser(t, semanticmemory.Config{Now: clk.Now, Capacity: c}, storage.NewMemoryStore(), "u", "t")
		var ids []string
		for _, w := range []string{"alpha", "bravo", "charlie", "delta", "echo"} {
			ids = append(ids, rememberImp(t, l, "Project codename "+w, 0.5).ID)
			clk.Add(day)
		}
		// Capacity 3: the two oldest left, oldest first.
		for i, id := range ids {
			if got, want := evicted(t, l, id), i < 2; got != want {
				t.Errorf("fact %d (%s) evicted = %v, want %v", i, id, got, want)
			}
		}
		checkLedger(t, l, c)
	})
	t.Run("use", func(t *testing.T) {
		clk := newManualClock()
		store := storage.NewMemoryStore()
		l := bindUser(t, semanticmemory.Config{Now: clk.Now, Capacity: c}, store, "u", "t")
		old := rememberImp(t, l, "The user's dog is called Rex", 0.5)
		clk.Add(time.Hour)
		mid := rememberImp(t, l, "The user's cat is called Tom", 0.5) // as many tokens as each other
		clk.Add(time.Hour)
		// A run recalls the oldest fact (twice: it counts once), then ends.
		for range 2 {
			if out := recall(t, l, "dog Rex"); !strings.Contains(out, old.ID) {
				t.Fatalf("recall did not show %s: %q", old.ID, out)
			}
		}
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Hour)
		newer := rememberImp(t, l, "The user's fox is called Max", 0.5)
		clk.Add(time.Hour)
		// A new run; the fourth fact evicts one: the least used for its
		// age, the cat, not the recalled dog (older) nor the fish (newer).
		l2 := bindUser(t, semanticmemory.Config{Now: clk.Now, Capacity: c}, store, "u", "t2")
		rememberImp(t, l2, "The user's owl is called Ned", 0.5)
		for _, x := range []struct {
			id   string
			want bool
		}{{old.ID, false}, {mid.ID, true}, {newer.ID, false}} {
			if got := evicted(t, l2, x.id); got != x.want {
				t.Errorf("fact %s evicted = %v, want %v", x.id, got, x.want)
			}
		}
	})
	t.Run("importance and size", func(t *testing.T) {
		clk := newManualClock()
		l := bindUser(t, semanticmemory.Config{Now: clk.Now, Capacity: c}, storage.NewMemoryStore(), "u", "t")
		low := rememberImp(t, l, "The office plant is green", 0.05)
		long := rememberImp(t, l, "The office has a long corridor with twelve doors, four windows, two kitchens, a library and a gym", 0.5)
		short := rememberImp(t, l, "The office is in Lisbon", 0.5)
		rememberImp(t, l, "The office opens at nine", 0.5) // evicts the least important
		if !evicted(t, l, low.ID) || evicted(t, l, long.ID) || evicted(t, l, short.ID) {
			t.Fatalf("evicted low/long/short = %v/%v/%v, want true/false/false", evicted(t, l, low.ID), evicted(t, l, long.ID), evicted(t, l, short.ID))
		}
		rememberImp(t, l, "The office closes at six", 0.5) // evicts the one of least density per token
		if !evicted(t, l, long.ID) || evicted(t, l, short.ID) {
			t.Fatalf("evicted long/short = %v/%v, want true/false", evicted(t, l, long.ID), evicted(t, l, short.ID))
		}
	})
}

// TestEvictedStayReadable: an evicted fact is no longer recalled nor
// searched, and its versions, the eviction last, stay in the audit.
func TestEvictedStayReadable(t *testing.T) {
	ctx := context.Background()
	clk := newManualClock()
	c := semanticmemory.Capacity{MaxFacts: 1}
	l := bindUser(t, semanticmemory.Config{Now: clk.Now, Capacity: c}, storage.NewMemoryStore(), "u", "t")
	first := rememberImp(t, l, "The user prefers tea", 0.3)
	clk.Add(time.Hour)
	rememberImp(t, l, "The user prefers trains", 0.3)
	if out := recall(t, l, "tea"); strings.Contains(out, first.ID) {
		t.Fatalf("evicted fact recalled: %q", out)
	}
	hits, err := l.Search(ctx, "tea", 0)
	if err != nil || len(hits) != 0 && hits[0].ID == first.ID {
		t.Fatalf("Search found the evicted fact: %v %v", hits, err)
	}
	vs, err := l.Versions(ctx, first.ID)
	if err != nil || len(vs) != 2 || !vs[1].Evicted || vs[0].Text != "The user prefers tea" || vs[1].Text != vs[0].Text {
		t.Fatalf("Versions = %+v, %v; want the fact then its eviction", vs, err)
	}
	snap, err := l.Snapshot(ctx)
	if err != nil || !strings.Contains(string(snap), `"evicted":true`) {
		t.Fatalf("Snapshot lacks the eviction: %s %v", snap, err)
	}
}

// TestEvictionConcurrentWriters: processes writing one user's facts at
// once never take them past the capacity: each record evicts what it
// must against the ledger the head holds, under compare-and-swap.
func TestEvictionConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	store := storage.NewMemoryStore()
	c := semanticmemory.Capacity{MaxFacts: 10, MaxTokens: 10_000}
	const writers, each = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		l := bindUser(t, semanticmemory.Config{Capacity: c, MaxRetries: 64}, store, "u", fmt.Sprint("t", w))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := l.Remember(ctx, semanticmemory.Memo{Text: fmt.Sprintf("item w%dx%d stored", w, i), Importance: 0.5})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	l := bindUser(t, semanticmemory.Config{Capacity: c}, store, "u", "reader")
	if _, err := l.Remember(ctx, semanticmemory.Memo{Text: "a last fact to read the head", Importance: 0.5}); err != nil {
		t.Fatal(err)
	}
	_, n, _ := liveSummary(t, l)
	if n != 10 {
		t.Fatalf("%d live facts after %d writes, want the capacity, 10", n, writers*each+1)
	}
	checkLedger(t, l, c)
}

// TestEvictionAcrossUsers: users whose IDs collide, nest or are empty
// have a capacity each; filling one evicts nothing of another; erasing
// one leaves no record and no index document of it, and the others'
// facts whole.
func TestEvictionAcrossUsers(t *testing.T) {
	store := storage.NewMemoryStore()
	c := semanticmemory.Capacity{MaxFacts: 2, MaxTokens: 10_000}
	users := []string{"a", "a/b", "A", ""}
	layers := map[string]*semanticmemory.Layer{}
	for _, u := range users {
		layers[u] = bindUser(t, semanticmemory.Config{Capacity: c}, store, u, "thread-"+u)
		rememberImp(t, layers[u], teaOf(u), 0.5)
	}
	for i := range 5 {
		rememberImp(t, layers["a"], fmt.Sprintf("User a detail %d", i), 0.5)
	}
	for _, u := range users[1:] {
		if out := recall(t, layers[u], "tea"); !strings.Contains(out, teaOf(u)) {
			t.Errorf("user %q lost its fact to user a's evictions: %q", u, out)
		}
	}
	checkLedger(t, layers["a"], c)
	// Erase user a: nothing of it is left, the others are whole.
	prefix := storage.LayerPrefix(semanticmemory.DefaultStorageID, storage.ResourceScope("a"))
	storagetest.Erase(t, store, prefix)
	for _, u := range users[1:] {
		if out := recall(t, layers[u], "tea"); !strings.Contains(out, teaOf(u)) {
			t.Errorf("erasing user a took user %q's fact: %q", u, out)
		}
		checkLedger(t, layers[u], c)
	}
	fresh := bindUser(t, semanticmemory.Config{Capacity: c}, store, "a", "new")
	if out := recall(t, fresh, "tea detail"); out != "" {
		t.Errorf("user a recalls after erase: %q", out)
	}
	if m := fresh.Metrics(); m["facts"] != 0 {
		t.Errorf("user a's ledger after erase: %v", m)
	}
}

// teaOf is user u's fact in TestEvictionAcrossUsers, as stored.
func teaOf(u string) string { return strings.Join(strings.Fields("The user "+u+" likes tea"), " ") }

// TestFactOverTokenCapacity: a fact larger than the whole token
// capacity is refused at once, and evicts nothing.
func TestFactOverTokenCapacity(t *testing.T) {
	c := semanticmemory.Capacity{MaxFacts: 10, MaxTokens: 12}
	l := bindUser(t, semanticmemory.Config{Capacity: c}, storage.NewMemoryStore(), "u", "t")
	small := rememberImp(t, l, "Short fact", 0.1)
	_, err := l.Remember(context.Background(), semanticmemory.Memo{Text: strings.Repeat("word ", 40), Importance: 0.5})
	if !errors.Is(err, semanticmemory.ErrCapacity) {
		t.Fatalf("Remember of a fact over the token capacity = %v, want ErrCapacity", err)
	}
	if evicted(t, l, small.ID) {
		t.Fatal("a refused write evicted a fact")
	}
	checkLedger(t, l, c)
}

// TestCapacityConfig: a half-life too short to band or a NaN guard is a
// clear error.
func TestCapacityConfig(t *testing.T) {
	for _, c := range []semanticmemory.Capacity{{HalfLife: time.Minute}, {GuardImportance: -1}} {
		if _, err := semanticmemory.New(semanticmemory.Config{Capacity: c}); !errors.Is(err, semanticmemory.ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", c, err)
		}
	}
}

// TestRestorePastCapacity: a snapshot of more facts than the capacity is
// restored whole, and the next write evicts down to the capacity.
func TestRestorePastCapacity(t *testing.T) {
	ctx := context.Background()
	clk := newManualClock()
	big := bindUser(t, semanticmemory.Config{Now: clk.Now}, storage.NewMemoryStore(), "u", "t")
	for _, w := range []string{"amber", "basalt", "cobalt", "dune", "ember"} {
		rememberImp(t, big, "The palette includes "+w, 0.5)
		clk.Add(time.Hour)
	}
	snap, err := big.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := semanticmemory.Capacity{MaxFacts: 3, MaxTokens: 10_000}
	l := bindUser(t, semanticmemory.Config{Now: clk.Now, Capacity: c}, storage.NewMemoryStore(), "u", "t")
	if err := l.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if _, n, _ := liveSummary(t, l); n != 5 {
		t.Fatalf("%d facts restored, want 5", n)
	}
	rememberImp(t, l, "The palette excludes neon", 0.5)
	checkLedger(t, l, c)
	if _, n, _ := liveSummary(t, l); n != 3 {
		t.Fatalf("%d facts after the next write, want 3", n)
	}
}
