package agentloop_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// memorizeOnce runs one turn of resource's thread in which the model
// memorizes text as kind, and returns the write's route and the tool's
// result.
func memorizeOnce(t *testing.T, store storage.Store, resource, thread, text, kind string) (audit.Entry, string) {
	t.Helper()
	model := agenttest.New(agenttest.Reply(agenttest.Calls(memorize(text, kind))), agenttest.Reply(agenttest.Text("ok")))
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Layers: looptest.GateLayers(t)})
	res, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: thread, ResourceID: resource, Input: "Keep this."})
	if err != nil {
		t.Fatal(err)
	}
	routes := ops(res.Audit.Entries, audit.OpRoute)
	results := toolContents(res.Messages)
	if len(routes) != 1 || len(results) != 1 {
		t.Fatalf("routes %+v, results %q", routes, results)
	}
	return routes[0], results[0]
}

// TestGate27_NearDuplicatesPerUser: the default router's gate refuses a
// restatement of what a user's semantic memory holds, naming the stored
// fact, and keeps what was stored; a reworded fact is kept. Another
// user's memory does not count, whether their IDs differ, nest or are
// empty, or they write at once; after an erase, the restatement is new
// again.
func TestGate27_NearDuplicatesPerUser(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	const fact = "The user prefers oolong tea in the morning."
	if r, out := memorizeOnce(t, store, "u1", "t1", fact, "preference"); r.Refused || r.Layer != semanticmemory.DefaultID ||
		!strings.Contains(r.Reason, "novelty 1.00") || strings.Contains(out, "refused") {
		t.Fatalf("first write: %+v %q", r, out)
	}
	r, out := memorizeOnce(t, store, "u1", "t2", fact, "preference")
	if !r.Refused || !strings.Contains(r.Reason, "restates f") || !strings.Contains(out, "refused") || !strings.Contains(out, "novelty 0.00") {
		t.Errorf("restatement: %+v %q, want it refused naming the stored fact", r, out)
	}
	if r, _ := memorizeOnce(t, store, "u1", "t2b", "The user now prefers green tea after lunch.", "preference"); r.Refused {
		t.Errorf("a reworded fact was refused: %+v", r)
	}
	// What was stored survives the refusal: one live fact per write kept.
	sem, err := semanticmemory.New(semanticmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bound, err := sem.Init(ctx, layer.Env{ThreadID: "t3", ResourceID: "u1", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	facts, err := bound.(*semanticmemory.Layer).Facts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 2 || facts[0].Text != fact {
		t.Errorf("u1's facts %+v, want the first and the reworded one", facts)
	}

	// Other users: distinct, nested, empty (the thread is the resource).
	for _, u := range []struct{ resource, thread string }{{"u2", "u2-t1"}, {"u1/b", "u1b-t1"}, {"", "t9"}, {"", "t10"}} {
		if r, out := memorizeOnce(t, store, u.resource, u.thread, fact, "preference"); r.Refused {
			t.Errorf("resource %q thread %q: refused %q: another user's memory counted", u.resource, u.thread, out)
		}
	}
	// Two users at once.
	var wg sync.WaitGroup
	got := make([]audit.Entry, 2)
	for i, u := range []string{"u3", "u4"} {
		wg.Go(func() { got[i], _ = memorizeOnce(t, store, u, u+"-t1", fact, "preference") })
	}
	wg.Wait()
	for i, r := range got {
		if r.Refused {
			t.Errorf("user %d of two at once: refused %+v", i, r)
		}
	}
	// After u1's erase, the fact is new to u1 again; u2 keeps theirs.
	if _, err := (inspect.Inspector{Store: store}).EraseResource(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	if r, out := memorizeOnce(t, store, "u1", "t4", fact, "preference"); r.Refused {
		t.Errorf("after the erase: refused %q", out)
	}
	if r, _ := memorizeOnce(t, store, "u2", "t2c", fact, "preference"); !r.Refused {
		t.Errorf("u2's restatement after u1's erase was kept: %+v", r)
	}
}
