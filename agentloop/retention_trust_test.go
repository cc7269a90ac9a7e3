package agentloop_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/workingmemory"
)

// storedBytes returns the bytes of keys and values stored under prefix.
func storedBytes(t *testing.T, st storage.Store, prefix string) (n, records int) {
	t.Helper()
	keys, err := st.List(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		it, err := st.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		n += len(k) + len(it.Value)
	}
	return n, len(keys)
}

// listCounter counts the List calls for a thread's segments.
type listCounter struct {
	storage.Store
	segLists atomic.Int64
}

func (s *listCounter) List(ctx context.Context, prefix string) ([]string, error) {
	if strings.HasPrefix(prefix, "threads/") && strings.HasSuffix(prefix, "/seg.") {
		s.segLists.Add(1)
	}
	return s.Store.List(ctx, prefix)
}

// scratchpadModel sends, at the first step of each turn, a scratchpad
// update whose notes are 60 KB (different each turn), then answers.
func scratchpadModel() *agenttest.Model {
	var turn int
	return agenttest.NewFunc(func(_ context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		if len(r.ToolResults()) > 0 {
			return agenttest.Text("Noted."), nil
		}
		turn++
		notes := strings.Repeat(string(rune('a'+turn%26)), 60<<10)
		return agenttest.Calls(agenttest.Call(workingmemory.DefaultID+"_update", map[string]string{"notes": notes})), nil
	})
}

// TestTrust322_StoredTranscriptIsBoundedByDefault: with the default
// HistoryConfig, a thread whose model sends a 60 KB scratchpad update
// every turn stores a bounded number of bytes: after 100 and after 200
// turns (400 steps) the thread's records are under 1 MiB and do not grow
// between the two (under make reliability; 60 and 120 turns in make test,
// where retention is constant from turn 50 on); the thread goes on, its summary and audit keep their
// turns, and the transcript keeps the window's arguments whole and the
// older retained ones as stubs with their size and hash. A nested thread
// ("a/b") of another user, on an agent that keeps every message, is
// left whole.
func TestTrust322_StoredTranscriptIsBoundedByDefault(t *testing.T) {
	t.Parallel()
	store := &listCounter{Store: storage.NewMemoryStore()}
	newAgent := func(h history.Config) *agentloop.Agent {
		pad, err := workingmemory.New(workingmemory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return mustAgent(t, agentloop.Config{Model: scratchpadModel(), Store: store, Layers: []layer.Layer{pad}, History: h})
	}
	a := newAgent(history.Config{})
	keepAll := newAgent(history.Config{RetainMessages: -1})
	var atHalf int
	turns := suiteSize(200, 120)
	const nested = 20
	for i := range turns {
		res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "a", ResourceID: "u1", Input: fmt.Sprintf("turn %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Steps != 2 {
			t.Fatalf("turn %d took %d steps", i, res.Steps)
		}
		if i < nested {
			if _, err := keepAll.Run(t.Context(), agentloop.RunInput{ThreadID: "a/b", ResourceID: "u2", Input: fmt.Sprintf("turn %d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		if i == turns/2-1 {
			atHalf, _ = storedBytes(t, store, storage.ThreadPrefix("a"))
		}
	}
	threadBytes, records := storedBytes(t, store, storage.ThreadPrefix("a"))
	all, _ := storedBytes(t, store, "")
	t.Logf("after %d turns (%d steps) of 60 KB updates: thread %d bytes in %d records (%d after %d turns); the store %d bytes", turns, 2*turns, threadBytes, records, atHalf, turns/2, all)
	if threadBytes > 1<<20 {
		t.Errorf("the thread stores %d bytes after %d turns of 60 KB arguments, want at most 1 MiB", threadBytes, turns)
	}
	if threadBytes > atHalf+(60<<10) {
		t.Errorf("the thread grew from %d to %d bytes between turn %d and turn %d", atHalf, threadBytes, turns/2, turns)
	}

	// The transcript: the retained messages, those the summary covers
	// with their arguments elided to a stub, the window's whole.
	msgs, first, err := a.Transcript(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ck, err := a.LoadCheckpoint(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if first == 0 || first+len(msgs) != 4*turns || len(msgs) < thread.DefaultRetainMessages || ck.First <= first {
		t.Fatalf("transcript: %d messages from %d of %d; the summary covers %d", len(msgs), first, 4*turns, ck.First)
	}
	if !strings.Contains(ck.Summary.Text, workingmemory.DefaultID+"_update") {
		t.Errorf("summary lost the turns:\n%s", ck.Summary.Text)
	}
	hashes := map[string]bool{}
	for c := 'a'; c <= 'z'; c++ {
		b, _ := json.Marshal(map[string]string{"notes": strings.Repeat(string(c), 60<<10)})
		sum := sha256.Sum256(b)
		hashes[hex.EncodeToString(sum[:])] = true
	}
	var whole, stubs int
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			covered := first+i < ck.First
			switch {
			case covered && (c.Elided == nil || !hashes[c.Elided.SHA256] || c.Elided.Bytes != 60<<10+len(`{"notes":""}`) || len(c.Arguments) > 100 || !json.Valid([]byte(c.Arguments))):
				t.Fatalf("message %d, covered by the summary: arguments %.80q, elided %+v", first+i, c.Arguments, c.Elided)
			case !covered && (c.Elided != nil || len(c.Arguments) < 60<<10):
				t.Fatalf("message %d, in the window: arguments of %d bytes, elided %+v", first+i, len(c.Arguments), c.Elided)
			case covered:
				stubs++
			default:
				whole++
			}
		}
	}
	if stubs == 0 || whole == 0 {
		t.Errorf("%d elided and %d whole arguments in the transcript", stubs, whole)
	}
	audits, _ := store.List(t.Context(), storage.ThreadKey("a", audit.Name))
	if len(audits) != audit.DefaultKeep+1 {
		t.Errorf("%d audit records, want its head and %d turns", len(audits), audit.DefaultKeep)
	}

	// Retention finds the segments from the summary's record, never by
	// listing the store (a scan of the whole keyspace on Redis).
	if n := store.segLists.Load(); n != 0 {
		t.Errorf("%d List calls for a thread's segments", n)
	}

	// The other user's nested thread keeps every message whole.
	other, first, err := keepAll.Transcript(t.Context(), "a/b")
	if err != nil || first != 0 || len(other) != 4*nested {
		t.Fatalf("a/b: %v, %d messages from %d", err, len(other), first)
	}
	for i, m := range other {
		for _, c := range m.ToolCalls {
			if c.Elided != nil || len(c.Arguments) < 60<<10 {
				t.Errorf("a/b message %d: arguments of %d bytes, elided %+v", i, len(c.Arguments), c.Elided)
			}
		}
	}
}

// TestTrust322_ThreadStoredWholeIsBoundedOnceContinued: a thread stored
// with every message whole (as before retention was the default, or with
// RetainMessages -1) is bounded by the first summary a default agent
// stores: it lists the thread's segments once, drops the oldest and
// elides the covered ones it keeps; later summaries list nothing. The
// thread has 100 turns under make reliability, 60 in make test (more than
// the 50 that retention keeps).
func TestTrust322_ThreadStoredWholeIsBoundedOnceContinued(t *testing.T) {
	t.Parallel()
	wholeTurns := suiteSize(100, 60)
	store := &listCounter{Store: storage.NewMemoryStore()}
	newAgent := func(h history.Config) *agentloop.Agent {
		pad, err := workingmemory.New(workingmemory.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return mustAgent(t, agentloop.Config{Model: scratchpadModel(), Store: store, Layers: []layer.Layer{pad}, History: h})
	}
	old := newAgent(history.Config{RetainMessages: -1})
	for i := range wholeTurns {
		if _, err := old.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("turn %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := storedBytes(t, store, storage.ThreadPrefix("t"))
	a := newAgent(history.Config{})
	for i := range 4 {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: fmt.Sprintf("more %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	after, records := storedBytes(t, store, storage.ThreadPrefix("t"))
	t.Logf("a thread of %d turns stored whole: %d bytes; 4 turns later, on the default: %d bytes in %d records", wholeTurns, before, after, records)
	if before < wholeTurns*(60<<10) || after > 1<<20 {
		t.Errorf("thread stored whole: %d bytes; continued on the default: %d", before, after)
	}
	if n := store.segLists.Load(); n != 1 {
		t.Errorf("%d List calls for the thread's segments, want 1", n)
	}
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", Input: "last"}); err != nil {
		t.Fatal(err)
	}
	msgs, first, err := a.Transcript(t.Context(), "t")
	if err != nil || first == 0 || first+len(msgs) != 4*(wholeTurns+5) {
		t.Errorf("transcript: %v, %d messages from %d", err, len(msgs), first)
	}
}

// TestTrust322_RetentionOnEveryBackend: on memory, SQLite and Redis, a
// thread of 40 turns of 60 KB updates (24 in make test, still more than
// twice the 10 turns retention keeps) keeps its window whole, the covered
// messages retention keeps elided, and a bounded number of bytes; after
// DeleteThread nothing of it is left (no rewrite brought a segment back).
func TestTrust322_RetentionOnEveryBackend(t *testing.T) {
	t.Parallel()
	turns := suiteSize(40, 24)
	for _, b := range eraseBackends() {
		t.Run(b.name, func(t *testing.T) {
			store, _ := b.open(t)
			pad, err := workingmemory.New(workingmemory.Config{})
			if err != nil {
				t.Fatal(err)
			}
			a := mustAgent(t, agentloop.Config{Model: scratchpadModel(), Store: store, Layers: []layer.Layer{pad},
				History: history.Config{RetainMessages: 40}})
			for i := range turns {
				if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t", ResourceID: "u", Input: fmt.Sprintf("turn %d", i)}); err != nil {
					t.Fatal(err)
				}
			}
			n, records := storedBytes(t, store, storage.ThreadPrefix("t"))
			t.Logf("%s: %d bytes in %d records after %d turns", b.name, n, records, turns)
			if n > 700<<10 {
				t.Errorf("%d bytes after %d turns of 60 KB updates, want at most 700 KiB", n, turns)
			}
			msgs, first, err := a.Transcript(t.Context(), "t")
			ck, err2 := a.LoadCheckpoint(t.Context(), "t")
			if err != nil || err2 != nil || first == 0 || first+len(msgs) != 4*turns {
				t.Fatalf("transcript: %v %v, %d messages from %d", err, err2, len(msgs), first)
			}
			for i, m := range msgs {
				for _, c := range m.ToolCalls {
					if covered := first+i < ck.First; covered != (c.Elided != nil) {
						t.Errorf("message %d (covered %v): %d bytes of arguments, elided %+v", first+i, covered, len(c.Arguments), c.Elided)
					}
				}
			}
			if _, err := (inspect.Inspector{Store: store}).DeleteThread(t.Context(), "t"); err != nil {
				t.Fatal(err)
			}
			if keys, err := store.List(t.Context(), storage.ThreadPrefix("t")); err != nil || len(keys) != 0 {
				t.Errorf("left after DeleteThread: %v, %v", keys, err)
			}
		})
	}
}
