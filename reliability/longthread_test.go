package reliability

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
)

// The long thread: one SQLite thread of CMS work, a new page most turns,
// and every 10th user message naming by title a page from 9 to about 900
// turns back. The scripted model resolves a reference only when it finds
// the page's ID next to its title in the request it is sent.

var (
	ltTopics    = []string{"Pricing", "Careers", "Press Kit", "Partner Program", "Security Overview", "Product Roadmap", "Webinar Series", "Case Study", "Onboarding Guide", "Release Notes", "Customer Stories", "Brand Guidelines", "Developer Portal", "Accessibility Statement", "Holiday Campaign"}
	ltAudiences = []string{"for Nonprofits", "for Startups", "for Schools", "in Europe", "for Agencies", "for Retailers", "for Hospitals", "in Japan", "for Freelancers", "for Banks", "for Cities"}
	ltWords     = strings.Fields("the team reviewed the layout and asked for clearer copy, a shorter hero, better contrast on buttons, localized prices, a testimonial strip, an FAQ block with six questions, and a footer that links to the legal pages and the newsletter signup form")
)

// ltTitle is the title of the page created at turn n.
func ltTitle(n int) string {
	return fmt.Sprintf("%s %s %d", ltTopics[n%len(ltTopics)], ltAudiences[(n/len(ltTopics))%len(ltAudiences)], n)
}

// ltBackRef returns the turn whose page turn n names, or -1 when turn n
// creates a page: every 10th turn names one from 9 to about 900 turns
// back, the distance sweeping that range.
func ltBackRef(n int) int {
	if n < 10 || n%10 != 0 {
		return -1
	}
	d := 9 + (n/10*97)%891
	for ref := n - min(d, n-1); ref >= 1; ref-- {
		if ltBackRef(ref) < 0 {
			return ref
		}
	}
	return -1
}

// ltPage is a realistic CMS result of 1 to 3 KB.
func ltPage(n int, title string) map[string]any {
	sections := make([]map[string]any, 2+n%4)
	for i := range sections {
		var body strings.Builder
		for j := range 30 + (n+i)%30 {
			body.WriteString(ltWords[(n+i+j)%len(ltWords)])
			body.WriteByte(' ')
		}
		sections[i] = map[string]any{"id": fmt.Sprintf("sec-%d-%d", n, i), "type": []string{"hero", "text", "gallery", "faq"}[i%4], "body": body.String()}
	}
	return map[string]any{"page": map[string]any{
		"id": fmt.Sprintf("page-%d", n), "title": title, "status": "draft",
		"slug": strings.ToLower(strings.ReplaceAll(title, " ", "-")), "author": "editor-7",
		"updatedAt": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(n) * time.Minute).Format(time.RFC3339),
		"sections":  sections,
	}}
}

type ltTurn struct {
	tokens   int            // the largest request of the turn, by the default estimate
	took     time.Duration  // the run's wall time (the scripted model and the tools included)
	overhead time.Duration  // memlayer's own time: the steps' time less model and tool time
	written  int            // bytes written to the store
	kinds    map[string]int // bytes written by kind of record (see ltKind)
	ref      bool           // the user named an earlier page
	resolved bool           // and the model found its ID
}

type ltResult struct {
	turns    []ltTurn // index 0 is turn 1
	refs     int
	resolved int
	missed   []string
	// turn10 is turn 10's own overhead, the least of ltTurn10Runs fresh
	// threads (see ltTurn10); zero when not measured.
	turn10 time.Duration
}

// ltTurn10Runs is how many fresh threads ltTurn10 runs.
const ltTurn10Runs = 10

// ltTurn10 returns turn 10's memlayer overhead as the overhead bar
// compares it: the least over ltTurn10Runs fresh threads of 10 turns, on
// stores open returns. A turn's overhead is measured as the least of 10
// samples of the same work, so that other processes on a shared machine
// do not inflate it. At turn 1,000 the 10 turns that end with it are such
// samples: the thread's memory has reached its bounds, so each turn does
// the work of the next. Turns 1 to 10 are not: the memory grows from
// empty over them, and the least of them is the overhead of a turn near
// the first (turn 10 sends a back-reference and finds a log of 18
// episodes and an archive of 9 entities; turn 2 finds 2 and 1). Turn 10
// itself, repeated on fresh threads, is.
func ltTurn10(t testing.TB, all bool, open func(testing.TB) ltStore) time.Duration {
	least := time.Duration(math.MaxInt64)
	for range ltTurn10Runs {
		r := runLongThreadOn(t, 10, all, open(t))
		least = min(least, r.turns[9].overhead)
	}
	return least
}

// ltCountingStore counts the bytes written to the store, its records and
// its search documents. It forwards storage.Searcher and
// storage.MultiGetter, which a wrapper would otherwise hide.
type ltCountingStore struct {
	storage.Store
	search storage.Searcher
	mu     sync.Mutex
	bytes  int
	kinds  map[string]int // bytes by kind of record (see ltKind)
}

func (s *ltCountingStore) add(kind string, n int) {
	s.mu.Lock()
	s.bytes += n
	if s.kinds == nil {
		s.kinds = map[string]int{}
	}
	s.kinds[kind] += n
	s.mu.Unlock()
}

// byKind returns the bytes written so far by kind of record.
func (s *ltCountingStore) byKind() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.kinds)
}

// ltKind is a key's kind of record: the key with its random suffix cut
// (".<12 hex digits>") and each run of digits replaced by "#", the
// user's and thread's IDs kept (there is one of each). It runs inside
// the store's calls, so it is a plain loop, not a regular expression.
func ltKind(key string) string {
	if i := strings.LastIndexByte(key, '.'); i >= 0 && len(key)-i == 13 && strings.Trim(key[i+1:], "0123456789abcdef") == "" {
		key = key[:i]
	}
	b := make([]byte, 0, len(key))
	for i := 0; i < len(key); i++ {
		if key[i] >= '0' && key[i] <= '9' {
			if i == 0 || key[i-1] < '0' || key[i-1] > '9' {
				b = append(b, '#')
			}
			continue
		}
		b = append(b, key[i])
	}
	return string(b)
}

func (s *ltCountingStore) written() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

func (s *ltCountingStore) Put(ctx context.Context, key string, v []byte, ver int64) (int64, error) {
	s.add(ltKind(key), len(key)+len(v))
	return s.Store.Put(ctx, key, v, ver)
}

// GetMany forwards storage.MultiGetter (a store without it is read one
// key at a time, as storage.GetMany does).
func (s *ltCountingStore) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	return storage.GetMany(ctx, s.Store, keys)
}

func (s *ltCountingStore) Index(ctx context.Context, col string, docs ...storage.Document) error {
	n := 0
	for _, d := range docs {
		n += len(d.ID) + len(d.Text) + 4*len(d.Vector)
		for k, v := range d.Fields {
			n += len(k) + len(v)
		}
	}
	s.add("index:"+ltKind(col), n)
	return s.search.Index(ctx, col, docs...)
}

func (s *ltCountingStore) Unindex(ctx context.Context, col string, ids ...string) error {
	return s.search.Unindex(ctx, col, ids...)
}

func (s *ltCountingStore) Search(ctx context.Context, col string, q storage.Query) ([]storage.Hit, error) {
	return s.search.Search(ctx, col, q)
}

func (s *ltCountingStore) Collections(ctx context.Context, prefix string) ([]string, error) {
	return s.search.Collections(ctx, prefix)
}

func (s *ltCountingStore) Drop(ctx context.Context, col string) error { return s.search.Drop(ctx, col) }

// ltLayers returns the README quickstart's layers (scratchpad and
// entities), or all four.
func ltLayers(t testing.TB, all bool) []layer.Layer {
	pad, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	ents, err := entitymemory.New(entitymemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ls := []layer.Layer{pad, ents}
	if all {
		eps, err := episodicmemory.New(episodicmemory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		sem, err := semanticmemory.New(semanticmemory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, eps, sem)
	}
	return ls
}

// ltSQLite opens the long thread's store: an SQLite file.
func ltSQLite(t testing.TB) ltStore {
	db, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "long.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// ltStore is a store the long thread runs on: it searches.
type ltStore interface {
	storage.Store
	storage.Searcher
}

func runLongThread(t testing.TB, turns int, all bool) ltResult {
	return runLongThreadOn(t, turns, all, ltSQLite(t))
}

// runLongThreadOn runs the long thread on db.
func runLongThreadOn(t testing.TB, turns int, all bool, db ltStore) ltResult {
	ctx := context.Background()
	counter := &ltCountingStore{Store: db, search: db}
	store := storage.Store(counter)
	if b, ok := db.(storage.Batcher); ok {
		store = ltCountingBatcher{counter, b}
	}

	var res ltResult
	var turn int // the turn being run
	ref := regexp.MustCompile(`"([^"]*)" \((page-[0-9]+)`)
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		sent := r.Sent()
		res.turns[turn-1].tokens = max(res.turns[turn-1].tokens, layer.Query{}.Count(sent))
		if len(r.ToolResults()) > 0 {
			return agenttest.Text("Done."), nil
		}
		if back := ltBackRef(turn); back >= 0 {
			want := ltTitle(back)
			for _, m := range ref.FindAllStringSubmatch(sent, -1) {
				if m[1] == want && m[2] == fmt.Sprintf("page-%d", back) {
					res.resolved++
					res.turns[turn-1].resolved = true
					return agenttest.Calls(agenttest.Call("cms_publishPage", map[string]string{"id": m[2]})), nil
				}
			}
			res.missed = append(res.missed, fmt.Sprintf("turn %d: %q of turn %d", turn, want, back))

			return agenttest.Text("Which page do you mean?"), nil
		}
		return agenttest.Calls(agenttest.Call("cms_createPage", map[string]string{"title": ltTitle(turn)})), nil
	})
	create := agentloop.NewTool("cms_createPage", "Create a CMS page.", nil,
		func(ctx context.Context, in struct {
			Title string `json:"title"`
		}) (map[string]any, error) {
			return ltPage(turn, in.Title), nil
		})
	publish := agentloop.NewTool("cms_publishPage", "Publish a CMS page.", nil,
		func(ctx context.Context, in struct {
			ID string `json:"id"`
		}) (map[string]any, error) {
			var n int
			fmt.Sscanf(in.ID, "page-%d", &n)
			return map[string]any{"page": map[string]any{"id": in.ID, "title": ltTitle(n), "status": "published"}}, nil
		})
	agent, err := agentloop.New(agentloop.Config{
		Model:        model,
		Instructions: "You are a CMS assistant.",
		Layers:       ltLayers(t, all),
		Tools:        []agentloop.Tool{create, publish},
		Store:        store,
		Observer: func(e agentloop.Event) {
			if e.Kind == agentloop.EventStep && turn >= 1 && turn <= len(res.turns) {
				res.turns[turn-1].overhead += e.Duration - e.ModelTime - e.ToolTime
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res.turns = make([]ltTurn, turns)
	for turn = 1; turn <= turns; turn++ {
		input := fmt.Sprintf("Create a page called %s.", ltTitle(turn))
		if back := ltBackRef(turn); back >= 0 {
			res.refs++
			res.turns[turn-1].ref = true
			input = fmt.Sprintf("Go back to the page from turn %d (%q) and publish it.", back, ltTitle(back))
		}
		before, kinds, start := counter.written(), counter.byKind(), time.Now()
		if _, err := agent.Run(ctx, agentloop.RunInput{ThreadID: "long", ResourceID: "user-1", Input: input}); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		res.turns[turn-1].took = time.Since(start)
		res.turns[turn-1].written = counter.written() - before
		res.turns[turn-1].kinds = counter.byKind()
		for k, n := range kinds {
			res.turns[turn-1].kinds[k] -= n
		}
	}
	return res
}

// ltPoint is the figures at one turn: its largest request, and the
// medians of the 10 turns that end with it. least is the smallest
// overhead of those turns: on a shared machine other processes inflate
// a turn's wall time, and the least disturbed of 10 turns shows the
// work the turn does.
type ltPoint struct {
	tokens   int
	took     time.Duration
	overhead time.Duration
	least    time.Duration // the least overhead of the 10 turns
	written  int
}

// at returns the figures at turn n.
func (r ltResult) at(n int) ltPoint {
	w := r.turns[max(n-10, 0):n]
	med := func(f func(ltTurn) int64) int64 {
		v := make([]int64, len(w))
		for i := range w {
			v[i] = f(w[i])
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	ov := make([]time.Duration, len(w))
	for i := range w {
		ov[i] = w[i].overhead
	}
	return ltPoint{
		tokens:   r.turns[n-1].tokens,
		took:     time.Duration(med(func(x ltTurn) int64 { return int64(x.took) })),
		overhead: time.Duration(med(func(x ltTurn) int64 { return int64(x.overhead) })),
		least:    slices.Min(ov),
		written:  int(med(func(x ltTurn) int64 { return int64(x.written) })),
	}
}

// kinds returns the median bytes written per kind of record by the 10
// turns that end with turn n, largest first.
func (r ltResult) kinds(n int) []ltKindBytes {
	w := r.turns[max(n-10, 0):n]
	all := map[string]bool{}
	for _, x := range w {
		for k := range x.kinds {
			all[k] = true
		}
	}
	var out []ltKindBytes
	for k := range all {
		v := make([]int, len(w))
		for i, x := range w {
			v[i] = x.kinds[k]
		}
		slices.Sort(v)
		if v[len(v)/2] > 0 {
			out = append(out, ltKindBytes{k, v[len(v)/2]})
		}
	}
	slices.SortFunc(out, func(a, b ltKindBytes) int { return cmp.Or(b.bytes-a.bytes, strings.Compare(a.kind, b.kind)) })
	return out
}

type ltKindBytes struct {
	kind  string
	bytes int
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// report logs the figures at turns 10, 100, 500 and 1,000, and at the
// last turn of a thread of another length.
func (r ltResult) report(t testing.TB, name string) {
	points := []int{10, 100, 500, 1000}
	if n := len(r.turns); !slices.Contains(points, n) {
		points = append(points, n)
	}
	for _, n := range points {
		if n > len(r.turns) {
			continue
		}
		p := r.at(n)
		refs, resolved := 0, 0
		for _, x := range r.turns[:n] {
			if x.ref {
				refs++
			}
			if x.resolved {
				resolved++
			}
		}
		t.Logf("FIGURE long-thread %s turn=%d prompt_tokens=%d overhead_ms=%.2f least_overhead_ms=%.2f run_ms=%.2f bytes_written=%d backrefs_resolved=%d/%d",
			name, n, p.tokens, ms(p.overhead), ms(p.least), ms(p.took), p.written, resolved, refs)
		if n == 10 && r.turn10 > 0 {
			t.Logf("FIGURE long-thread %s turn=10 own_overhead_ms=%.2f (the least of %d fresh threads' turn 10)", name, ms(r.turn10), ltTurn10Runs)
		}
		for _, k := range r.kinds(n) {
			t.Logf("BYTES long-thread %s turn=%d kind=%s bytes=%d", name, n, k.kind, k.bytes)
		}
	}
}

// checkLongThread asserts the bars of issue 25 for a thread of n turns:
// 95% of the back-references resolved, the last turn's request at most
// 8,000 tokens, its memlayer overhead at most twice turn 10's (the
// least of its 10 turns, see ltPoint, against r.turn10, see ltTurn10;
// the least of turns 1 to 10 when r.turn10 is not measured; 1 ms more
// is allowed for the clock of a shared machine), and with all four
// layers at most 16 KB written per turn. With timed false the
// overhead bar is logged, not asserted; it is asserted only under make
// reliability.
func checkLongThread(t *testing.T, r ltResult, all, timed bool) {
	t.Helper()
	if r.resolved*100 < r.refs*95 {
		t.Errorf("%d of %d back-references resolved, want at least 95%%; missed: %q", r.resolved, r.refs, r.missed[:min(10, len(r.missed))])
	}
	n := len(r.turns)
	p, p10 := r.at(n), r.at(10)
	if p.tokens > 8000 {
		t.Errorf("turn %d sent %d tokens, want at most 8,000", n, p.tokens)
	}
	fail := t.Errorf
	if !timed || raceEnabled || !heavy() {
		// The race detector distorts timing, and a short thread on a
		// busy machine says little about growth: the bar is asserted
		// on the 1,000 turns of make reliability.
		fail = t.Logf
	}
	base := p10.least
	if r.turn10 > 0 {
		base = r.turn10
	}
	if p.least > 2*base+time.Millisecond {
		fail("turn %d's memlayer overhead is %v (the least of 10 turns), turn 10's %v: want at most 2x", n, p.least, base)
	}
	if all && p.written > 16<<10 {
		t.Errorf("turn %d wrote %d bytes, want at most 16 KB", n, p.written)
	}
}

// ltTurns is the length of the thread: MEMLAYER_LONGTHREAD_TURNS when
// set (to profile a part of the thread, say), else 1,000 turns under make
// reliability (MEMLAYER_RELIABILITY=1), 100 otherwise, 30 under the race
// detector (make test) or with -short.
func ltTurns() int {
	if n, err := strconv.Atoi(os.Getenv("MEMLAYER_LONGTHREAD_TURNS")); err == nil && n >= 10 {
		return n
	}
	switch {
	case heavy():
		return 1000
	case raceEnabled || testing.Short():
		return 30
	}
	return 100
}

// TestLongThread runs the long thread with the README quickstart's
// layers (scratchpad and entities) and the default history, and asserts
// every bar of issue 25 for them.
func TestLongThread(t *testing.T) {
	r := runLongThread(t, ltTurns(), false)
	if heavy() {
		r.turn10 = ltTurn10(t, false, ltSQLite)
	}
	r.report(t, "quickstart")
	checkLongThread(t, r, false, true)
}

// TestLongThreadAllLayers is the same with all four layers, with every
// bar of issue 25 asserted as for the quickstart, and at most 16 KB
// written per turn.
func TestLongThreadAllLayers(t *testing.T) {
	r := runLongThread(t, ltTurns(), true)
	if heavy() {
		r.turn10 = ltTurn10(t, true, ltSQLite)
	}
	r.report(t, "all-layers")
	checkLongThread(t, r, true, true)
}

// TestLongThreadWritesFlat asserts that what the episodic and entity
// layers write per turn does not grow with the thread: every kind of
// their records (the log's segments and head, the index documents, the
// entity state and archive, and their snapshots in the checkpoint)
// writes as much per turn at turn 200 as at turn 20 (the median of 10
// turns each, with slack for the longer numbers in later titles), and
// the episodic layer's snapshot is a mark of a few hundred bytes.
func TestLongThreadWritesFlat(t *testing.T) {
	turns := 200
	if raceEnabled || testing.Short() {
		turns = 60
	}
	r := runLongThread(t, turns, true)
	early := map[string]int{}
	for _, k := range r.kinds(20) {
		early[k.kind] = k.bytes
	}
	late := r.kinds(turns)
	checked := 0
	for _, k := range late {
		if !strings.Contains(k.kind, "episodic-memory") && !strings.Contains(k.kind, "entities") {
			continue
		}
		checked++
		if k.bytes > early[k.kind]+early[k.kind]/10+64 {
			t.Errorf("%s: %d bytes per turn at turn %d, %d at turn 20: want no growth", k.kind, k.bytes, turns, early[k.kind])
		}
		if strings.HasSuffix(k.kind, "/layer.episodic-memory") && k.bytes > 512 {
			t.Errorf("the episodic layer's snapshot in the checkpoint is %d bytes, want a mark of at most 512", k.bytes)
		}
	}
	if checked < 6 {
		t.Errorf("only %d kinds of records of the episodic and entity layers were written per turn: %v", checked, late)
	}
	if p := r.at(turns); p.written > 16<<10 {
		t.Errorf("turn %d wrote %d bytes, want at most 16 KB", turns, p.written)
	}
}

// BenchmarkLongThread reports the long thread's figures at turns 10, 100,
// 500 and 1,000 (run it with -benchtime 1x: one iteration is 1,000 turns).
func BenchmarkLongThread(b *testing.B) { benchLongThread(b, "", ltSQLite) }

// benchLongThread runs BenchmarkLongThread on the stores open returns;
// suffix ends the names of its figures.
func benchLongThread(b *testing.B, suffix string, open func(testing.TB) ltStore) {
	for _, all := range []bool{false, true} {
		name := map[bool]string{false: "quickstart", true: "all-layers"}[all]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var r ltResult
			for b.Loop() {
				r = runLongThreadOn(b, 1000, all, open(b))
			}
			r.turn10 = ltTurn10(b, all, open)
			r.report(b, name+suffix)
			b.ReportMetric(ms(r.turn10), "own-overhead-ms@10")
			for _, n := range []int{10, 100, 500, 1000} {
				p := r.at(n)
				b.ReportMetric(float64(p.tokens), fmt.Sprintf("tokens@%d", n))
				b.ReportMetric(ms(p.overhead), fmt.Sprintf("overhead-ms@%d", n))
				b.ReportMetric(ms(p.least), fmt.Sprintf("least-overhead-ms@%d", n))
				b.ReportMetric(float64(p.written), fmt.Sprintf("B-written@%d", n))
			}
			b.ReportMetric(float64(r.resolved), "backrefs-resolved")
			b.ReportMetric(float64(r.refs), "backrefs")
		})
	}
}
