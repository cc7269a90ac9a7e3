package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/chainmemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
	"github.com/memlayer/memlayer/workingmemory"
)

// scopeUser is one user of the scope tests: a resource ID (empty for an
// anonymous run), the thread it runs on and the marker planted in its
// input.
type scopeUser struct{ resource, thread, marker string }

// markerKeys returns, for each marker, the keys whose key or value holds
// it, sorted.
func markerKeys(t *testing.T, st storage.Store, markers ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, m := range markers {
		hits := findMarker(t, st, m)
		slices.Sort(hits)
		out[m] = hits
	}
	return out
}

// runUsers runs each user's turn with its marker on the all-layers agent.
func runUsers(t *testing.T, a *agentloop.Agent, users []scopeUser) {
	t.Helper()
	for _, u := range users {
		if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: u.thread, ResourceID: u.resource, Input: "remember " + u.marker}); err != nil {
			t.Fatalf("run %+v: %v", u, err)
		}
	}
}

// TestTrust301_EraseStaysInItsUser: thread IDs that equal another user's
// resource ID, and a thread named like another thread's child, are
// different scopes. Erasing one user deletes every record holding its
// marker and not one record holding another user's, on every backend.
func TestTrust301_EraseStaysInItsUser(t *testing.T) {
	for _, b := range eraseBackends() {
		t.Run(b.name, func(t *testing.T) {
			st, _ := b.open(t)
			a := allLayersAgent(t, st)
			users := []scopeUser{
				{"7", "u7-main", "MARKSEVEN"},     // user 7
				{"3", "7", "MARKTHREE"},           // user 3 owns a thread named "7"
				{"c-owner", "c1", "MARKCONE"},     // the owner of thread c1
				{"d", "c1/child-care", "MARKDEE"}, // another user's thread under c1's name
				{"x", "x", "MARKEX"},              // a user whose thread has its own name
			}
			runUsers(t, a, users)
			var markers []string
			for _, u := range users {
				markers = append(markers, u.marker)
			}
			before := markerKeys(t, st, markers...)
			for _, m := range markers {
				if len(before[m]) == 0 {
					t.Fatalf("marker %s stored nowhere: the test cannot see an erase", m)
				}
			}
			left := slices.Clone(users)
			for _, victim := range []string{"3", "c-owner", "7"} {
				if _, err := (inspect.Inspector{Store: st}).EraseResource(t.Context(), victim); err != nil {
					t.Fatalf("erase %s: %v", victim, err)
				}
				left = slices.DeleteFunc(left, func(u scopeUser) bool { return u.resource == victim })
				after := markerKeys(t, st, markers...)
				for _, u := range users {
					switch {
					case u.resource == victim:
						if len(after[u.marker]) > 0 {
							t.Errorf("erase %s left its records: %q", victim, after[u.marker])
						}
					case slices.Contains(left, u):
						if lost := slices.DeleteFunc(slices.Clone(before[u.marker]), func(k string) bool { return slices.Contains(after[u.marker], k) }); len(lost) > 0 {
							t.Errorf("erase of user %s deleted %d records of user %s (thread %q): %q", victim, len(lost), u.resource, u.thread, lost)
						}
					}
				}
			}
		})
	}
}

// scopeSpyAgent is an agent with a resource-scoped scratchpad and
// semantic memory whose model writes the user's input into both and
// records every prompt it is sent.
func scopeSpyAgent(t *testing.T, st storage.Store) (*agentloop.Agent, *promptLog) {
	t.Helper()
	wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	log := &promptLog{}
	update := layer.ToolName(workingmemory.DefaultID, "update")
	memorize := layer.ToolName(semanticmemory.DefaultID, "memorize")
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		log.add(r)
		user := r.LastUser()
		if len(r.ToolResults()) == 0 {
			return agenttest.Calls(
				agenttest.Call(update, map[string]any{"note": user}),
				agenttest.Call(memorize, map[string]any{"text": "The user profile says " + user, "kind": "profile"}),
			), nil
		}
		return agenttest.Text("Noted."), nil
	})
	a, err := agentloop.New(agentloop.Config{Model: model, Layers: []layer.Layer{wm, sem}, Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return a, log
}

// promptLog keeps the text of every request a model was sent.
type promptLog struct {
	mu   sync.Mutex
	reqs []string
}

func (p *promptLog) add(r agenttest.Request) {
	p.mu.Lock()
	p.reqs = append(p.reqs, r.Sent())
	p.mu.Unlock()
}

// seen counts the requests since from that hold s.
func (p *promptLog) seen(from int, s string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.reqs[from:] {
		if strings.Contains(r, s) {
			n++
		}
	}
	return n
}

func (p *promptLog) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

// TestTrust302_AnonymousThreadHasItsOwnResourceScope: a run on thread "7"
// without a resource is neither shown user 7's resource-scoped memory nor
// writes into it, and user 7 is not shown the anonymous thread's; an
// anonymous thread keeps its own resource-scoped memory across runs and
// loses it to DeleteThread.
func TestTrust302_AnonymousThreadHasItsOwnResourceScope(t *testing.T) {
	for _, b := range eraseBackends() {
		t.Run(b.name, func(t *testing.T) {
			st, _ := b.open(t)
			a, log := scopeSpyAgent(t, st)
			ctx := t.Context()
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "u7-main", ResourceID: "7", Input: "USERSEVENSECRET"}); err != nil {
				t.Fatal(err)
			}
			from := log.len()
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "7", Input: "ANONWRITES"}); err != nil {
				t.Fatal(err)
			}
			if n := log.seen(from, "USERSEVENSECRET"); n > 0 {
				t.Errorf("the anonymous run on thread 7 was shown user 7's memory in %d requests", n)
			}
			from = log.len()
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "u7-other", ResourceID: "7", Input: "hello again"}); err != nil {
				t.Fatal(err)
			}
			if n := log.seen(from, "ANONWRITES"); n > 0 {
				t.Errorf("user 7 was shown the anonymous thread's writes in %d requests", n)
			}
			if n := log.seen(from, "USERSEVENSECRET"); n == 0 {
				t.Errorf("user 7 was not shown its own memory on its second thread: the test cannot see a leak")
			}
			// The anonymous thread keeps its own memory.
			from = log.len()
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "7", Input: "and again"}); err != nil {
				t.Fatal(err)
			}
			if n := log.seen(from, "ANONWRITES"); n == 0 {
				t.Errorf("the anonymous thread lost its own resource-scoped memory")
			}
			// Erasing user 7 keeps the anonymous thread's; deleting the
			// thread removes it.
			if _, err := (inspect.Inspector{Store: st}).EraseResource(ctx, "7"); err != nil {
				t.Fatal(err)
			}
			if hits := findMarker(t, st, "ANONWRITES"); len(hits) == 0 {
				t.Errorf("erasing user 7 deleted the anonymous thread 7's memory")
			}
			if hits := findMarker(t, st, "USERSEVENSECRET"); len(hits) > 0 {
				t.Errorf("erasing user 7 left %q", hits)
			}
			if _, err := (inspect.Inspector{Store: st}).DeleteThread(ctx, "7"); err != nil {
				t.Fatal(err)
			}
			if hits := findMarker(t, st, "ANONWRITES"); len(hits) > 0 {
				t.Errorf("deleting the anonymous thread 7 left %q", hits)
			}
		})
	}
}

// TestTrust301_LegacyKeysMoveOnLoad: records stored under the untyped
// scope keys of earlier versions move under the typed keys when a stack
// loads them — the frozen episodic log of format 1 included — except
// that a thread without a resource adopts nothing: the untyped record
// under its thread ID may be a user's of that name.
func TestTrust301_LegacyKeysMoveOnLoad(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "episodicmemory", "testdata", "log-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var frozen struct {
		Records map[string]json.RawMessage `json:"records"`
	}
	if err := json.Unmarshal(data, &frozen); err != nil {
		t.Fatal(err)
	}
	for _, b := range eraseBackends() {
		t.Run(b.name, func(t *testing.T) {
			st, _ := b.open(t)
			ctx := t.Context()
			legacyPad := storage.LegacyLayerPrefix(workingmemory.DefaultStorageID, "7") + storage.Escape("state")
			if _, err := st.Put(ctx, legacyPad, []byte(`{"note":"LEGACYSEVEN"}`), storage.NoVersion); err != nil {
				t.Fatal(err)
			}
			for name, v := range frozen.Records {
				if _, err := st.Put(ctx, storage.LegacyLayerPrefix(episodicmemory.DefaultStorageID, "t")+storage.Escape(name), v, storage.NoVersion); err != nil {
					t.Fatal(err)
				}
			}
			a, log := scopeSpyAgent(t, st)
			// An anonymous thread named "7" adopts nothing.
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "7", Input: "hello"}); err != nil {
				t.Fatal(err)
			}
			if n := log.seen(0, "LEGACYSEVEN"); n > 0 {
				t.Errorf("the anonymous thread 7 was shown the untyped record of key 7 in %d requests", n)
			}
			if _, err := st.Get(ctx, legacyPad); err != nil {
				t.Errorf("the anonymous thread moved the untyped record: %v", err)
			}
			// User 7 adopts it.
			from := log.len()
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "u7", ResourceID: "7", Input: "hello"}); err != nil {
				t.Fatal(err)
			}
			if n := log.seen(from, "LEGACYSEVEN"); n == 0 {
				t.Errorf("user 7 was not shown its untyped record")
			}
			if _, err := st.Get(ctx, legacyPad); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("the untyped record is still there after the move: %v", err)
			}
			// The frozen log of thread t loads through a stack.
			ep, err := episodicmemory.New(episodicmemory.Config{CompactAfter: 4, Retain: 3})
			if err != nil {
				t.Fatal(err)
			}
			s, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{ep}, Env: layer.Env{ThreadID: "t", Store: st}})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Init(ctx); err != nil {
				t.Fatal(err)
			}
			defer s.Close(ctx)
			l, _ := layer.Find[*episodicmemory.Layer](s, episodicmemory.DefaultID)
			if l == nil || l.Metrics()["entries"] != 10 {
				t.Fatalf("the frozen log moved and loaded: %v", l)
			}
			if e, whole, err := l.Read(ctx, "call-8"); err != nil || !whole || !strings.Contains(e.Result, "page-8") {
				t.Errorf("Read(call-8) of the moved log = %+v %v %v", e, whole, err)
			}
			if keys, _ := st.List(ctx, storage.LegacyLayerPrefix(episodicmemory.DefaultStorageID, "t")); len(keys) != 0 {
				t.Errorf("untyped records left after the move: %q", keys)
			}
		})
	}
}

// TestTrust303_OwnerKept: a thread continued once without its resource
// keeps its owner (and its resource-scoped memory), so erasing the user
// erases it; a run naming another resource for it is refused and writes
// nothing; the langchaingo Memory with an audit records whose thread it
// writes the user's text to, so that Threads lists it and EraseResource
// deletes it.
func TestTrust303_OwnerKept(t *testing.T) {
	for _, b := range eraseBackends() {
		t.Run(b.name, func(t *testing.T) {
			st, _ := b.open(t)
			ctx := t.Context()
			in := inspect.Inspector{Store: st}
			a, log := scopeSpyAgent(t, st)
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t-9", ResourceID: "u9", Input: "FIRSTTURN"}); err != nil {
				t.Fatal(err)
			}
			from := log.len()
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t-9", Input: "SECONDTURN"}); err != nil {
				t.Fatal(err)
			}
			if log.seen(from, "FIRSTTURN") == 0 {
				t.Errorf("the continuation without a resource was not shown the thread's memory")
			}
			if ts, err := in.Threads(ctx, inspect.ThreadQuery{ResourceID: "u9"}); err != nil || len(ts) != 1 || ts[0].ThreadID != "t-9" {
				t.Errorf("u9's threads after a continuation without its resource: %+v, %v", ts, err)
			}
			// Another resource on the thread is refused, and nothing is
			// written.
			keys, _ := st.List(ctx, "")
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t-9", ResourceID: "intruder", Input: "INTRUDER"}); !errors.Is(err, thread.ErrOtherOwner) || !errors.Is(err, agentloop.ErrInvalidConfig) {
				t.Errorf("a run of another resource on the thread: %v, want ErrOtherOwner", err)
			}
			if after, _ := st.List(ctx, ""); len(after) != len(keys) || len(findMarker(t, st, "INTRUDER")) > 0 {
				t.Errorf("the refused run wrote: %d keys before, %d after", len(keys), len(after))
			}

			// The langchaingo Memory's audit names its owner.
			sem, err := semanticmemory.New(semanticmemory.Config{})
			if err != nil {
				t.Fatal(err)
			}
			s := looptest.NewInitStackOn(t, layer.Env{ThreadID: "chain-1", ResourceID: "u9", Store: st}, sem)
			mem := chainmemory.New(s, chainmemory.Config{Audit: audit.New(audit.Config{Store: st}), ThreadID: "chain-1", ResourceID: "u9"})
			in1 := map[string]any{"input": "remember CHAINTEXT"}
			if _, err := mem.LoadMemoryVariables(ctx, in1); err != nil {
				t.Fatal(err)
			}
			memorize := `{"text":"The user said CHAINTEXT.","kind":"note"}`
			var out string
			for _, tool := range mem.Tools() {
				if tool.Name() == "semantic_memory_memorize" {
					if out, err = tool.Call(ctx, memorize); err != nil {
						t.Fatal(err)
					}
				}
			}
			steps := []schema.AgentStep{{Action: schema.AgentAction{Tool: "semantic_memory_memorize", ToolInput: memorize, ToolID: "c1"}, Observation: out}}
			if err := mem.SaveContext(ctx, in1, map[string]any{"output": "ok", "intermediateSteps": steps}); err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(findMarker(t, st, "CHAINTEXT"), func(k string) bool { return strings.HasPrefix(k, storage.ThreadPrefix("chain-1")) }) {
				t.Fatal("the Memory's audit holds no text: the test cannot see an erase")
			}
			ts, err := in.Threads(ctx, inspect.ThreadQuery{ResourceID: "u9"})
			if err != nil || len(ts) != 2 {
				t.Errorf("u9's threads with the chain's: %+v, %v", ts, err)
			}
			// A Memory of another user on that thread writes no audit.
			other := chainmemory.New(s, chainmemory.Config{Audit: audit.New(audit.Config{Store: st}), ThreadID: "chain-1", ResourceID: "intruder"})
			if err := other.SaveContext(ctx, map[string]any{"input": "x"}, map[string]any{"output": "y"}); !errors.Is(err, thread.ErrOtherOwner) {
				t.Errorf("another user's Memory on the thread: %v, want ErrOtherOwner", err)
			}

			if _, err := in.EraseResource(ctx, "u9"); err != nil {
				t.Fatal(err)
			}
			for _, m := range []string{"FIRSTTURN", "SECONDTURN", "CHAINTEXT"} {
				if hits := findMarker(t, st, m); len(hits) > 0 {
					t.Errorf("erasing u9 left %s in %q", m, hits)
				}
			}
			if left, _ := st.List(ctx, ""); len(left) != 0 {
				t.Errorf("erasing the only user left %q", left)
			}
		})
	}
}

// hookStore calls a hook before each Put or Delete of the store it wraps.
type hookStore struct {
	storage.Store
	mu       sync.Mutex
	onPut    func(key string)
	onDelete func(key string)
}

func (h *hookStore) hooks() (func(string), func(string)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.onPut, h.onDelete
}

func (h *hookStore) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	if put, _ := h.hooks(); put != nil {
		put(key)
	}
	return h.Store.Put(ctx, key, value, ifVersion)
}

func (h *hookStore) Delete(ctx context.Context, key string, ifVersion int64) error {
	if _, del := h.hooks(); del != nil {
		del(key)
	}
	return h.Store.Delete(ctx, key, ifVersion)
}

// TestTrust304_EraseRacingARun: a run of the user that writes its
// segments, summary and layer snapshots after the erase listed the
// thread's keys, and rewrites the head before the erase deletes it,
// leaves nothing once the erase returns; a run that is still going when
// the erase ends cannot save its checkpoint (ErrCheckpointGone), removes
// what that save wrote and its thread's memory, and whatever else it
// wrote stays reachable: the next erase of the user leaves nothing.
func TestTrust304_EraseRacingARun(t *testing.T) {
	for _, b := range eraseBackends() {
		t.Run(b.name, func(t *testing.T) {
			raw, _ := b.open(t)
			st := &hookStore{Store: raw}
			ctx := t.Context()
			in := inspect.Inspector{Store: st}
			a := allLayersAgent(t, st)
			for i := range 3 {
				if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t-1", ResourceID: "u1", Input: fmt.Sprintf("EARLYMARK %d", i)}); err != nil {
					t.Fatal(err)
				}
			}
			// A run completes between the erase's listing and its delete
			// of the head.
			var fired atomic.Bool
			st.onDelete = func(string) {
				if fired.CompareAndSwap(false, true) {
					if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t-1", ResourceID: "u1", Input: "LATEMARK"}); err != nil {
						t.Errorf("the racing run: %v", err)
					}
				}
			}
			if _, err := in.EraseResource(ctx, "u1"); err != nil {
				t.Fatal(err)
			}
			st.onDelete = nil
			for _, m := range []string{"EARLYMARK", "LATEMARK"} {
				if hits := findMarker(t, st, m); len(hits) > 0 {
					t.Errorf("after the erase returned, %s is left in %d records: %q", m, len(hits), hits)
				}
			}
			if left, _ := st.List(ctx, ""); len(left) > 0 {
				t.Errorf("after the erase returned, %d records are left: %q", len(left), left)
			}

			// The erase happens while a run is saving its step.
			if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t-2", ResourceID: "u1", Input: "FIRSTMARK"}); err != nil {
				t.Fatal(err)
			}
			var fired2 atomic.Bool
			st.onPut = func(key string) {
				if strings.HasPrefix(key, storage.ThreadPrefix("t-2")+"seg") && fired2.CompareAndSwap(false, true) {
					if _, err := in.EraseResource(ctx, "u1"); err != nil {
						t.Errorf("erase during the run: %v", err)
					}
				}
			}
			_, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t-2", ResourceID: "u1", Input: "RACEMARK"})
			st.onPut = nil
			if !errors.Is(err, agentloop.ErrCheckpointGone) {
				t.Errorf("the run whose thread was erased: %v, want ErrCheckpointGone", err)
			}
			left, _ := st.List(ctx, "")
			reach, err := in.ResourceKeys(ctx, "u1")
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range left {
				if !slices.Contains(reach, k) {
					t.Errorf("record %q is left and no erase of u1 finds it", k)
				}
			}
			if _, err := in.EraseResource(ctx, "u1"); err != nil {
				t.Fatal(err)
			}
			if left, _ := st.List(ctx, ""); len(left) > 0 {
				t.Errorf("after the second erase, %d records are left: %q", len(left), left)
			}
		})
	}
}

// TestTrust301_LegacyRecordsErased: records of the untyped layout that no
// run has moved yet are erased with their user when their key is the
// user's resource ID, one of its thread IDs or a generated child thread
// ID of one; a key that is also another owner's ID (a thread of another
// user named like the erased resource) is kept and reported, and other
// users' untyped records are kept.
func TestTrust301_LegacyRecordsErased(t *testing.T) {
	for _, b := range eraseBackends() {
		t.Run(b.name, func(t *testing.T) {
			st, _ := b.open(t)
			ctx := t.Context()
			a, _ := scopeSpyAgent(t, st)
			for _, r := range []agentloop.RunInput{
				{ThreadID: "t5", ResourceID: "u5", Input: "hi"},
				{ThreadID: "u5", ResourceID: "u6", Input: "hi"}, // user u6's thread named like u5
			} {
				if _, err := a.Run(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			legacy := func(scope string) string { return storage.LegacyLayerPrefix("old-layer", scope) + "state" }
			for _, scope := range []string{"t5", "t5/child-1-0123456789ab", "t5/child-care", "u5", "u6"} {
				if _, err := st.Put(ctx, legacy(scope), []byte("old "+scope), storage.NoVersion); err != nil {
					t.Fatal(err)
				}
			}
			e, err := (inspect.Inspector{Store: st}).EraseResource(ctx, "u5")
			if err != nil {
				t.Fatal(err)
			}
			for _, scope := range []string{"t5", "t5/child-1-0123456789ab"} {
				if !slices.Contains(e.Keys, legacy(scope)) {
					t.Errorf("the untyped record of %q was not erased: %q", scope, e.Keys)
				}
			}
			if !slices.Equal(e.Ambiguous, []string{legacy("u5")}) {
				t.Errorf("ambiguous = %q, want the untyped record of u5 (also user u6's thread)", e.Ambiguous)
			}
			for _, scope := range []string{"u5", "u6", "t5/child-care"} {
				if _, err := st.Get(ctx, legacy(scope)); err != nil {
					t.Errorf("the untyped record of %q was deleted: %v", scope, err)
				}
			}
		})
	}
}

// TestTrust303_AuditWithoutHeadIsOwned: a spawn from code on a thread
// that has no head, and a run that fails before saving a step, commit
// their audit turn under a thread that names its owner, so erasing the
// user leaves nothing.
func TestTrust303_AuditWithoutHeadIsOwned(t *testing.T) {
	for _, b := range eraseBackends() {
		t.Run(b.name, func(t *testing.T) {
			st, _ := b.open(t)
			ctx := t.Context()
			a := allLayersAgent(t, st)
			if _, err := a.Spawn(ctx, agentloop.SpawnInput{ThreadID: "spawned", ResourceID: "u8", Input: "SPAWNMARK"}); err != nil {
				t.Fatal(err)
			}
			failing, err := agentloop.New(agentloop.Config{Store: st, Model: agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
				return nil, errors.New("provider down")
			})})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := failing.Run(ctx, agentloop.RunInput{ThreadID: "failed", ResourceID: "u8", Input: "FAILMARK"}); err == nil {
				t.Fatal("the failing model's run succeeded")
			}
			if len(findMarker(t, st, "SPAWNMARK")) == 0 {
				t.Fatal("the spawn stored nothing: the test cannot see an erase")
			}
			if _, err := (inspect.Inspector{Store: st}).EraseResource(ctx, "u8"); err != nil {
				t.Fatal(err)
			}
			if left, _ := st.List(ctx, ""); len(left) > 0 {
				t.Errorf("erasing u8 left %q", left)
			}
		})
	}
}
