package agentloop_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// forgeCheckpointMark rewrites the scope of the episodic layer's mark in
// the stored checkpoint of threadID to scope, as a corrupt or hostile
// store would.
func forgeCheckpointMark(t *testing.T, st storage.Store, threadID, scope string) {
	t.Helper()
	ctx := t.Context()
	it, err := st.Get(ctx, storage.ThreadKey(threadID, thread.HeadName))
	if err != nil {
		t.Fatal(err)
	}
	var head struct {
		Layers map[string]string `json:"layers"`
	}
	if err := json.Unmarshal(it.Value, &head); err != nil {
		t.Fatal(err)
	}
	name, ok := head.Layers[episodicmemory.DefaultStorageID]
	if !ok {
		t.Fatalf("the checkpoint of %s keeps no episodic snapshot: %s", threadID, it.Value)
	}
	key := storage.ThreadKey(threadID, name)
	rec, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(rec.Value, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m["scope"]; !ok {
		t.Fatalf("the episodic snapshot is not a mark: %s", rec.Value)
	}
	m["scope"], _ = json.Marshal(scope)
	forged, _ := json.Marshal(m)
	if _, err := st.Put(ctx, key, forged, storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
}

// markAgent returns an agent with a thread-scoped episodic layer that
// restores layers from checkpoints, whose model records each system
// prompt it is sent (in the slice systems points to) and stores the
// user's text as a page.
func markAgent(t *testing.T, st storage.Store) (*agentloop.Agent, *atomic.Pointer[[]string]) {
	t.Helper()
	ep, err := episodicmemory.New(episodicmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	createPage := agentloop.NewTool("createPage", "Create a page.", nil, func(ctx context.Context, in struct {
		Title string `json:"title"`
	}) (map[string]string, error) {
		return map[string]string{"id": "page-1", "title": in.Title}, nil
	})
	systems := &atomic.Pointer[[]string]{}
	systems.Store(&[]string{})
	var mu sync.Mutex
	model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
		mu.Lock()
		sent := append(slices.Clone(*systems.Load()), r.System())
		systems.Store(&sent)
		mu.Unlock()
		if len(r.ToolResults()) == 0 {
			return agenttest.Calls(agenttest.Call("createPage", map[string]any{"title": r.LastUser()})), nil
		}
		return agenttest.Text("Noted"), nil
	})
	a, err := agentloop.New(agentloop.Config{Model: model, Layers: []layer.Layer{ep}, Tools: []agentloop.Tool{createPage}, Store: st, RestoreLayers: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return a, systems
}

// TestTrust3Mark_CheckpointMarkOfAnotherUser: with Config.RestoreLayers,
// a thread's checkpoint whose episodic mark is rewritten to name another
// user's log (nested IDs "a" and "a/b", and an anonymous thread) is not
// restored: the next run of the thread shows nothing of the other user's
// episodes to the model and copies none of them into its own scope, and
// its own episodes are still recalled.
func TestTrust3Mark_CheckpointMarkOfAnotherUser(t *testing.T) {
	for _, b := range eraseBackends()[:2] {
		t.Run(b.name, func(t *testing.T) {
			st, _ := b.open(t)
			a, systems := markAgent(t, st)
			users := []scopeUser{{"a", "ta", "MARKAAA"}, {"a/b", "ta/b", "MARKSLASHB"}, {"", "anon", "MARKANON"}}
			runUsers(t, a, users)
			for i, u := range users {
				victim := users[(i+1)%len(users)]
				vs := layer.Env{ThreadID: victim.thread, ResourceID: victim.resource}.ScopeKey(layer.ScopeThread)
				forgeCheckpointMark(t, st, u.thread, vs)
				systems.Store(&[]string{})
				if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: u.thread, ResourceID: u.resource, Input: "what did I say?"}); err != nil {
					t.Fatalf("run %+v after the forged mark: %v", u, err)
				}
				sent := *systems.Load()
				if len(sent) == 0 || !strings.Contains(strings.Join(sent, "\n"), u.marker) {
					t.Errorf("user %q's own episodes are not recalled after the refused mark: %q", u.resource, sent)
				}
				for _, sys := range sent {
					if strings.Contains(sys, victim.marker) {
						t.Errorf("user %q was shown user %q's episodes:\n%s", u.resource, victim.resource, sys)
					}
				}
				own := storage.LayerPrefix(episodicmemory.DefaultStorageID, layer.Env{ThreadID: u.thread, ResourceID: u.resource}.ScopeKey(layer.ScopeThread))
				for _, k := range findMarker(t, st, victim.marker) {
					if strings.HasPrefix(k, own) || strings.HasPrefix(k, storage.ThreadPrefix(u.thread)) {
						t.Errorf("user %q's marker copied into user %q's records: %s", victim.resource, u.resource, k)
					}
				}
			}
		})
	}
}
