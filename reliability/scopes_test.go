package reliability

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// scopeAgent is the agent of the scope scenarios: a resource-scoped
// scratchpad and semantic memory, a thread-scoped scratchpad ("notes"),
// key-value memory and episodic log, and a thread-scoped scratchpad
// offered to child agents ("child-notes", stored under the child's
// thread). Its model writes the user's input into each of them
// (and, for an input starting with "spawn", starts a child agent that
// writes the input into its own thread-scoped memory), and records the
// text of every request it is sent.
func scopeAgent(t *testing.T, st storage.Store, prompts *promptRecorder) *agentloop.Agent {
	t.Helper()
	wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}})
	if err != nil {
		t.Fatal(err)
	}
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	notes, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{ID: "notes", Slot: 110}})
	if err != nil {
		t.Fatal(err)
	}
	childNotes, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{ID: "child-notes", Slot: 120}})
	if err != nil {
		t.Fatal(err)
	}
	kvl, err := kv.NewLayer(kv.LayerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := episodicmemory.New(episodicmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	kvSet := agentloop.NewContextTool("kv_set", "Remember a value.", nil, func(ctx context.Context, run *agentloop.ToolContext, in struct {
		Value string `json:"value"`
	}) (string, error) {
		mem, err := kv.From(run.Stack(), "")
		if err != nil {
			return "", err
		}
		return "ok", kv.Set(mem, "last", in.Value)
	})
	update := layer.ToolName(workingmemory.DefaultID, "update")
	memorize := layer.ToolName(semanticmemory.DefaultID, "memorize")
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		prompts.add(r)
		user := r.LastUser()
		if len(r.ToolResults()) > 0 {
			return agenttest.Text("Noted."), nil
		}
		if strings.HasPrefix(user, "child ") {
			return agenttest.Calls(agenttest.Call("kv_set", map[string]any{"value": user}),
				agenttest.Call(layer.ToolName("child-notes", "update"), map[string]any{"child": user})), nil
		}
		calls := []llms.ToolCall{
			agenttest.Call(update, map[string]any{"note": user}),
			agenttest.Call(memorize, map[string]any{"text": "The user profile says " + user, "kind": "profile"}),
			agenttest.Call("kv_set", map[string]any{"value": user}),
		}
		if strings.HasPrefix(user, "spawn ") {
			calls = append(calls, agenttest.Call(agentloop.SpawnToolName, map[string]any{"input": "child " + user, "layers": []string{"child-notes"}}))
		}
		return agenttest.Calls(calls...), nil
	})
	a, err := agentloop.New(agentloop.Config{Model: model, Layers: []layer.Layer{wm, notes, sem, kvl, ep}, Tools: []agentloop.Tool{kvSet}, Store: st,
		SpawnLayers: []layer.Layer{childNotes}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// promptRecorder keeps the text of every request.
type promptRecorder struct {
	mu   sync.Mutex
	reqs []string
}

func (p *promptRecorder) add(r agenttest.Request) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.reqs = append(p.reqs, r.Sent())
	p.mu.Unlock()
}

// scopeUser is a user of the erase scenario: its resource, its threads
// and the marker in its inputs.
type scopeUser struct {
	resource string
	threads  []string
	marker   string
}

// eraseUsers returns n users whose IDs collide: user i owns a thread
// named like user i+1's resource ID, a thread "c<i>", and a thread
// "c<i-1>/child-care" named like a child of user i-1's.
func eraseUsers(n int) []scopeUser {
	users := make([]scopeUser, n)
	for i := range users {
		users[i] = scopeUser{
			resource: fmt.Sprintf("u%d", i),
			threads:  []string{fmt.Sprintf("u%d", (i+1)%n), fmt.Sprintf("c%d", i), fmt.Sprintf("c%d/child-care", (i+n-1)%n)},
			marker:   fmt.Sprintf("MARK%03dX", i),
		}
	}
	return users
}

// keyOwner returns the user a key belongs to, by the scenario's ground
// truth: a thread record's thread, a layer record's typed scope (a
// resource, or the thread — the root thread of a child agent — that owns
// it). ok is false for a key of no user (global state).
func keyOwner(key string, threadOwner map[string]string) (string, bool) {
	if rest, ok := strings.CutPrefix(key, "threads/"); ok {
		esc, _, _ := strings.Cut(rest, "/")
		id, err := storage.Unescape(esc)
		if err != nil {
			return "", false
		}
		o, ok := threadOwner[id]
		return o, ok
	}
	if rest, ok := strings.CutPrefix(key, "resources/"); ok { // a resource's own records
		esc, _, _ := strings.Cut(rest, "/")
		id, err := storage.Unescape(esc)
		return id, err == nil
	}
	parts := strings.SplitN(strings.TrimPrefix(key, "layers/"), "/", 3)
	if len(parts) != 3 {
		return "", false
	}
	p, ok := storage.ParseScopeKey(parts[1])
	if !ok {
		return "", false
	}
	switch p.Kind {
	case storage.KindResource:
		return p.ID, true
	case storage.KindThread, storage.KindAnonymous:
		o, ok := threadOwner[p.ID]
		return o, ok
	}
	return "", false
}

// oldRuleSelects is the erase's selection before scope keys were typed
// (the negative control): a layer record whose scope ID equals the
// resource ID or one of its thread IDs, whatever its kind, or starts with
// "<thread>/child-".
func oldRuleSelects(key, resource string, threads []string) bool {
	parts := strings.SplitN(strings.TrimPrefix(key, "layers/"), "/", 3)
	if !strings.HasPrefix(key, "layers/") || len(parts) != 3 {
		return false
	}
	p, ok := storage.ParseScopeKey(parts[1])
	if !ok {
		return false
	}
	for _, id := range []string{p.ID, p.Child} {
		if id == "" {
			continue
		}
		if id == resource || slices.Contains(threads, id) {
			return true
		}
		for _, th := range threads {
			if strings.HasPrefix(id, th+"/child-") {
				return true
			}
		}
	}
	return false
}

// TestEraseOverlappingUsers: users whose thread and resource IDs collide
// run their agents (with child agents) on one store, on every backend;
// one user after another stops its runs and is erased while the others'
// agents keep running. Every record the erase deletes must be the erased
// user's, and none of the erased user's may be left when it returns. The
// control applies the erase's old selection (IDs equal across kinds,
// thread-ID prefixes) to the same store and counts the other users'
// records it would have deleted.
func TestEraseOverlappingUsers(t *testing.T) {
	parallelInMakeTest(t)
	n, rounds := 4, 2 // every kind of ID collision of eraseUsers already at 4 users
	if heavy() {
		n, rounds = 12, 3
	}
	specs := append([]storeSpec{{Backend: "memory"}}, sharedBackends(t)...)
	for _, spec := range specs {
		t.Run(spec.Backend, func(t *testing.T) {
			parallelInMakeTest(t) // the backends' stores share nothing
			st := mustOpen(t, spec)
			ctx := t.Context()
			users := eraseUsers(n)
			owner := map[string]string{}
			for _, u := range users {
				for _, th := range u.threads {
					owner[th] = u.resource
				}
			}
			a := scopeAgent(t, st, nil)
			run := func(u scopeUser, r int) error {
				for k, th := range u.threads {
					input := fmt.Sprintf("%s round %d", u.marker, r)
					if k == 1 {
						input = "spawn " + input
					}
					if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: th, ResourceID: u.resource, Input: input}); err != nil {
						return fmt.Errorf("user %s thread %s: %w", u.resource, th, err)
					}
				}
				return nil
			}
			for _, u := range users {
				if err := run(u, 0); err != nil {
					t.Fatal(err)
				}
			}
			// Every user's agent runs until the user is erased.
			stop := make([]chan struct{}, n)
			var wg sync.WaitGroup
			done := make([]chan struct{}, n)
			for i, u := range users {
				stop[i], done[i] = make(chan struct{}), make(chan struct{})
				wg.Go(func() {
					defer close(done[i])
					for r := 1; ; r++ {
						select {
						case <-stop[i]:
							return
						default:
						}
						if err := run(u, r%rounds+1); err != nil && !errors.Is(err, agentloop.ErrCheckpoint) {
							t.Error(err)
							return
						}
					}
				})
			}
			var deletedOthers, left, controlOthers, erasedRecords, childRecords int
			start := time.Now()
			for i, u := range users {
				close(stop[i])
				<-done[i] // the application ends the user's runs, then erases
				keys, err := st.List(ctx, "layers/")
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					if o, ok := keyOwner(k, owner); ok && o != u.resource && oldRuleSelects(k, u.resource, u.threads) {
						controlOthers++
					}
					if parts := strings.SplitN(k, "/", 4); len(parts) == 4 {
						if p, ok := storage.ParseScopeKey(parts[2]); ok && p.Child != "" && p.ID == u.threads[1] {
							childRecords++
						}
					}
				}
				e, err := (inspect.Inspector{Store: st}).EraseResource(ctx, u.resource)
				if err != nil {
					t.Fatalf("erase %s: %v", u.resource, err)
				}
				erasedRecords += len(e.Keys)
				for _, k := range e.Keys {
					if o, ok := keyOwner(k, owner); !ok || o != u.resource {
						deletedOthers++
						t.Errorf("erasing %s deleted %q (of %q)", u.resource, k, o)
					}
				}
				all, err := st.List(ctx, "")
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range all {
					if o, ok := keyOwner(k, owner); ok && o == u.resource {
						left++
						t.Errorf("after erasing %s, its record %q is left", u.resource, k)
					}
				}
				for _, k := range all {
					it, err := st.Get(ctx, k)
					if err == nil && strings.Contains(string(it.Value), u.marker) {
						left++
						t.Errorf("after erasing %s, %q holds its marker", u.resource, k)
					}
				}
			}
			wg.Wait()
			t.Logf("FIGURE erase-overlap %s: %d users (thread IDs equal to other users' resource IDs and nested under other users' threads, child agents) erased one by one in %v while the others' agents ran: %d records erased (%d of child agents), %d of another user deleted, %d of the erased user left",
				spec.Backend, n, time.Since(start).Round(time.Millisecond), erasedRecords, childRecords, deletedOthers, left)
			t.Logf("FIGURE erase-overlap control %s: the old selection (IDs equal across kinds, thread-ID prefixes) would have deleted %d records of other users", spec.Backend, controlOthers)
			if childRecords == 0 {
				t.Errorf("no child agent stored a record: the scenario cannot see a child's erase")
			}
			if controlOthers == 0 {
				t.Errorf("control: the old selection deleted no other user's record: the scenario cannot see the defect")
			}
		})
	}
}

// TestAnonymousAndNamedRuns: named users and anonymous threads whose
// thread IDs are the users' resource IDs run at once on every backend:
// no prompt of one may show the other's marker, and no record of one's
// resource scope may hold the other's. The control maps an anonymous
// thread's resource scope to its thread ID in the resource namespace,
// as the fallback did before scope keys were typed, and leaks.
func TestAnonymousAndNamedRuns(t *testing.T) {
	parallelInMakeTest(t)
	n, runs := 6, 2
	if heavy() {
		n, runs = 16, 4
	}
	specs := append([]storeSpec{{Backend: "memory"}}, sharedBackends(t)...)
	for _, spec := range specs {
		t.Run(spec.Backend, func(t *testing.T) {
			leaked, prompts, stored := anonymousRuns(t, mustOpen(t, spec), n, runs, false)
			t.Logf("FIGURE anon-named %s: %d users and %d anonymous threads named like them, %d runs each, at once: %d leaked (%d in prompts, %d in stored memory)", spec.Backend, n, n, runs, leaked, prompts, stored)
			if leaked != 0 {
				t.Errorf("%d leaked", leaked)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		leaked, prompts, stored := anonymousRuns(t, storage.NewMemoryStore(), n, runs, true)
		t.Logf("FIGURE anon-named control (the old fallback: an anonymous thread's resource scope is its thread ID in the resource namespace): %d leaked (%d in prompts, %d in stored memory)", leaked, prompts, stored)
		if leaked == 0 {
			t.Errorf("control: nothing leaked: the scenario cannot see the defect")
		}
	})
}

// anonymousRuns runs n users (resource "u<i>", thread "t-u<i>") and n
// anonymous threads ("u<i>") concurrently and counts the markers that
// crossed between them; with oldFallback the anonymous runs get their
// thread ID as resource ID.
func anonymousRuns(t *testing.T, st storage.Store, n, runs int, oldFallback bool) (leaked, inPrompts, inStore int) {
	t.Helper()
	ctx := t.Context()
	type actor struct {
		thread, resource, marker, other string
		rec                             *promptRecorder
	}
	var actors []actor
	for i := range n {
		user := fmt.Sprintf("USER%03dQ", i)
		anon := fmt.Sprintf("ANON%03dQ", i)
		actors = append(actors,
			actor{thread: fmt.Sprintf("t-u%d", i), resource: fmt.Sprintf("u%d", i), marker: user, other: anon, rec: &promptRecorder{}},
			actor{thread: fmt.Sprintf("u%d", i), marker: anon, other: user, rec: &promptRecorder{}})
	}
	var wg sync.WaitGroup
	for _, ac := range actors {
		wg.Go(func() {
			a := scopeAgent(t, st, ac.rec)
			res := ac.resource
			if oldFallback && res == "" {
				res = ac.thread
			}
			for r := range runs {
				if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: ac.thread, ResourceID: res, Input: fmt.Sprintf("%s run %d", ac.marker, r)}); err != nil &&
					!errors.Is(err, agentloop.ErrCheckpoint) {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, ac := range actors {
		ac.rec.mu.Lock()
		for _, p := range ac.rec.reqs {
			if strings.Contains(p, ac.other) {
				inPrompts++
			}
		}
		ac.rec.mu.Unlock()
		// The resource-scoped records the actor reads.
		env := layer.Env{ThreadID: ac.thread, ResourceID: ac.resource}
		if oldFallback && ac.resource == "" {
			env.ResourceID = ac.thread
		}
		scope := env.ScopeKey(layer.ScopeResource)
		for _, id := range []string{workingmemory.DefaultID, semanticmemory.DefaultID} {
			keys, err := st.List(ctx, storage.LayerPrefix(id, scope))
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if it, err := st.Get(ctx, k); err == nil && strings.Contains(string(it.Value), ac.other) {
					inStore++
				}
			}
		}
	}
	return inPrompts + inStore, inPrompts, inStore
}
