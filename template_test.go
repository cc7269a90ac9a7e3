package memlayer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// runCall is one call of a method that reads or writes a run's memory.
type runCall struct {
	method string
	call   func(ctx context.Context, l layer.Layer) error
}

// templateCase is a built-in layer: its template, the calls that need a
// run, and a check that the template still holds nothing.
type templateCase struct {
	id    string
	tmpl  func(t *testing.T) layer.Layer
	calls []runCall
	// empty fails t unless the methods without an error result find
	// nothing on the template.
	empty func(t *testing.T, l layer.Layer)
}

// hookMethods are the methods a Stack calls, or that describe the
// layer: they work on a template as before.
var hookMethods = []string{"Spec", "Tag", "Init", "Open", "Recall", "Candidates", "Situation", "Store", "OnSpawn", "OnReturn",
	"Functions", "Metrics", "Counts", "Keeps", "Close", "Extractor", "RenderBlock"}

// built returns a constructor of templates made by newLayer.
func built[L layer.Layer](newLayer func() (L, error)) func(t *testing.T) layer.Layer {
	return func(t *testing.T) layer.Layer {
		l, err := newLayer()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
}

// tool returns a call of l's function name with args.
func tool(name, args string) func(ctx context.Context, l layer.Layer) error {
	return func(ctx context.Context, l layer.Layer) error {
		p, _ := layer.As[layer.Provider](l)
		for _, fn := range p.Functions() {
			if fn.Name == name {
				_, err := fn.Call(ctx, json.RawMessage(args))
				return err
			}
		}
		return fmt.Errorf("no function %q", name)
	}
}

// snapshotCalls are Snapshot, Restore (of a bound layer's snapshot) and
// Clear.
func snapshotCalls(snap json.RawMessage) []runCall {
	return []runCall{
		{"Snapshot", func(ctx context.Context, l layer.Layer) error {
			_, err := l.(layer.Snapshotter).Snapshot(ctx)
			return err
		}},
		{"Restore", func(ctx context.Context, l layer.Layer) error { return l.(layer.Snapshotter).Restore(ctx, snap) }},
		{"Clear", func(ctx context.Context, l layer.Layer) error { return l.(layer.Clearer).Clear(ctx) }},
	}
}

func keep(ctx context.Context, l layer.Layer) error {
	_, err := l.(layer.Keeper).Keep(ctx, layer.Write{Kind: "outcome", Text: "The launch is on Friday.", Importance: 0.9, By: "model"})
	return err
}

func semanticCase() templateCase {
	as := func(l layer.Layer) *semanticmemory.Layer { return l.(*semanticmemory.Layer) }
	return templateCase{
		id:   semanticmemory.DefaultID,
		tmpl: built(func() (*semanticmemory.Layer, error) { return semanticmemory.New(semanticmemory.Config{}) }),
		calls: append([]runCall{
			{"Remember", func(ctx context.Context, l layer.Layer) error {
				_, err := as(l).Remember(ctx, semanticmemory.Memo{Text: "The user prefers tea.", Kind: "preference"})
				return err
			}},
			{"Facts", func(ctx context.Context, l layer.Layer) error { _, err := as(l).Facts(ctx); return err }},
			{"Skills", func(ctx context.Context, l layer.Layer) error { _, err := as(l).Skills(ctx); return err }},
			{"Versions", func(ctx context.Context, l layer.Layer) error { _, err := as(l).Versions(ctx, "f1"); return err }},
			{"Search", func(ctx context.Context, l layer.Layer) error { _, err := as(l).Search(ctx, "tea", 5); return err }},
			{"SearchKind", func(ctx context.Context, l layer.Layer) error {
				_, err := as(l).SearchKind(ctx, "tea", "preference", 5)
				return err
			}},
			{"Get", func(ctx context.Context, l layer.Layer) error {
				_, err := as(l).Get(ctx, "f1")
				if errors.Is(err, semanticmemory.ErrNotFound) {
					return nil // a bound layer without that fact
				}
				return err
			}},
			{"Update", func(ctx context.Context, l layer.Layer) error {
				_, err := as(l).Update(ctx, "f1", semanticmemory.Change{Text: "The user prefers green tea."})
				if errors.Is(err, semanticmemory.ErrNotFound) {
					return nil // a bound layer without that fact
				}
				return err
			}},
			{"Forget", func(ctx context.Context, l layer.Layer) error { return as(l).Forget(ctx, "f1") }},
			{"Keep", keep},
			{"memorize", tool("memorize", `{"text":"The user lives in Lisbon."}`)},
			{"forget", tool("forget", `{"id":"f2"}`)},
			{"Flush", func(ctx context.Context, l layer.Layer) error { return as(l).Flush(ctx) }},
		}, snapshotCalls(json.RawMessage(`{"version":1,"facts":[]}`))...),
		empty: func(t *testing.T, l layer.Layer) {
			if e := as(l).AuditEntries(); e != nil {
				t.Errorf("AuditEntries on a template = %v, want nil", e)
			}
		},
	}
}

func episodicCase() templateCase {
	as := func(l layer.Layer) *episodicmemory.Layer { return l.(*episodicmemory.Layer) }
	return templateCase{
		id:   episodicmemory.DefaultID,
		tmpl: built(func() (*episodicmemory.Layer, error) { return episodicmemory.New(episodicmemory.Config{}) }),
		calls: append([]runCall{
			{"Note", func(ctx context.Context, l layer.Layer) error {
				return as(l).Note(ctx, 1, "outcome", "The launch moved to Friday.")
			}},
			{"Compact", func(ctx context.Context, l layer.Layer) error { return as(l).Compact(ctx) }},
			{"Read", func(ctx context.Context, l layer.Layer) error {
				_, _, err := as(l).Read(ctx, "note")
				if errors.Is(err, episodicmemory.ErrNoEpisode) {
					return nil // a bound layer without that episode
				}
				return err
			}},
			{"Keep", keep},
			{"Task", func(ctx context.Context, l layer.Layer) error {
				_, _, err := as(l).Task(ctx)
				return err
			}},
			{"NewTask", func(ctx context.Context, l layer.Layer) error {
				_, err := as(l).NewTask(ctx, 1, "Plan the launch")
				return err
			}},
			{"Links", func(ctx context.Context, l layer.Layer) error {
				_, err := as(l).Links(ctx)
				return err
			}},
			{"Evicted", func(ctx context.Context, l layer.Layer) error {
				_, err := as(l).Evicted(ctx, 10)
				return err
			}},
			{"read", func(ctx context.Context, l layer.Layer) error {
				err := tool("read", `{"ref":"note"}`)(ctx, l)
				if errors.Is(err, episodicmemory.ErrNoEpisode) {
					return nil
				}
				return err
			}},
		}, snapshotCalls(json.RawMessage(`{"version":1}`))...),
		empty: func(t *testing.T, l layer.Layer) {
			if eps := as(l).Episodes(); eps != nil {
				t.Errorf("Episodes on a template = %v, want nil", eps)
			}
			if n, tok, ok := as(l).CapacityUsed(); ok || n != 0 || tok != 0 {
				t.Errorf("CapacityUsed on a template = %d, %d, %v; want none", n, tok, ok)
			}
		},
	}
}

func entityCase() templateCase {
	as := func(l layer.Layer) *entitymemory.Layer { return l.(*entitymemory.Layer) }
	return templateCase{
		id:    entitymemory.DefaultID,
		tmpl:  built(func() (*entitymemory.Layer, error) { return entitymemory.New(entitymemory.Config{}) }),
		calls: snapshotCalls(json.RawMessage(`{"version":2,"clock":0,"entities":[]}`)),
		empty: func(t *testing.T, l layer.Layer) {
			m := as(l)
			m.Add(entitymemory.Entity{Type: "page", ID: "page-1", Name: "Home"})
			if got := m.Entities(); got != nil {
				t.Errorf("Entities on a template after Add = %v, want nil", got)
			}
			if got := m.ByType("page"); got != nil {
				t.Errorf("ByType on a template after Add = %v, want nil", got)
			}
			if got := m.Recent(5); got != nil {
				t.Errorf("Recent on a template after Add = %v, want nil", got)
			}
		},
	}
}

func workingCase() templateCase {
	as := func(l layer.Layer) *workingmemory.Layer { return l.(*workingmemory.Layer) }
	return templateCase{
		id: workingmemory.DefaultID,
		tmpl: built(func() (*workingmemory.Layer, error) {
			return workingmemory.New(workingmemory.Config{Template: map[string]any{"goal": "ship"}})
		}),
		calls: append([]runCall{
			{"Update", func(ctx context.Context, l layer.Layer) error {
				return as(l).Update(ctx, json.RawMessage(`{"step":"draft"}`))
			}},
			{"UpdateOnce", func(ctx context.Context, l layer.Layer) error {
				return as(l).UpdateOnce(ctx, "k1", json.RawMessage(`{"step":"review"}`))
			}},
			{"StateAs", func(ctx context.Context, l layer.Layer) error {
				_, err := workingmemory.StateAs[map[string]any](as(l))
				return err
			}},
			{"Keep", keep},
			{"update", tool("update", `{"blocker":"none"}`)},
		}, snapshotCalls(json.RawMessage(`{"goal":"ship"}`))...),
		empty: func(t *testing.T, l layer.Layer) {
			if s := as(l).State(); s != nil {
				t.Errorf("State on a template = %v, want nil", s)
			}
		},
	}
}

func kvCase() templateCase {
	as := func(l layer.Layer) *kv.Layer { return l.(*kv.Layer) }
	return templateCase{
		id:   kv.DefaultLayerID,
		tmpl: built(func() (*kv.Layer, error) { return kv.NewLayer(kv.LayerConfig{}) }),
		calls: append([]runCall{
			{"Flush", func(ctx context.Context, l layer.Layer) error { return as(l).Flush(ctx) }},
			{"OnSpawn", func(ctx context.Context, l layer.Layer) error {
				_, err := as(l).OnSpawn(ctx, layer.Env{ThreadID: "child", ExecutionID: "child"})
				return err
			}},
		}, snapshotCalls(json.RawMessage(`{"version":1}`))...),
		empty: func(t *testing.T, l layer.Layer) {
			if m := as(l).Memory(); m != nil {
				t.Errorf("Memory on a template = %v, want nil", m)
			}
		},
	}
}

// TestTemplatesRefuseRunMethods: on the template a built-in layer's
// constructor returns, every method that reads or writes a run's memory
// fails with an error wrapping layer.ErrTemplate that names the layer and
// the method, and leaves the template as it was (nothing is recalled,
// no entry counted); the methods without an error result find nothing.
// On the layer Init returns, the same calls do not report ErrTemplate.
// A new exported method must be classified here, as a run's or a hook.
func TestTemplatesRefuseRunMethods(t *testing.T) {
	for _, tc := range []templateCase{semanticCase(), episodicCase(), entityCase(), workingCase(), kvCase()} {
		t.Run(tc.id, func(t *testing.T) {
			ctx := t.Context()
			tmpl := tc.tmpl(t)
			checkClassified(t, tmpl, tc)
			before := templateState(t, tmpl)
			for _, c := range tc.calls {
				err := c.call(ctx, tmpl)
				if !errors.Is(err, layer.ErrTemplate) {
					t.Errorf("%s on a template = %v, want layer.ErrTemplate", c.method, err)
					continue
				}
				if msg := err.Error(); !strings.Contains(msg, c.method) || !strings.Contains(msg, `"`+tc.id+`"`) || !strings.Contains(msg, "Init") {
					t.Errorf("%s on a template: %q does not name the method, the layer and Init", c.method, msg)
				}
			}
			if tc.empty != nil {
				tc.empty(t, tmpl)
			}
			if after := templateState(t, tmpl); after != before {
				t.Errorf("the calls changed the template:\nbefore %s\nafter  %s", before, after)
			}
			bound, err := tmpl.(layer.Initializer).Init(ctx, layer.Env{ThreadID: "t1", ResourceID: "u1", ExecutionID: "e1", Store: storage.NewMemoryStore()})
			if err != nil {
				t.Fatal(err)
			}
			if c, ok := layer.As[layer.Closer](bound); ok {
				defer func() { _ = c.Close(context.Background()) }()
			}
			for _, c := range tc.calls {
				if err := c.call(ctx, bound); errors.Is(err, layer.ErrTemplate) {
					t.Errorf("%s on a bound layer = %v", c.method, err)
				}
			}
		})
	}
}

// templateState is what the template recalls and counts.
func templateState(t *testing.T, l layer.Layer) string {
	t.Helper()
	items, err := l.Recall(t.Context(), layer.Query{Text: "tea Lisbon Friday launch page", Budget: layer.Unbounded})
	if err != nil {
		t.Fatalf("Recall on a template: %v", err)
	}
	var entries int64
	if mr, ok := layer.As[layer.MetricsReporter](l); ok {
		entries = mr.Metrics()["entries"]
	}
	var texts []string
	for _, it := range items {
		texts = append(texts, it.Text)
	}
	return fmt.Sprintf("%d entries, recalled %q", entries, texts)
}

// checkClassified fails t when l has an exported method that is neither
// a hook nor tested by tc.
func checkClassified(t *testing.T, l layer.Layer, tc templateCase) {
	t.Helper()
	known := slices.Clone(hookMethods)
	for _, c := range tc.calls {
		known = append(known, c.method)
	}
	// Methods without an error result, checked by tc.empty.
	known = append(known, "Episodes", "CapacityUsed", "Add", "Entities", "ByType", "Recent", "State", "Memory", "AuditEntries")
	typ := reflect.TypeOf(l)
	for i := range typ.NumMethod() {
		if m := typ.Method(i).Name; !slices.Contains(known, m) {
			t.Errorf("%s.%s is not classified: a run's method (test it on a template) or a hook", typ, m)
		}
	}
}
