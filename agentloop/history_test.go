package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// TestHistory02_TruncationNoteNamesTheCall: the note of a result cut in
// the history names the tool call's ID, by which the episodic layer's
// tool reads the whole result.
func TestHistory02_TruncationNoteNamesTheCall(t *testing.T) {
	big := agentloop.Tool{Name: "fetch", Call: func(context.Context, json.RawMessage) (string, error) { return strings.Repeat("x", 300), nil }}
	model := agenttest.New(agenttest.Reply(agenttest.Calls(agenttest.Call("fetch", `{}`))), agenttest.Reply(agenttest.Text("ok")))
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{big}, MaxToolResultBytes: 100})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	var id, content string
	for _, m := range res.Messages {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				id, content = r.ToolCallID, r.Content
			}
		}
	}
	want := "\n[agentloop: result truncated: 300 bytes, of which the first 100 are shown; full result: call " + id + "]"
	if id == "" || !strings.HasSuffix(content, want) {
		t.Errorf("truncated result ends %q, want the note %q", content[min(len(content), 100):], want)
	}
}

// pagesTool creates a page named after its title and returns it with
// padding up to about pad bytes, as a CMS would return a page.
func pagesTool(pad int) agentloop.Tool {
	var mu sync.Mutex
	n := 0
	return agentloop.Tool{Name: "createPage", Call: func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ Title string }
		_ = json.Unmarshal(args, &in)
		mu.Lock()
		n++
		id := fmt.Sprintf("page_%d", n)
		mu.Unlock()
		return fmt.Sprintf(`{"page":{"id":%q,"title":%q,"body":%q}}`, id, in.Title, strings.Repeat("lorem ipsum ", pad/12)), nil
	}}
}

// pagesPolicy creates a page named after the user's message, then
// answers with its ID.
func pagesPolicy(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	if res := r.ToolResults(); len(res) > 0 {
		var out struct{ Page struct{ ID string } }
		_ = json.Unmarshal([]byte(res[0].Content), &out)
		return agenttest.Text("Created " + out.Page.ID + "."), nil
	}
	return agenttest.Calls(agenttest.Call("createPage", map[string]string{"title": r.LastUser()})), nil
}

// humans counts the user messages of msgs.
func humans(msgs []llms.MessageContent) int {
	n := 0
	for _, m := range msgs {
		if m.Role == llms.ChatMessageTypeHuman {
			n++
		}
	}
	return n
}

// TestHistory03_WindowAndSummaryThreshold: each request holds the
// current turn, MaxTurns turns before it and fewer than SummarizeAfter
// that wait to be summarized; every page ID the window no longer holds
// is in the summary block; summaries are versioned and stored with the
// thread, and each covers whole turns.
func TestHistory03_WindowAndSummaryThreshold(t *testing.T) {
	store := storage.NewMemoryStore()
	model := agenttest.NewFunc(pagesPolicy)
	h := history.Config{MaxTurns: 2, SummarizeAfter: 2}
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: []agentloop.Tool{pagesTool(100)}, History: h})
	const turns = 12
	for i := 1; i <= turns; i++ {
		model.Reset()
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("Page %d", i)}); err != nil {
			t.Fatal(err)
		}
		req := model.Requests()[0]
		if n := humans(req.Messages); n > h.MaxTurns+h.SummarizeAfter || n < min(i, h.MaxTurns+1) {
			t.Errorf("turn %d: %d turns in the request, want %d to %d", i, n, min(i, h.MaxTurns+1), h.MaxTurns+h.SummarizeAfter)
		}
		var sent strings.Builder
		for _, m := range req.Messages[1:] {
			for _, p := range m.Parts {
				fmt.Fprint(&sent, p)
			}
		}
		for j := 1; j < i; j++ {
			id := fmt.Sprintf("page_%d ", j)
			if !strings.Contains(sent.String(), fmt.Sprintf("page_%d\"", j)) && !strings.Contains(req.System(), id) {
				t.Errorf("turn %d: page_%d is neither in the window nor in the summary:\n%s", i, j, req.System())
			}
		}
		if i > h.MaxTurns+h.SummarizeAfter && !strings.Contains(req.System(), "<history_summary>") {
			t.Errorf("turn %d: no summary block:\n%s", i, req.System())
		}
	}
	ck, err := a.LoadCheckpoint(t.Context(), "t")
	if err != nil {
		t.Fatal(err)
	}
	// Turns of four messages; the summary covers 10 of the 12 after turn
	// 12 (made after turns 4, 6, 8, 10 and 12).
	if ck.Summary.Version != 5 || ck.Summary.Covers != 4*10 || ck.First != ck.Summary.Covers || ck.Total != 4*turns || len(ck.Messages) != ck.Total-ck.First {
		t.Errorf("summary v%d covers %d; messages %d from %d of %d", ck.Summary.Version, ck.Summary.Covers, len(ck.Messages), ck.First, ck.Total)
	}
	if ck.Messages[0].Role != thread.RoleUser {
		t.Errorf("the window starts with a %s message, not a turn", ck.Messages[0].Role)
	}
	// The full transcript has every message.
	all, first, err := a.Transcript(t.Context(), "t")
	if err != nil || first != 0 || len(all) != 4*turns {
		t.Errorf("transcript: %v, %d messages from %d", err, len(all), first)
	}
}

// TestHistory05_WindowNeverSplitsAToolPair: with a token cap that forces
// turns out of the window mid-run, every request pairs each tool call
// with its result and the current user message is always sent.
func TestHistory05_WindowNeverSplitsAToolPair(t *testing.T) {
	calls := 0
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if n := len(r.ToolResults()); n > 0 && calls%3 == 0 {
			return agenttest.Text("done"), nil
		}
		calls++
		return agenttest.Calls(agenttest.Call("createPage", `{"title":"a"}`), agenttest.Call("createPage", `{"title":"b"}`)), nil
	})
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{pagesTool(400)},
		History: history.Config{MaxTurns: 3, MaxTokens: 900, SummaryTokens: 1000}})
	for i := range 8 {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("turn %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for k, r := range model.Requests() {
		calls, results := map[string]bool{}, map[string]bool{}
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				switch p := p.(type) {
				case llms.ToolCall:
					calls[p.ID] = true
				case llms.ToolCallResponse:
					results[p.ToolCallID] = true
				}
			}
		}
		if !reflect.DeepEqual(calls, results) {
			t.Fatalf("request %d: calls %v, results %v", k, calls, results)
		}
		if r.LastUser() == "" {
			t.Fatalf("request %d has no user message", k)
		}
	}
	if !strings.Contains(model.Requests()[len(model.Requests())-1].System(), "turn 0") {
		t.Errorf("the oldest turn is in neither the window nor the summary")
	}
}

// TestHistory06_ConcurrentRunsKeepEveryMessage: two agents run one
// thread at once. A run that loses the head's compare-and-swap gets
// ErrConflict and none of the records of its failed write becomes
// visible; what every run saved (all of a run that won, the first steps
// of one that lost later) is in the transcript once, in order, and no
// segment is left that the head does not reach.
func TestHistory06_ConcurrentRunsKeepEveryMessage(t *testing.T) {
	store := storage.NewMemoryStore()
	slow := pagesTool(50)
	call := slow.Call
	slow.Call = func(ctx context.Context, args json.RawMessage) (string, error) {
		time.Sleep(200 * time.Microsecond)
		return call(ctx, args)
	}
	var mu sync.Mutex
	saved := map[string]int{} // input -> messages the thread kept
	wonSteps := 0
	var wg sync.WaitGroup
	for g := range 2 {
		a := mustAgent(t, agentloop.Config{Model: agenttest.NewFunc(pagesPolicy), Store: store, Tools: []agentloop.Tool{slow},
			Logger: slog.New(slog.DiscardHandler), History: history.Config{MaxTurns: 2, SummarizeAfter: 1}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 15 {
				in := fmt.Sprintf("g%d-%d", g, k)
				_, err := a.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: in})
				var ce *agentloop.CheckpointError
				mu.Lock()
				switch {
				case err == nil:
					saved[in] = 4
					wonSteps += 2
				case errors.As(err, &ce) && errors.Is(err, storage.ErrConflict):
					if ce.SavedMessages > 0 {
						saved[in] = ce.SavedMessages
						wonSteps += ce.SavedSteps
					}
				default:
					t.Errorf("%s: %v", in, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	msgs, _, err := mustAgent(t, agentloop.Config{Model: agenttest.New(), Store: store}).Transcript(t.Context(), "t")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	total := 0
	for i, m := range msgs {
		if m.Role != thread.RoleUser {
			continue
		}
		seen[m.Text]++
		n := saved[m.Text]
		total += n
		want := []string{thread.RoleUser, thread.RoleAssistant, thread.RoleTool, thread.RoleAssistant}[:min(n, 4)]
		for j, role := range want {
			if i+j >= len(msgs) || msgs[i+j].Role != role || (j > 0 && msgs[i+j].Role == thread.RoleUser) {
				t.Errorf("turn %s: message %d is not its %s message", m.Text, j, role)
				break
			}
		}
	}
	for in := range saved {
		if seen[in] != 1 {
			t.Errorf("run %s saved %d messages but is in the transcript %d times", in, saved[in], seen[in])
		}
	}
	if len(seen) != len(saved) || len(msgs) != total {
		t.Errorf("transcript has %d turns (%d messages); runs saved %d turns (%d messages)", len(seen), len(msgs), len(saved), total)
	}
	if len(saved) == 30 {
		t.Log("no run overlapped another")
	}
	keys, _ := store.List(t.Context(), storage.ThreadPrefix("t"))
	segs := 0
	for _, k := range keys {
		if strings.Contains(k, "/seg.") {
			segs++
		}
	}
	if segs != wonSteps {
		t.Errorf("%d segments stored for %d saved steps: a lost write left records", segs, wonSteps)
	}
}

// TestHistory07_MigratesAVersion3Thread: a 20-turn thread stored whole
// as a version-3 checkpoint continues: the request holds a window and
// a summary of the older turns, the thread is rewritten as segments and
// a head, and its transcript still holds every message.
func TestHistory07_MigratesAVersion3Thread(t *testing.T) {
	old := thread.Checkpoint{Version: 3, ThreadID: "t", Steps: 40}
	for i := range 20 {
		id := fmt.Sprintf("call_%d", i)
		old.Messages = append(old.Messages,
			thread.Message{Role: thread.RoleUser, Text: fmt.Sprintf("Page %d", i)},
			thread.Message{Role: thread.RoleAssistant, ToolCalls: []thread.ToolCall{{ID: id, Name: "createPage", Arguments: `{}`}}},
			thread.Message{Role: thread.RoleTool, ToolResults: []thread.ToolResult{{CallID: id, Name: "createPage", Content: fmt.Sprintf(`{"id":"page_%d","title":"Page %d"}`, i, i)}}},
			thread.Message{Role: thread.RoleAssistant, Text: "ok"})
	}
	data, _ := json.Marshal(old)
	store := storage.NewMemoryStore()
	if _, err := store.Put(t.Context(), storage.ThreadKey("t", thread.HeadName), data, storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	model := agenttest.NewFunc(pagesPolicy)
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: []agentloop.Tool{pagesTool(10)}})
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "Page 20"}); err != nil {
		t.Fatal(err)
	}
	// The migrated thread is summarized when first recorded; the second
	// request uses that summary.
	req := model.Requests()[len(model.Requests())-1]
	for i := range 20 {
		if !strings.Contains(req.System(), fmt.Sprintf("page_%d ", i)) && !strings.Contains(fmt.Sprint(req.Messages), fmt.Sprintf("page_%d", i)) {
			t.Errorf("page_%d lost in the migration", i)
		}
	}
	if n := humans(req.Messages); n > history.DefaultTurns+1 {
		t.Errorf("%d turns sent after migration", n)
	}
	it, _ := store.Get(t.Context(), storage.ThreadKey("t", thread.HeadName))
	if !strings.Contains(string(it.Value), `"version":4`) || len(it.Value) > 1024 {
		t.Errorf("head after migration (%d bytes): %s", len(it.Value), it.Value)
	}
	msgs, first, err := a.Transcript(t.Context(), "t")
	if err != nil || first != 0 || len(msgs) != 84 || msgs[0].Text != "Page 0" || msgs[80].Text != "Page 20" {
		t.Errorf("transcript: %v, %d messages from %d", err, len(msgs), first)
	}
	ck, err := a.LoadCheckpoint(t.Context(), "t")
	if err != nil || ck.Summary.Version != 1 || ck.Total != 84 || ck.Steps != 42 {
		t.Errorf("checkpoint: %v, summary v%d, %d messages, %d steps", err, ck.Summary.Version, ck.Total, ck.Steps)
	}
}

// blockingSummarizer summarizes only once released.
type blockingSummarizer struct {
	release chan struct{}
	calls   atomic.Int32
	timeout atomic.Bool
}

func (s *blockingSummarizer) Summarize(ctx context.Context, previous string, msgs []thread.Message) (string, error) {
	s.calls.Add(1)
	select {
	case <-s.release:
	case <-time.After(10 * time.Second):
		s.timeout.Store(true)
	}
	return fmt.Sprintf("%d messages summarized", len(msgs)), nil
}

// TestHistory08_SummaryOffTheCriticalPath: a model summarizer runs in
// the background: the steps go on with the previous summary while it
// works (the model's last request releases it), and the run waits for it
// before returning and stores it.
func TestHistory08_SummaryOffTheCriticalPath(t *testing.T) {
	store := storage.NewMemoryStore()
	sum := &blockingSummarizer{release: make(chan struct{})}
	var once sync.Once
	calls := 0
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		// The summarizer is released by the run's last step: the steps
		// before it went on while it was blocked. (Released by the first
		// request after it started, as before, a summarizer goroutine
		// that started late stayed blocked until the run's end.)
		if r.LastUser() != "first" && calls == 3 {
			once.Do(func() { close(sum.release) })
		}
		if r.LastUser() == "long" && calls < 3 {
			calls++
			return agenttest.Calls(agenttest.Call("createPage", `{"title":"x"}`)), nil
		}
		return pagesPolicy(ctx, r)
	})
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Tools: []agentloop.Tool{pagesTool(10)},
		History: history.Config{MaxTurns: 1, SummarizeAfter: 1, Summarizer: sum}})
	for _, in := range []string{"first", "long"} {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	if sum.timeout.Load() {
		t.Fatal("the steps waited for the summarizer")
	}
	ck, err := a.LoadCheckpoint(t.Context(), "t")
	if err != nil || ck.Summary.Version != 1 || ck.Summary.Text != "4 messages summarized" || ck.Summary.Covers != 4 {
		t.Errorf("after the run: %v, summary %+v", err, ck.Summary)
	}
	// The next run sends it.
	model.Reset()
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "third"}); err != nil {
		t.Fatal(err)
	}
	if sys := model.Requests()[0].System(); !strings.Contains(sys, "4 messages summarized") {
		t.Errorf("the stored summary is not sent:\n%s", sys)
	}
}

// putCounter counts the bytes handed to Put.
type putCounter struct {
	storage.Store
	bytes atomic.Int64
}

func (s *putCounter) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	s.bytes.Add(int64(len(value)))
	return s.Store.Put(ctx, key, value, ifVersion)
}

// TestHistory09_BytesPerStepDoNotGrow: one thread, 1,000 turns of a
// 2 KB tool result each under make reliability (300 in make test, where
// the race detector slows each turn; retention is constant from turn 50
// on): the bytes handed to Put for the last turn are those of turn 10,
// give or take the digits of growing counters, the summary, which is
// bounded by its budget, and the rewrite of the segments a new summary
// comes to cover, their long results elided, and the list of kept
// segments in the summary's record.
func TestHistory09_BytesPerStepDoNotGrow(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 turns")
	}
	t.Parallel()
	// n is a multiple of four, so that the last four turns hold one
	// summary write, as turns 9 to 12 do.
	n := suiteSize(1000, 300)
	store := &putCounter{Store: storage.NewMemoryStore()}
	// A summary every fourth turn, of up to 1,000 tokens.
	const summaryTokens = 1000
	a := mustAgent(t, agentloop.Config{Model: agenttest.NewFunc(pagesPolicy), Store: store, Tools: []agentloop.Tool{pagesTool(2000)},
		History: history.Config{MaxTurns: 8, SummarizeAfter: 4, SummaryTokens: summaryTokens}})
	perTurn := map[int]int64{}
	for i := 1; i <= n; i++ {
		before := store.bytes.Load()
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("Page %d", i)}); err != nil {
			t.Fatal(err)
		}
		perTurn[i] = store.bytes.Load() - before
	}
	// Turns 9 to 12 and n-3 to n each hold one summary write.
	cycle := func(last int) (sum int64) {
		for i := last - 3; i <= last; i++ {
			sum += perTurn[i]
		}
		return sum
	}
	t.Logf("bytes put: turn 10 %d, turn %d %d; turns 9-12 %d, turns %d-%d %d", perTurn[10], n, perTurn[n], cycle(12), n-3, n, cycle(n))
	// A summary turn also rewrites the segments the new summary comes to
	// cover, with what is over thread.ElideAbove elided (nothing
	// here: the results are 2 KB), at most 1 KiB for each of the four
	// turns; and its record lists the
	// covered segments retention keeps, under 20 bytes each: a turn here
	// is two segments of two messages, so at most 100 segments for
	// DefaultRetainMessages, a constant once the thread has that many.
	const elided, keptList = 4 * 1024, thread.DefaultRetainMessages / 2 * 20
	if perTurn[10] > 6000 || perTurn[n]-perTurn[n-2] > 4*summaryTokens+1000+elided+keptList {
		t.Errorf("turn 10 put %d bytes, turn %d %d", perTurn[10], n, perTurn[n])
	}
	// With a summary, each step's audit also records the history_summary
	// layer's recall (about 65 bytes, a constant): at most 520 bytes
	// over the four turns' eight steps, which turn 12 has only in part.
	if d := cycle(n) - cycle(12); d > 4*summaryTokens+200+520+keptList {
		t.Errorf("four turns put %d bytes at turn %d, %d at turn 12", cycle(n), n, cycle(12))
	}
	// The heads of turn n-2 also name the summary and its coverage, and
	// counters and IDs have more digits: a constant, not a growth.
	if d := perTurn[n-2] - perTurn[10]; d < 0 || d > 200+130 { // and its two recalls (see above)
		t.Errorf("a turn without a summary put %d bytes at turn 10 and %d at turn %d", perTurn[10], perTurn[n-2], n-2)
	}
}

// TestHistory10_UnusedLayerBudgetGoesToHistory: a layer that reserves
// most of the window but recalls nothing leaves it to the history.
func TestHistory10_UnusedLayerBudgetGoesToHistory(t *testing.T) {
	idle := layer.Func(layer.Spec{ID: "idle", Slot: 100, Budget: layer.Budget{Min: 6000, Max: 8000}}, func(context.Context, layer.Query) ([]layer.Item, error) {
		return nil, nil
	})
	model := agenttest.NewFunc(pagesPolicy)
	a := mustAgent(t, agentloop.Config{Model: model, Tools: []agentloop.Tool{pagesTool(400)}, Layers: []layer.Layer{idle},
		ContextWindow: 10000, ResponseReserve: 1000, KeepToolResults: true, History: history.Config{Full: true}})
	const turns = 30
	for i := range turns {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("Page %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	last := model.Requests()[len(model.Requests())-1]
	if n := humans(last.Messages); n != turns {
		t.Errorf("the last request holds %d of %d turns: the idle layer's budget was not given back", n, turns)
	}
}

// TestHistory11_RetentionLimit: with RetainMessages, the segments older
// than the limit and covered by the summary are deleted; the transcript
// starts later, and the thread goes on.
func TestHistory11_RetentionLimit(t *testing.T) {
	store := storage.NewMemoryStore()
	a := mustAgent(t, agentloop.Config{Model: agenttest.NewFunc(pagesPolicy), Store: store, Tools: []agentloop.Tool{pagesTool(10)},
		History: history.Config{MaxTurns: 2, SummarizeAfter: 2, RetainMessages: 8}})
	for i := range 20 {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("Page %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	msgs, first, err := a.Transcript(t.Context(), "t")
	if err != nil || first == 0 || first+len(msgs) != 80 || len(msgs) < 8 {
		t.Fatalf("transcript: %v, %d messages from %d", err, len(msgs), first)
	}
	keys, _ := store.List(t.Context(), storage.ThreadPrefix("t"))
	// The audit keeps its own window of turns (AuditConfig.Keep).
	isAudit := func(k string) bool { return strings.Contains(k, "/"+audit.Name) }
	audits := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !isAudit(k) })
	keys = slices.DeleteFunc(keys, isAudit)
	if len(keys) > 2+len(msgs) {
		t.Errorf("%d records stored for %d retained messages: %v", len(keys), len(msgs), keys)
	}
	if len(audits) != audit.DefaultKeep+1 {
		t.Errorf("%d audit records stored after 20 runs, want its head and %d turns", len(audits), audit.DefaultKeep)
	}
	ck, err := a.LoadCheckpoint(t.Context(), "t")
	if err != nil || !strings.Contains(ck.Summary.Text, "page_1 ") {
		t.Errorf("summary after retention: %v\n%s", err, ck.Summary.Text)
	}
}

// TestHistory12_ModelSummarizer: NewModelSummarizer sends its prompt,
// the previous summary and the messages as text to the model, and its
// answer becomes the stored summary.
func TestHistory12_ModelSummarizer(t *testing.T) {
	summarizer := agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		return agenttest.Text("  Pages created so far: page_1.  "), nil
	})
	a := mustAgent(t, agentloop.Config{Model: agenttest.NewFunc(pagesPolicy), Tools: []agentloop.Tool{pagesTool(10)},
		History: history.Config{MaxTurns: 1, SummarizeAfter: 1, Summarizer: history.NewModelSummarizer(summarizer, "")}})
	for i := range 2 {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("Page %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	ck, err := a.LoadCheckpoint(t.Context(), "t")
	if err != nil || ck.Summary.Text != "Pages created so far: page_1." || ck.Summary.Covers != 4 {
		t.Fatalf("summary: %v, %+v", err, ck.Summary)
	}
	reqs := summarizer.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d summary requests", len(reqs))
	}
	if sys, user := reqs[0].System(), reqs[0].LastUser(); sys != history.DefaultSummaryPrompt ||
		!strings.Contains(user, "user: Page 0") || !strings.Contains(user, `"id":"page_1"`) || strings.Contains(user, "Page 1") {
		t.Errorf("summary request:\nsystem %q\nuser %q", sys, user)
	}
}

// TestHistory14_FoldedEntitiesListEachIDOnce: when folded lines mention
// an entity by name and later by ID alone (a reference), the entities
// line lists the ID once, with its name; a newer name replaces the old.
func TestHistory14_FoldedEntitiesListEachIDOnce(t *testing.T) {
	previous := strings.Join([]string{
		`- User: Create Pricing | createPage (call c1) → page_1 "Pricing"`,
		`- User: Add a section to it | addSection (call c2) → sec_2 "Tiers", page_1`,
		`- User: Rename it | updatePage (call c3) → page_1 "Plans"`,
		`- User: Link it | addItem (call c4) → mi_3 "Plans", page_1`,
	}, "\n")
	s := &history.DeterministicSummarizer{MaxTokens: 30}
	got, err := s.Summarize(t.Context(), previous, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(got, "\n")
	if !strings.HasPrefix(first, "Entities seen earlier: ") {
		t.Fatalf("summary did not fold:\n%s", got)
	}
	if n := strings.Count(first, "page_1"); n != 1 {
		t.Errorf("page_1 listed %d times in the entities line, want once:\n%s", n, first)
	}
	if !strings.Contains(first, `page_1 "Plans"`) || strings.Contains(first, `"Pricing"`) {
		t.Errorf("page_1 should carry its newer name:\n%s", first)
	}
}
