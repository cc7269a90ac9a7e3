package episodicmemory_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/storagetest"
)

// clock is a test clock that moves when told, safe for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.set(fixed())
	return c
}

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// indexedLines returns the digest lines the log's index holds for
// recall: all of them, through a blank Recall of a fresh run.
func indexedLines(t testing.TB, st storage.Store, cfg episodicmemory.Config, thread, resource string) []string {
	t.Helper()
	cfg.MaxRecall = 1000
	var out []string
	for _, line := range strings.Split(recall(t, bound(t, cfg, st, thread, resource), ""), "\n") {
		if strings.HasPrefix(line, "[") {
			out = append(out, line)
		}
	}
	return out
}

// refOf returns the reference a digest line starts with.
func refOf(line string) string {
	ref, _, _ := strings.Cut(strings.TrimPrefix(line, "["), "]")
	return ref
}

// checkCapacity checks that the log's index is within cfg's capacity
// and that the head's ledger counts exactly what it holds; it returns
// the indexed lines.
func checkCapacity(t testing.TB, st storage.Store, cfg episodicmemory.Config, thread, resource string) []string {
	t.Helper()
	lines := indexedLines(t, st, cfg, thread, resource)
	tok := 0
	for _, line := range lines {
		tok += max(layer.EstimateTokens(line), 1)
	}
	c := cfg.Capacity
	c.MaxEpisodes = cmp.Or(c.MaxEpisodes, episodicmemory.DefaultMaxEpisodes)
	c.MaxTokens = cmp.Or(c.MaxTokens, episodicmemory.DefaultMaxTokens)
	if len(lines) > c.MaxEpisodes || tok > c.MaxTokens {
		t.Fatalf("the index holds %d episodes of %d tokens, capacity %d of %d", len(lines), tok, c.MaxEpisodes, c.MaxTokens)
	}
	n, ntok, ok := bound(t, cfg, st, thread, resource).CapacityUsed()
	if !ok || n != int64(len(lines)) || ntok != int64(tok) {
		t.Fatalf("the ledger counts %d episodes of %d tokens (%v); the index holds %d of %d", n, ntok, ok, len(lines), tok)
	}
	return lines
}

// failStep is a step whose one tool call failed.
func failStep(n int) layer.Turn {
	return layer.Turn{Step: n, Query: "q", Results: []layer.ToolResult{{ToolCall: layer.ToolCall{ID: fmt.Sprintf("call-%d", n), Name: "cms_publish",
		Arguments: fmt.Sprintf(`{"id":"page-%d"}`, n)}, Content: "permission denied", IsError: true}}}
}

func TestCapacity_InvalidConfig(t *testing.T) {
	for _, c := range []episodicmemory.Capacity{{HalfLife: time.Second}, {GuardImportance: -1}, {GuardImportance: math.NaN()}, {Reservoir: math.Inf(1)}} {
		if _, err := episodicmemory.New(episodicmemory.Config{Capacity: c}); !errors.Is(err, episodicmemory.ErrInvalidConfig) {
			t.Errorf("Capacity %+v: New = %v, want ErrInvalidConfig", c, err)
		}
	}
}

// FuzzCapacity: whatever is written, after every write the index holds
// no more episodes and tokens than the capacity, the ledger counts what
// it holds, a guarded note once indexed stays, and every episode is
// still read by its reference.
func FuzzCapacity(f *testing.F) {
	f.Add([]byte{3, 40, 0, 0, 1, 2, 3, 0, 0, 1, 2, 2, 2, 3, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{7, 200, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 0, 1, 2})
	f.Add([]byte{1, 3, 1, 255, 254, 253, 0, 4, 8, 12, 16})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) < 3 || len(ops) > 40 {
			return
		}
		clk := newClock()
		cfg := episodicmemory.Config{Now: clk.now, Capacity: episodicmemory.Capacity{
			MaxEpisodes: 1 + int(ops[0]%8), MaxTokens: 20 + 2*int(ops[1]), Reservoir: float64(ops[2]%3) - 1, HalfLife: time.Hour}}
		st := storage.NewMemoryStore()
		ctx := context.Background()
		l := bound(t, cfg, st, "t", "")
		var calls, guarded []string
		for i, op := range ops[3:] {
			clk.add(time.Duration(op>>2) * time.Minute)
			switch op % 4 {
			case 0:
				store(t, l, toolStep(i, fmt.Sprintf("call-%d", i), "cms_get", fmt.Sprintf(`{"id":"page-%d"}`, i), strings.Repeat("word ", int(op))))
				calls = append(calls, fmt.Sprintf("call-%d", i))
			case 1:
				store(t, l, failStep(i))
				calls = append(calls, fmt.Sprintf("call-%d", i))
			case 2:
				store(t, l, turnStep(i, "publish the page", "done"))
			case 3:
				if err := l.Note(ctx, i, "outcome", fmt.Sprintf("decision %d", i)); err != nil {
					t.Fatal(err)
				}
			}
			if i%5 == 4 { // a new run now and then
				if err := l.Close(ctx); err != nil {
					t.Fatal(err)
				}
				l = bound(t, cfg, st, "t", "")
			}
			lines := checkCapacity(t, st, cfg, "t", "")
			refs := map[string]bool{}
			for _, line := range lines {
				refs[refOf(line)] = true
			}
			for _, g := range guarded {
				if !refs[g] {
					t.Fatalf("op %d: the guarded note %s was evicted; index %v", i, g, lines)
				}
			}
			for r := range refs {
				if strings.HasPrefix(r, "note-") && !slices.Contains(guarded, r) {
					guarded = append(guarded, r)
				}
			}
		}
		for _, ref := range calls {
			if e, _, err := l.Read(ctx, ref); err != nil || e.Ref != ref {
				t.Fatalf("Read(%s) = %+v, %v", ref, e, err)
			}
		}
	})
}

// The importance guard holds: notes are never evicted, while tool calls
// are, and the evicted calls are listed and read whole by reference.
func TestCapacity_GuardHolds(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	cfg := episodicmemory.Config{Capacity: episodicmemory.Capacity{MaxEpisodes: 5, Reservoir: -1}}
	l := bound(t, cfg, st, "t", "")
	for i := range 3 {
		if err := l.Note(ctx, i, "decision", fmt.Sprintf("keep the blue theme %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for n := 3; n < 23; n++ {
		store(t, l, pageStep(n))
	}
	lines := checkCapacity(t, st, cfg, "t", "")
	notes := 0
	for _, line := range lines {
		if strings.HasPrefix(refOf(line), "note-") {
			notes++
		}
	}
	if notes != 3 || len(lines) != 5 {
		t.Fatalf("the index holds %d notes of %d episodes, want 3 of 5:\n%s", notes, len(lines), strings.Join(lines, "\n"))
	}
	ev, err := l.Evicted(ctx, 100)
	if err != nil || len(ev) != 18 {
		t.Fatalf("Evicted = %d episodes, %v; want 18", len(ev), err)
	}
	for _, d := range ev {
		e, whole, err := l.Read(ctx, d.Ref)
		if err != nil || !whole || !strings.Contains(e.Result, `"page":`) {
			t.Fatalf("Read(%s) of an evicted episode = %+v, %v, %v", d.Ref, e, whole, err)
		}
	}
	if out, err := callRead(l, `{"ref":"call-3"}`); err != nil || !strings.Contains(out, "page-3") {
		t.Errorf("the read tool on evicted call-3 = %q, %v", out, err)
	}
	// A memory full of guarded notes keeps a new one out of the index,
	// logged and read by reference.
	full := episodicmemory.Config{Capacity: episodicmemory.Capacity{MaxEpisodes: 3, Reservoir: -1}}
	w := bound(t, full, st, "t", "")
	if err := w.Note(ctx, 30, "decision", "one note too many"); err != nil {
		t.Fatal(err)
	}
	lines = checkCapacity(t, st, full, "t", "")
	if len(lines) != 3 || slices.ContainsFunc(lines, func(s string) bool { return strings.Contains(s, "too many") }) {
		t.Errorf("a note past a full guarded memory: index %v", lines)
	}
	ev, err = w.Evicted(ctx, 1)
	if err != nil || len(ev) != 1 || !strings.Contains(ev[0].Text, "too many") {
		t.Fatalf("Evicted(1) = %v, %v; want the note kept out", ev, err)
	}
	if out, err := callRead(bound(t, full, st, "t", ""), `{"ref":"`+ev[0].Ref+`"}`); err != nil || !strings.Contains(out, "too many") {
		t.Errorf("the read tool on the note kept out = %q, %v", out, err)
	}
}

// density is an episode's utility density as Capacity documents it, at
// now: importance × 2^(−Δt/halfLife) × (1 + uses) / tokens.
func density(imp float64, at, now time.Time, halfLife time.Duration, uses int, line string) float64 {
	return imp * math.Exp2(-now.Sub(at).Hours()/halfLife.Hours()) * float64(1+uses) / float64(max(layer.EstimateTokens(line), 1))
}

// Without the reservoir term, eviction removes the lowest utility
// density first: decay and importance order it as documented. Densities
// within a factor √2 may leave in either order, so the test checks that
// every evicted episode is below √2 times every kept one.
func TestCapacity_DecayAndImportanceOrderEviction(t *testing.T) {
	clk := newClock()
	st := storage.NewMemoryStore()
	cfg := episodicmemory.Config{Now: clk.now, Capacity: episodicmemory.Capacity{MaxEpisodes: 100, Reservoir: -1, HalfLife: time.Hour}}
	l := bound(t, cfg, st, "t", "")
	imp := map[string]float64{}
	at := map[string]time.Time{}
	for n := range 16 {
		clk.add(time.Duration(7+n%5*11) * time.Minute)
		ref := fmt.Sprintf("call-%d", n)
		switch n % 3 {
		case 0:
			store(t, l, pageStep(n))
			imp[ref] = episodicmemory.ImportanceTool
		case 1:
			store(t, l, failStep(n))
			imp[ref] = episodicmemory.ImportanceFailure
		default:
			store(t, l, turnStep(n, fmt.Sprintf("publish page %d", n), "published"))
			ref = fmt.Sprintf("turn-%d", n)
			imp[ref] = episodicmemory.ImportanceTurn
		}
		at[ref] = clk.now()
	}
	lines := map[string]string{}
	for _, line := range indexedLines(t, st, cfg, "t", "") {
		lines[refOf(line)] = line
	}
	if len(lines) != 16 {
		t.Fatalf("%d episodes indexed before eviction, want 16", len(lines))
	}
	small := cfg
	small.Capacity.MaxEpisodes = 6
	clk.add(time.Minute)
	w := bound(t, small, st, "t", "")
	if err := w.Note(context.Background(), 99, "decision", "guarded: not a candidate"); err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, line := range checkCapacity(t, st, small, "t", "") {
		kept[refOf(line)] = true
	}
	now := clk.now()
	minKept, maxEvicted := math.Inf(1), 0.0
	for ref, line := range lines {
		d := density(imp[ref], at[ref], now, time.Hour, 0, line)
		if kept[ref] {
			minKept = min(minKept, d)
		} else {
			maxEvicted = max(maxEvicted, d)
		}
	}
	if len(kept) != 6 || maxEvicted >= math.Sqrt2*minKept {
		t.Fatalf("kept %d; the densest evicted %.3g ≥ √2 × the least dense kept %.3g", len(kept), maxEvicted, minKept)
	}
	// Decay alone: among episodes of one kind and size, the oldest left.
	if kept["call-0"] || !kept["call-15"] {
		t.Errorf("kept %v: want the oldest call gone and the newest kept", kept)
	}
}

// Uses raise an episode's density as documented: an old episode
// recalled in two later runs (uses 2, last touched at the second) counts
// as one logged 1.585 half-lives after its last use, and leaves among
// the others in that place.
func TestCapacity_UseOrdersEviction(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	t0 := clk.now()
	at := func(h float64) { clk.set(t0.Add(time.Duration(h * float64(time.Hour)))) }
	st := storage.NewMemoryStore()
	cfg := episodicmemory.Config{Now: clk.now, MaxRecall: 1, Capacity: episodicmemory.Capacity{MaxEpisodes: 6, Reservoir: -1, HalfLife: time.Hour}}
	l := bound(t, cfg, st, "t", "")
	for n := range 6 { // call-n logged at 2n hours
		at(2 * float64(n))
		store(t, l, pageStep(n))
	}
	// Two runs recall page 0, at 11 h and at 13.415 h: with uses 2 it
	// counts as logged at 13.415 + log2(3) = 15 h, between call-6 (14 h)
	// and call-7 (16 h), a band away from each.
	for _, h := range []float64{11, 13.415} {
		at(h)
		r := bound(t, cfg, st, "t", "")
		if b := recall(t, r, `"Page 0" page-0`); !strings.Contains(b, "[call-0]") {
			t.Fatalf("recall of page 0:\n%s", b)
		}
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	for n := 6; n < 15; n++ { // call-n logged at 2n+2 hours
		at(2*float64(n) + 2)
		w := bound(t, cfg, st, "t", "")
		store(t, w, pageStep(n))
		ev, err := w.Evicted(ctx, 1)
		if err != nil || len(ev) != 1 {
			t.Fatalf("Evicted = %v, %v", ev, err)
		}
		order = append(order, ev[0].Ref)
		checkCapacity(t, st, cfg, "t", "")
	}
	want := []string{"call-1", "call-2", "call-3", "call-4", "call-5", "call-6", "call-0", "call-7", "call-8"}
	if !slices.Equal(order, want) {
		t.Errorf("eviction order %v, want %v", order, want)
	}
}

// With the reservoir term (the default), a long log at capacity keeps a
// sample of its old episodes, biased toward importance: failures (0.6)
// outnumber successes (0.4) among the kept, where density order alone
// keeps failures only, and the sample reaches back to the log's start.
func TestCapacity_ReservoirKeepsASampleBiasedTowardImportance(t *testing.T) {
	kept := func(reservoir float64) (fails, oks, oldest int) {
		st := storage.NewMemoryStore()
		cfg := episodicmemory.Config{Capacity: episodicmemory.Capacity{MaxEpisodes: 80, Reservoir: reservoir}}
		l := bound(t, cfg, st, "t", "")
		for n := range 800 {
			// One size: the successes' results as long as the failures'.
			if n%2 == 0 {
				store(t, l, failStep(n))
			} else {
				store(t, l, toolStep(n, fmt.Sprintf("call-%d", n), "cms_publish", fmt.Sprintf(`{"id":"page-%d"}`, n), "permission granted"))
			}
		}
		oldest = 800
		for _, line := range checkCapacity(t, st, cfg, "t", "") {
			var n int
			if _, err := fmt.Sscanf(refOf(line), "call-%d", &n); err != nil {
				t.Fatalf("line %q", line)
			}
			oldest = min(oldest, n)
			if strings.Contains(line, "→ error") {
				fails++
			} else {
				oks++
			}
		}
		return fails, oks, oldest
	}
	f, o, _ := kept(-1)
	// Evicted in batches: down to 79, then back to 80 with the next
	// write, which may be the newest success.
	if f < 79 || o > 1 {
		t.Fatalf("density order kept %d failures and %d successes, want 79 or more and at most the newest", f, o)
	}
	f, o, old := kept(0)
	t.Logf("reservoir: %d failures, %d successes kept, the oldest call-%d", f, o, old)
	if f <= o || o == 0 || old >= 200 {
		t.Errorf("reservoir kept %d failures and %d successes, the oldest call-%d: want more failures, some successes, and an episode of the log's first quarter", f, o, old)
	}
}

// Threads writing one resource's log at once, a fresh layer per run, keep
// the ledger exact: the index holds what it counts, within the capacity,
// and every episode is indexed or evicted, once.
func TestCapacity_ConcurrentWritersKeepTheCountExact(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	cfg := episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, CompactAfter: 6,
		Capacity: episodicmemory.Capacity{MaxEpisodes: 10}}
	const writers, runs, steps = 3, 6, 2
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for run := range runs {
				l := bound(t, cfg, st, fmt.Sprintf("thread-%d", w), "u")
				for step := range steps {
					if err := l.Store(ctx, pageStep(100*w+10*run+step)); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
				if err := l.Close(ctx); err != nil {
					t.Errorf("writer %d: close: %v", w, err)
				}
			}
		}()
	}
	wg.Wait()
	lines := checkCapacity(t, st, cfg, "check", "u")
	ev, err := bound(t, cfg, st, "check", "u").Evicted(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, line := range lines {
		seen[refOf(line)]++
	}
	for _, d := range ev {
		seen[d.Ref]++
	}
	if len(lines) != 10 || len(seen) != writers*runs*steps {
		t.Errorf("%d indexed, %d evicted, %d episodes seen; want 10 indexed of %d", len(lines), len(ev), len(seen), writers*runs*steps)
	}
	for ref, n := range seen {
		if n != 1 {
			t.Errorf("%s is indexed or evicted %d times", ref, n)
		}
	}
}

// Users whose IDs collide or nest ("a", "a/b", and none) each have their
// own capacity: one user's writes never evict another's episodes, nor
// count against them, nor show in their evictions; erasing one user's
// scope leaves the others whole.
func TestCapacity_UsersNeverEvictEachOther(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	cfg := episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, Capacity: episodicmemory.Capacity{MaxEpisodes: 4}}
	users := []string{"a", "a/b", ""}
	writes := map[string]int{"a": 3, "a/b": 12, "": 7}
	for _, u := range users {
		l := bound(t, cfg, st, "thread-"+u, u)
		for n := range writes[u] {
			store(t, l, pageStep(1000*len(u)+n))
		}
	}
	// "a" wrote below its capacity after "a/b" and "" went past theirs.
	for _, u := range users {
		lines := checkCapacity(t, st, cfg, "thread-"+u, u)
		ev, err := bound(t, cfg, st, "thread-"+u, u).Evicted(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		if want := min(writes[u], 4); len(lines) != want || len(ev) != writes[u]-want {
			t.Errorf("user %q: %d indexed, %d evicted; want %d and %d", u, len(lines), len(ev), want, writes[u]-want)
		}
		for _, d := range ev {
			lines = append(lines, d.Text)
		}
		for _, line := range lines {
			var n int
			fmt.Sscanf(refOf(line), "call-%d", &n)
			if n/1000 != len(u) {
				t.Errorf("user %q holds another user's episode: %s", u, line)
			}
		}
	}
	// Erasing "a/b" (its records and collections) leaves "a" and "" whole.
	storagetest.Erase(t, st, storage.LayerPrefix(episodicmemory.DefaultStorageID, layer.Env{ThreadID: "thread-a/b", ResourceID: "a/b"}.ScopeKey(layer.ScopeResource)))
	for _, u := range []string{"a", ""} {
		if got := len(checkCapacity(t, st, cfg, "thread-"+u, u)); got != min(writes[u], 4) {
			t.Errorf("after erasing a/b, user %q has %d indexed", u, got)
		}
	}
	if lines := indexedLines(t, st, cfg, "thread-a/b", "a/b"); len(lines) != 0 {
		t.Errorf("after its erase, a/b recalls %v", lines)
	}
	if ev, _ := bound(t, cfg, st, "thread-a/b", "a/b").Evicted(ctx, 100); len(ev) != 0 {
		t.Errorf("after its erase, a/b lists %d evicted", len(ev))
	}
}

// Clear forgets the evicted episodes and the uses with the rest: no
// collection of the scope keeps a document, and the ledger starts again.
func TestCapacity_ClearRemovesEverything(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	cfg := episodicmemory.Config{MaxRecall: 1, Capacity: episodicmemory.Capacity{MaxEpisodes: 2}}
	l := bound(t, cfg, st, "t", "")
	for n := range 6 {
		store(t, l, pageStep(n))
	}
	recall(t, l, "Page 5")
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ev, _ := l.Evicted(ctx, 10); len(ev) != 4 {
		t.Fatalf("%d evicted before Clear, want 4", len(ev))
	}
	if err := l.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	scope := layer.Env{ThreadID: "t"}.ScopeKey(layer.ScopeThread)
	cols, err := st.Collections(ctx, storage.LayerPrefix(episodicmemory.DefaultStorageID, scope))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cols {
		if hits, _ := st.Search(ctx, c, storage.Query{K: 10}); len(hits) > 1 || len(hits) == 1 && hits[0].Text != "" {
			t.Errorf("after Clear, collection %s holds %v", c, hits)
		}
	}
	if ev, _ := bound(t, cfg, st, "t", "").Evicted(ctx, 10); len(ev) != 0 {
		t.Errorf("after Clear, %d evicted listed", len(ev))
	}
	if n, _, ok := bound(t, cfg, st, "t", "").CapacityUsed(); !ok || n != 0 {
		t.Errorf("after Clear the ledger counts %d (%v), want 0", n, ok)
	}
	store(t, l, pageStep(9))
	if lines := checkCapacity(t, st, cfg, "t", ""); len(lines) != 1 {
		t.Errorf("after Clear and a step: %v", lines)
	}
}

// Restore counts the restored view into the ledger: the index holds
// what the ledger counts, and the next write evicts down to the
// capacity.
func TestCapacity_RestoreRecounts(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	cfg := episodicmemory.Config{Capacity: episodicmemory.Capacity{MaxEpisodes: 20}}
	l := bound(t, cfg, st, "t", "")
	for n := range 6 {
		store(t, l, pageStep(n))
	}
	snap, err := l.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for n := 6; n < 30; n++ {
		store(t, l, pageStep(n))
	}
	checkCapacity(t, st, cfg, "t", "")
	if err := l.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if lines := checkCapacity(t, st, cfg, "t", ""); len(lines) != 6 {
		t.Errorf("after Restore the index holds %d episodes, want the 6 of the snapshot", len(lines))
	}
	small := cfg
	small.Capacity.MaxEpisodes = 3
	store(t, bound(t, small, st, "t", ""), pageStep(40))
	if lines := checkCapacity(t, st, small, "t", ""); len(lines) != 3 {
		t.Errorf("after Restore and a write at capacity 3, the index holds %d", len(lines))
	}
}

// An evicted episode is read whole by reference while its segment is
// kept, and by its digest once the retention limit dropped it.
func TestCapacity_EvictedReadUntilRetention(t *testing.T) {
	ctx := context.Background()
	st := storage.NewMemoryStore()
	cfg := episodicmemory.Config{CompactAfter: 4, Retain: 8, Capacity: episodicmemory.Capacity{MaxEpisodes: 3, Reservoir: -1}}
	l := bound(t, cfg, st, "t", "")
	for n := range 40 {
		store(t, l, pageStep(n))
	}
	r := bound(t, cfg, st, "t", "")
	if e, whole, err := r.Read(ctx, "call-35"); err != nil || !whole || !strings.Contains(e.Result, "page-35") {
		t.Errorf("Read(call-35), evicted, within retention = %+v, %v, %v", e, whole, err)
	}
	e, whole, err := r.Read(ctx, "call-2")
	if err != nil || whole || e.Ref != "call-2" {
		t.Errorf("Read(call-2), evicted, beyond retention = %+v, %v, %v; want its digest", e, whole, err)
	}
	if out, err := callRead(r, `{"ref":"call-2"}`); err != nil || !strings.Contains(out, "page-2") {
		t.Errorf("the read tool on call-2 = %q, %v", out, err)
	}
	if b := recall(t, r, "Page 2"); strings.Contains(b, "[call-2]") {
		t.Errorf("an evicted episode is recalled:\n%s", b)
	}
}
