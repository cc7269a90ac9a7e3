package layertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/layer/layertest"
)

// tally is a well-behaved stateful layer; the broken variants below each
// break one rule of the contract.
type tally struct {
	id    string
	state *tallyState
	flaw  string
}

type tallyState struct {
	mu     sync.Mutex
	n      int
	closed bool
}

func newTally(flaw string) *tally { return &tally{id: "tally", state: &tallyState{}, flaw: flaw} }

func (l *tally) Spec() layer.Spec {
	if l.flaw == "invalid-spec" {
		return layer.Spec{ID: "Tally!"}
	}
	return layer.Spec{ID: l.id}
}

func (l *tally) get() int {
	l.state.mu.Lock()
	defer l.state.mu.Unlock()
	return l.state.n
}

func (l *tally) put(n int) {
	l.state.mu.Lock()
	defer l.state.mu.Unlock()
	l.state.n = n
}

func (l *tally) Init(context.Context, layer.Env) (layer.Layer, error) {
	if l.flaw == "init-shares-state" {
		return &tally{id: l.id, state: l.state, flaw: l.flaw}, nil
	}
	return &tally{id: l.id, state: &tallyState{}, flaw: l.flaw}, nil
}

func (l *tally) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	if l.flaw == "recall-panics-on-zero-query" && q == (layer.Query{}) {
		panic("zero query")
	}
	if l.flaw == "recall-ignores-cancel" && ctx.Err() != nil {
		time.Sleep(time.Hour)
	}
	return []layer.Item{{Text: strconv.Itoa(l.get())}}, nil
}

func (l *tally) Store(_ context.Context, t layer.Turn) error {
	if l.flaw == "store-rejects-empty-turn" && t.Query == "" && len(t.Results) == 0 {
		return errors.New("nothing to store")
	}
	if l.flaw == "store-learns-nothing" {
		return nil
	}
	l.put(l.get() + 1)
	return nil
}

func (l *tally) OnSpawn(context.Context, layer.Env) (layer.Layer, error) {
	if l.flaw == "spawn-mutates-parent" {
		l.put(0)
	}
	if l.flaw == "spawn-shares-state" {
		return &tally{id: l.id, state: l.state}, nil
	}
	return &tally{id: l.id, state: &tallyState{n: l.get()}}, nil
}

func (l *tally) Snapshot(context.Context) (json.RawMessage, error) {
	return json.Marshal(map[string]int{"n": l.get()})
}

func (l *tally) Restore(_ context.Context, data json.RawMessage) error {
	if l.flaw == "restore-garbage-changes-state" {
		l.put(0)
	}
	var v struct{ N int }
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	if l.flaw == "restore-loses-state" {
		v.N = 0
	}
	l.put(v.N)
	return nil
}

func (l *tally) Clear(context.Context) error {
	if l.flaw != "clear-keeps-state" {
		l.put(0)
	}
	return nil
}

func (l *tally) Close(context.Context) error {
	l.state.mu.Lock()
	defer l.state.mu.Unlock()
	if l.state.closed && l.flaw == "close-twice-fails" {
		return errors.New("already closed")
	}
	l.state.closed = true
	return nil
}

func (l *tally) Functions() []layer.Function {
	name := "add"
	if l.flaw == "bad-function-name" {
		name = "add one"
	}
	return []layer.Function{{
		Name: name,
		Call: func(context.Context, json.RawMessage) (string, error) {
			l.put(l.get() + 1)
			return "", nil
		},
	}}
}

func TestWellBehavedLayerPasses(t *testing.T) {
	layertest.Run(t, func(*testing.T) layer.Layer { return newTally("") })
}

// TestBroken is run in a subprocess by TestSuiteCatchesBrokenLayers with
// LAYERTEST_FLAW set; on its own it is skipped.
func TestBroken(t *testing.T) {
	flaw := os.Getenv("LAYERTEST_FLAW")
	if flaw == "" {
		t.Skip("run by TestSuiteCatchesBrokenLayers")
	}
	layertest.Options{Timeout: 300 * time.Millisecond}.Run(t, func(*testing.T) layer.Layer { return newTally(flaw) })
}

// Each broken layer makes the suite fail in the subtest for the rule it
// breaks.
func TestSuiteCatchesBrokenLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs subprocesses")
	}
	tests := []struct{ flaw, subtest string }{
		{"invalid-spec", "Spec"},
		{"store-learns-nothing", "Populate"},
		{"init-shares-state", "Init"},
		{"recall-panics-on-zero-query", "Recall"},
		{"recall-ignores-cancel", "Recall"},
		{"store-rejects-empty-turn", "Store"},
		{"spawn-mutates-parent", "OnSpawn"},
		{"spawn-shares-state", "OnSpawn"},
		{"restore-loses-state", "SnapshotRestore"},
		{"restore-garbage-changes-state", "RestoreGarbage"},
		{"clear-keeps-state", "Clear"},
		{"close-twice-fails", "Close"},
		{"bad-function-name", "Provides"},
	}
	for _, tt := range tests {
		t.Run(tt.flaw, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBroken$", "-test.v")
			cmd.Env = append(os.Environ(), "LAYERTEST_FLAW="+tt.flaw)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a layer with flaw %q:\n%s", tt.flaw, out)
			}
			if want := "--- FAIL: TestBroken/" + tt.subtest + " "; !strings.Contains(string(out), want) {
				t.Errorf("flaw %q: want a failure in %s, got:\n%s", tt.flaw, tt.subtest, out)
			}
		})
	}
}

func TestDefaultTurns(t *testing.T) {
	turns := layertest.DefaultTurns()
	if len(turns) == 0 {
		t.Fatal("no default turns")
	}
	for _, tr := range turns {
		for _, r := range tr.Results {
			if !json.Valid([]byte(r.Arguments)) {
				t.Errorf("result %s has invalid JSON arguments", r.Name)
			}
		}
	}
	turns[0].Query = "changed"
	if layertest.DefaultTurns()[0].Query == "changed" {
		t.Error("DefaultTurns returns shared data")
	}
}

// Issue 10 (brief item 3): the suite knows no particular layer. Its
// default turns are a user message, a tool call with its JSON result and
// an answer, with no call that only one built-in layer understands (the
// scratchpad's legacy updateWorkingMemory call used to be one); a layer
// that needs such a turn passes it in Options.Turns.
func TestPlainNames03_ConformanceSuiteKnowsNoLayer(t *testing.T) {
	for _, tr := range layertest.DefaultTurns() {
		if len(tr.ToolCalls) != len(tr.Results) {
			t.Errorf("step %d: %d tool calls but %d results", tr.Step, len(tr.ToolCalls), len(tr.Results))
		}
		for i, c := range tr.ToolCalls {
			if c.Name == "updateWorkingMemory" {
				t.Errorf("step %d: default turn carries the scratchpad's legacy call %s", tr.Step, c.Name)
			}
			if i < len(tr.Results) && (tr.Results[i].ID != c.ID || tr.Results[i].Name != c.Name) {
				t.Errorf("step %d: result %d answers %s/%s, want %s/%s", tr.Step, i, tr.Results[i].ID, tr.Results[i].Name, c.ID, c.Name)
			}
		}
	}
}
