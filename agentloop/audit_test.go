package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/route"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
)

const memorizeTool = semanticmemory.DefaultID + "_memorize"

// memorize is a call of semantic memory's memorize tool.
func memorize(text, kind string) llms.ToolCall {
	return agenttest.Call(memorizeTool, map[string]any{"text": text, "kind": kind})
}

// openPage is a tool whose n-th call opens page pn.
func openPage() agentloop.Tool {
	var n atomic.Int64
	return agentloop.Tool{Name: "open_page", Description: "Opens the next page.",
		Call: func(context.Context, json.RawMessage) (string, error) {
			i := n.Add(1)
			return fmt.Sprintf(`{"page":{"id":"p%d","title":"Page %d"}}`, i, i), nil
		}}
}

// routed returns the writes that are not a layer Store's counts.
func routed(writes []audit.Entry) []audit.Entry {
	return slices.DeleteFunc(slices.Clone(writes), func(e audit.Entry) bool { return e.Source == "store" })
}

func ops(events []audit.Entry, op audit.Op) []audit.Entry {
	var out []audit.Entry
	for _, e := range events {
		if e.Op == op {
			out = append(out, e)
		}
	}
	return out
}

// TestMemory74_RunAuditsItsTurn: one run's audit, committed with the
// thread and read back with Agent.Audit, lists the recalls (with scored
// assembly, every candidate with its score and whether it was packed),
// the route and write of each memorize call, the supersede of a restated
// fact, the entity memory's eviction and the redactions; Result.Writes
// lists what was written and Result.Audit is the committed turn.
func TestMemory74_RunAuditsItsTurn(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(memorize("The user drinks green tea every morning.", "preference"), agenttest.Call("open_page", `{}`))),
		agenttest.Reply(agenttest.Calls(
			memorize("The user drinks green tea every morning, no sugar.", "preference"),
			memorize("Mail the user at alice@example.com about tea.", "profile"),
			agenttest.Call("open_page", `{}`))),
		agenttest.Reply(agenttest.Text("Green tea it is.")),
	)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	a := mustAgent(t, agentloop.Config{Model: model, Store: store, Layers: looptest.GateLayers(t), Tools: []agentloop.Tool{openPage()},
		Assembly: agentloop.AssemblyConfig{Scoring: prompt.Scoring{Now: now}}})
	res, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "What do I drink in the morning? Tea?"})
	if err != nil {
		t.Fatal(err)
	}
	turns, err := a.Audit(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || res.Audit == nil || res.Audit.Seq != 1 {
		t.Fatalf("turns %d, Result.Audit %+v", len(turns), res.Audit)
	}
	ev := turns[0].Entries
	if fmt.Sprint(ev) != fmt.Sprint(res.Audit.Entries) {
		t.Fatalf("stored turn differs from Result.Audit:\n%+v\n%+v", ev, res.Audit.Entries)
	}
	var writes []audit.Entry // semantic memory's
	extracted, episodes := 0, 0
	for _, w := range res.Writes {
		switch w.Layer {
		case semanticmemory.DefaultID:
			writes = append(writes, w)
		case entitymemory.DefaultID:
			extracted += w.Count
		case episodicmemory.DefaultID:
			episodes += w.Count
		}
	}
	if episodes != 6 { // five tool calls and the turn's outcome
		t.Errorf("episodes logged %d, want 6: %+v", episodes, res.Writes)
	}
	if len(writes) != 4 { // the fact, its second version and the supersede, the e-mail's fact
		t.Fatalf("Result.Writes %+v, want 4 of semantic memory", res.Writes)
	}
	if extracted != 2 { // a page at each step
		t.Errorf("entities extracted %d, want 2: %+v", extracted, res.Writes)
	}
	fact := writes[0].Key

	// Recall: at step 2 the fact is a candidate, scored and packed.
	var packed, scored bool
	for _, e := range ops(ev, audit.OpRecall) {
		for _, c := range e.Candidates {
			if c.Layer != e.Layer || c.Tokens <= 0 {
				t.Errorf("candidate %+v in %s's recall", c, e.Layer)
			}
			if e.Step == 2 && c.Layer == semanticmemory.DefaultID && c.Key == fact {
				scored = c.Score > 0
				packed = c.Packed
			}
		}
	}
	if !scored || !packed {
		t.Errorf("fact %s not a scored, packed candidate at step 2: %+v", fact, ops(ev, audit.OpRecall))
	}

	// Routes and writes.
	routes := ops(ev, audit.OpRoute)
	if len(routes) != 3 {
		t.Fatalf("routes %+v, want 3", routes)
	}
	for _, r := range routes {
		if r.Layer != semanticmemory.DefaultID || r.Refused || r.Reason == "" {
			t.Errorf("route %+v", r)
		}
	}
	if fmt.Sprint(res.Writes) != fmt.Sprint(turns[0].Writes()) {
		t.Errorf("Result.Writes %+v\nturn's writes %+v", res.Writes, turns[0].Writes())
	}
	sup := ops(ev, audit.OpSupersede)
	if len(sup) != 1 || sup[0].Key != fact || sup[0].Version != 2 || sup[0].Step != 1 {
		t.Errorf("supersedes %+v", sup)
	}
	for _, w := range ops(ev, audit.OpWrite) {
		if strings.Contains(w.Text, "alice@example.com") {
			t.Errorf("write audited unmasked: %+v", w)
		}
		if w.Layer == semanticmemory.DefaultID && (w.Key == "" || w.Version == 0 || w.Source == "") {
			t.Errorf("write %+v", w)
		}
	}

	// The entity memory, of capacity 1, evicted the first page for the
	// second.
	if evs := ops(ev, audit.OpEvict); len(evs) != 1 || evs[0].Count != 1 || evs[0].Layer != entitymemory.DefaultID || evs[0].Step != 1 {
		t.Errorf("evictions %+v", evs)
	}
	// The e-mail address was masked, and said so.
	var emails int
	for _, e := range ops(ev, audit.OpRedact) {
		if e.Kind == "email" {
			emails += e.Count
		}
	}
	if emails == 0 {
		t.Errorf("no redaction of the e-mail audited: %+v", ops(ev, audit.OpRedact))
	}
	// Nothing of the audit holds the address.
	keys, _ := store.List(ctx, "")
	for _, k := range keys {
		if it, _ := store.Get(ctx, k); bytes.Contains(it.Value, []byte("alice@example.com")) {
			t.Errorf("%s holds the e-mail address", k)
		}
	}
}

// TestMemory75_DefaultRouterRoutesByKind: the default router sends
// reasoning to the scratchpad, an outcome to the episode log and a
// durable fact to semantic memory, routes a kind it does not know by its
// text, and refuses a write its gate does not pass (here one rated
// unimportant with no sign of importance in its text), or a target the
// agent lacks, with the reason in the audit and in the tool's result.
func TestMemory75_DefaultRouterRoutesByKind(t *testing.T) {
	ctx := t.Context()
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(
			memorize("Check the invoice total before answering.", "reasoning"),
			memorize("Sent the invoice to accounting.", "outcome"),
			memorize("The user's company is Acme.", "profile"),
			memorize("The invoices are always due on the 5th.", "gossip"),
			agenttest.Call(memorizeTool, map[string]any{"text": "something odd", "kind": "aside", "importance": 0.05}))),
		agenttest.Reply(agenttest.Text("Done.")),
	)
	layers := looptest.GateLayers(t)
	a := mustAgent(t, agentloop.Config{Model: model, Layers: layers})
	res, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "Handle the invoice."})
	if err != nil {
		t.Fatal(err)
	}
	results := toolContents(res.Messages)
	if len(results) != 5 {
		t.Fatalf("tool results %q", results)
	}
	routes := ops(res.Audit.Entries, audit.OpRoute)
	want := []struct{ layer, kind string }{{workingmemory.DefaultID, "reasoning"}, {episodicmemory.DefaultID, "outcome"}, {semanticmemory.DefaultID, "profile"},
		{semanticmemory.DefaultID, "gossip"}, {"", "aside"}}
	if len(routes) != len(want) {
		t.Fatalf("routes %+v", routes)
	}
	for i, w := range want {
		// Calls run concurrently: find the route by kind.
		j := slices.IndexFunc(routes, func(e audit.Entry) bool { return e.Kind == w.kind })
		if j < 0 {
			t.Fatalf("no route for %s: %+v", w.kind, routes)
		}
		r := routes[j]
		if r.Layer != w.layer || r.Refused != (w.layer == "") || r.Reason == "" {
			t.Errorf("route %d: %+v, want layer %q", i, r, w.layer)
		}
	}
	if r := routes[slices.IndexFunc(routes, func(e audit.Entry) bool { return e.Kind == "gossip" })]; !strings.Contains(r.Reason, `"gossip"`) || !strings.Contains(r.Reason, "text") {
		t.Errorf("route of the unknown kind %q does not say it was routed by its text", r.Reason)
	}
	if refused := routes[slices.IndexFunc(routes, func(e audit.Entry) bool { return e.Refused })]; !strings.Contains(refused.Reason, "importance 0.05") {
		t.Errorf("refusal reason %q does not name the importance", refused.Reason)
	}
	if !strings.Contains(results[4], "refused") || !strings.Contains(results[4], "importance") {
		t.Errorf("refused call's result %q", results[4])
	}
	// What went where: the profile and the unknown kind are facts; the
	// reasoning is on the scratchpad; the outcome is the step's episode.
	turns, err := a.Audit(ctx, "t1")
	if err != nil || len(turns) != 1 {
		t.Fatal(turns, err)
	}
	var written []string
	for _, w := range routed(res.Writes) {
		written = append(written, w.Layer+":"+w.Kind)
	}
	slices.Sort(written)
	if !slices.Equal(written, []string{episodicmemory.DefaultID + ":outcome", semanticmemory.DefaultID + ":gossip", semanticmemory.DefaultID + ":profile", workingmemory.DefaultID + ":reasoning"}) {
		t.Errorf("writes %v", written)
	}
	// The next run's prompt shows the reasoning on the scratchpad.
	model2 := agenttest.New(agenttest.Reply(agenttest.Text("ok")))
	cfg := a.Config()
	cfg.Model = model2
	if _, err := mustAgent(t, cfg).Run(ctx, agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "And now?"}); err != nil {
		t.Fatal(err)
	}
	sys := model2.Requests()[0].System()
	if !strings.Contains(sys, "Check the invoice total") || strings.Contains(sys, "[f1 reasoning]") {
		t.Errorf("system prompt:\n%s", sys)
	}

	// Without a scratchpad, reasoning is refused, saying why.
	model3 := agenttest.New(agenttest.Reply(agenttest.Calls(memorize("Think first.", "reasoning"))), agenttest.Reply(agenttest.Text("ok")))
	a3 := mustAgent(t, agentloop.Config{Model: model3, Layers: layers[2:]})
	res3, err := a3.Run(ctx, agentloop.RunInput{ThreadID: "t3", Input: "Go."})
	if err != nil {
		t.Fatal(err)
	}
	r3 := ops(res3.Audit.Entries, audit.OpRoute)
	if len(r3) != 1 || !r3[0].Refused || !strings.Contains(r3[0].Reason, "scratchpad") || len(routed(res3.Writes)) != 0 {
		t.Errorf("no scratchpad: routes %+v, writes %+v", r3, res3.Writes)
	}
}

// TestMemory76_CustomRouter: a Router the user supplies decides instead
// of the default table.
func TestMemory76_CustomRouter(t *testing.T) {
	ctx := t.Context()
	var seen []layer.Write
	router := route.Func(func(_ context.Context, w layer.Write) route.Route {
		seen = append(seen, w)
		if w.Importance < 0.5 {
			return route.Route{Reason: "not important enough to keep"}
		}
		return route.Route{Layer: layer.KeepsSemantic, Reason: "everything important is a fact here"}
	})
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call(memorizeTool, `{"text":"Plan: look up the order.","kind":"reasoning","importance":0.9}`))),
		agenttest.Reply(agenttest.Calls(agenttest.Call(memorizeTool, `{"text":"Minor detail.","kind":"fact","importance":0.1}`))),
		agenttest.Reply(agenttest.Text("ok")),
	)
	a := mustAgent(t, agentloop.Config{Model: model, Layers: looptest.GateLayers(t), Router: router})
	res, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t1", Input: "Go."})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[0].Kind != "reasoning" || seen[0].Text != "Plan: look up the order." || seen[0].Importance != 0.9 ||
		seen[0].Layer != semanticmemory.DefaultID || !strings.Contains(seen[0].Source, "memorize") {
		t.Fatalf("router saw %+v", seen)
	}
	if w := routed(res.Writes); len(w) != 1 || w[0].Layer != semanticmemory.DefaultID || w[0].Kind != "reasoning" {
		t.Errorf("writes %+v", res.Writes)
	}
	routes := ops(res.Audit.Entries, audit.OpRoute)
	if len(routes) != 2 || !routes[1].Refused || routes[1].Reason != "not important enough to keep" {
		t.Errorf("routes %+v", routes)
	}
	// A router that panics refuses the write; the run goes on.
	boom := route.Func(func(context.Context, layer.Write) route.Route { panic("boom") })
	model.Reset()
	model = agenttest.New(agenttest.Reply(agenttest.Calls(memorize("x y z", "fact"))), agenttest.Reply(agenttest.Text("ok")))
	res, err = mustAgent(t, agentloop.Config{Model: model, Layers: looptest.GateLayers(t), Router: boom}).Run(ctx, agentloop.RunInput{ThreadID: "t2", Input: "Go."})
	if err != nil {
		t.Fatal(err)
	}
	if routes := ops(res.Audit.Entries, audit.OpRoute); len(routes) != 1 || !routes[0].Refused || !strings.Contains(routes[0].Reason, "boom") {
		t.Errorf("panicking router: %+v", routes)
	}
}

// TestMemory77_AuditRetentionAndRestart: a thread keeps the audit of its
// last AuditConfig.Keep runs, on a SQLite file that a new process (a new
// store and agent) reads back; Disabled commits nothing but still lists
// the writes.
func TestMemory77_AuditRetentionAndRestart(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "memory.db")
	open := func() *sqlite.Store {
		s, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	for i := range 3 {
		model := agenttest.New(agenttest.Reply(agenttest.Calls(memorize(fmt.Sprintf("Fact number %d is about topic %d.", i, i*7), "fact"))), agenttest.Reply(agenttest.Text("ok")))
		a := mustAgent(t, agentloop.Config{Model: model, Store: s, Layers: looptest.GateLayers(t), Audit: agentloop.AuditConfig{Keep: 2}})
		if _, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t1", Input: fmt.Sprint("Remember ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open()
	defer s.Close()
	a := mustAgent(t, agentloop.Config{Model: agenttest.New(), Store: s, Layers: looptest.GateLayers(t)})
	turns, err := a.Audit(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[0].Seq != 2 || turns[1].Seq != 3 {
		t.Fatalf("after a restart: %d turns %+v", len(turns), turns)
	}
	if w := routed(turns[1].Writes()); len(w) != 1 || !strings.Contains(w[0].Text, "Fact number 2") {
		t.Errorf("last turn's writes %+v", w)
	}

	model := agenttest.New(agenttest.Reply(agenttest.Calls(memorize("Off the record.", "fact"))), agenttest.Reply(agenttest.Text("ok")))
	off := mustAgent(t, agentloop.Config{Model: model, Store: s, Layers: looptest.GateLayers(t), Audit: agentloop.AuditConfig{Disabled: true}})
	res, err := off.Run(ctx, agentloop.RunInput{ThreadID: "t2", Input: "Go."})
	if err != nil {
		t.Fatal(err)
	}
	if res.Audit != nil || len(routed(res.Writes)) != 1 {
		t.Errorf("disabled: Audit %+v, Writes %+v", res.Audit, res.Writes)
	}
	if turns, err := off.Audit(ctx, "t2"); err != nil || len(turns) != 0 {
		t.Errorf("disabled: stored %+v, %v", turns, err)
	}
}

// failingAudit is a store whose audit writes fail.
type failingAudit struct{ storage.Store }

func (s failingAudit) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	if strings.Contains(key, "/"+audit.Name) {
		return 0, errors.New("disk full")
	}
	return s.Store.Put(ctx, key, value, ifVersion)
}

// TestMemory78_CommitOutsideTheLoopAndBadAudit: code outside the agent
// loop commits a turn with Agent.Commit; a corrupt stored turn does not
// fail a run (it is skipped with a warning, and the run's turn follows
// it), nor does a corrupt audit head (replaced) or a failing commit
// (reported as an EventAudit).
func TestMemory78_CommitOutsideTheLoopAndBadAudit(t *testing.T) {
	ctx := t.Context()
	store := storage.NewMemoryStore()
	var logs bytes.Buffer
	var events []agentloop.Event
	observe := func(e agentloop.Event) {
		if e.Kind == agentloop.EventAudit {
			events = append(events, e)
		}
	}
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	a := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("ok"))), Store: store, Layers: looptest.GateLayers(t), Logger: logger, Observer: observe})
	turn, err := a.Commit(ctx, "t1", []audit.Entry{{Op: audit.OpWrite, Layer: "semantic", Key: "f9", Text: "Written by a batch job for bob@example.com."}})
	if err != nil || turn.Seq != 1 {
		t.Fatal(turn, err)
	}
	turns, err := a.Audit(ctx, "t1")
	if err != nil || len(turns) != 1 || turns[0].Entries[0].Key != "f9" || strings.Contains(turns[0].Entries[0].Text, "bob@") {
		t.Fatalf("%+v, %v", turns, err)
	}
	if _, err := a.Commit(ctx, "", nil); err == nil {
		t.Error("Commit without a thread ID succeeded")
	}

	// Turn 1 of t2 is corrupt.
	if _, err := a.Commit(ctx, "t2", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, storage.ThreadKey("t2", audit.Name+".1"), []byte("\x00not json"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(ctx, agentloop.RunInput{ThreadID: "t2", Input: "Hello."})
	if err != nil {
		t.Fatalf("a corrupt audit failed the run: %v", err)
	}
	if res.Audit == nil || res.Audit.Seq != 2 {
		t.Fatalf("Result.Audit %+v", res.Audit)
	}
	if turns, err := a.Audit(ctx, "t2"); err != nil || len(turns) != 1 || turns[0].Seq != 2 || !strings.Contains(logs.String(), "skipping a turn") {
		t.Fatalf("%+v, %v; logs:\n%s", turns, err, logs.String())
	}
	if len(events) != 1 || events[0].Err != nil {
		t.Errorf("EventAudit %+v", events)
	}
	// A corrupt head, in a new process.
	if _, err := store.Put(ctx, storage.ThreadKey("t2", audit.Name), []byte("]"), storage.AnyVersion); err != nil {
		t.Fatal(err)
	}
	a2 := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("ok"))), Store: store, Layers: looptest.GateLayers(t), Logger: logger})
	if res, err := a2.Run(ctx, agentloop.RunInput{ThreadID: "t2", Input: "Hello again."}); err != nil || res.Audit == nil || res.Audit.Seq != 1 {
		t.Fatalf("run over a corrupt audit head: %+v, %v", res, err)
	}

	// A failing commit is reported, and the run succeeds.
	logs.Reset()
	b := mustAgent(t, agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("ok"))), Store: failingAudit{store}, Layers: looptest.GateLayers(t), Logger: logger, Observer: observe})
	res, err = b.Run(ctx, agentloop.RunInput{ThreadID: "t3", Input: "Hello."})
	if err != nil || res.Audit != nil {
		t.Fatalf("run with a failing audit: %+v, %v", res.Audit, err)
	}
	if last := events[len(events)-1]; last.Err == nil || !strings.Contains(last.Err.Error(), "disk full") {
		t.Errorf("EventAudit %+v", last)
	}
	if !strings.Contains(logs.String(), "disk full") {
		t.Errorf("no warning: %s", logs.String())
	}
}
