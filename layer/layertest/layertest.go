package layertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// Options tunes the suite. The zero Options is valid and is what [Run]
// uses.
type Options struct {
	// Populate puts some state into a bound layer (one returned by Init,
	// or the template when the layer is not an Initializer), so that
	// snapshots, clears and spawns have something to work on. Nil means:
	// call Store with each of Turns when the layer is a [layer.Storer].
	// The suite fails a layer that Populate leaves as it was (see
	// "Populated state" in the package documentation): set it when the
	// layer learns from code or tools rather than from turns.
	Populate func(ctx context.Context, l layer.Layer) error
	// Turns are what the default Populate stores, in order, and what the
	// concurrency check stores. Nil means [DefaultTurns]. Set them when
	// the layer learns nothing from the default turns: a layer that
	// reads a call of its own convention, or another tool result, passes
	// turns that carry it.
	Turns []layer.Turn
	// SharedSpawn says the layer's OnSpawn returns a view that shares
	// state with the parent on purpose, so a change made through the child
	// may show in the parent. The suite then only checks that OnSpawn
	// itself changes nothing.
	SharedSpawn bool
	// StoreSnapshots says the layer's Snapshot names records in its store
	// (a position in a log) instead of copying them. The suite then
	// restores a snapshot into a fresh layer bound to the same store and
	// the same thread and resource (a restarted run), and compares the two
	// by what they recall for the first turn's query. It also checks that
	// a layer of another thread and resource on that store refuses the
	// snapshot and keeps its state: a snapshot never reads another user's
	// records.
	StoreSnapshots bool
	// Timeout bounds each call the suite waits for. Zero means 5s.
	Timeout time.Duration
}

// DefaultTurns returns what the default Populate stores: a user message,
// a tool call with a JSON result naming a resource, and an answer. They
// belong to no particular layer; a layer that learns only from other
// turns (a call of its own convention, say) passes them in
// [Options.Turns].
func DefaultTurns() []layer.Turn {
	return []layer.Turn{
		{
			Step:  0,
			Query: "Rename the home page to Welcome and remember the launch is on Friday.",
			ToolCalls: []layer.ToolCall{
				{ID: "call-1", Name: "cms_getPage", Arguments: `{"id":"page-1"}`},
			},
			Results: []layer.ToolResult{
				{ToolCall: layer.ToolCall{ID: "call-1", Name: "cms_getPage", Arguments: `{"id":"page-1"}`},
					Content: `{"page":{"id":"page-1","title":"Home","slug":"home"}}`},
			},
		},
		{
			Step:     1,
			Query:    "Rename the home page to Welcome and remember the launch is on Friday.",
			Response: "Done: the page is now called Welcome.",
		},
	}
}

// Run runs the conformance suite with the zero [Options].
func Run(t *testing.T, newLayer func(t *testing.T) layer.Layer) {
	t.Helper()
	Options{}.Run(t, newLayer)
}

// Run runs the conformance suite against the layers newLayer returns.
func (o Options) Run(t *testing.T, newLayer func(t *testing.T) layer.Layer) {
	t.Helper()
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.Turns == nil {
		o.Turns = DefaultTurns()
	}
	custom := o.Populate != nil
	if o.Populate == nil {
		turns := o.Turns
		o.Populate = func(ctx context.Context, l layer.Layer) error {
			st, ok := layer.As[layer.Storer](l)
			if !ok {
				return nil
			}
			for _, turn := range turns {
				if err := st.Store(ctx, turn); err != nil {
					return err
				}
			}
			return nil
		}
	}
	r := &runner{o: o, newLayer: newLayer, ownPopulate: custom}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T)
	}{
		{"Spec", r.testSpec},
		{"Populate", r.testPopulate},
		{"Init", r.testInit},
		{"Recall", r.testRecall},
		{"Store", r.testStore},
		{"OnSpawn", r.testSpawn},
		{"SnapshotRestore", r.testSnapshot},
		{"RestoreGarbage", r.testRestoreGarbage},
		{"Clear", r.testClear},
		{"Close", r.testClose},
		{"Provides", r.testProvides},
		{"ConcurrentStack", r.testConcurrent},
		{"ScopesOfCollidingIDs", r.testScopes},
	} {
		t.Run(tc.name, tc.fn)
	}
}

type runner struct {
	o           Options
	newLayer    func(t *testing.T) layer.Layer
	ownPopulate bool // Options.Populate was set
	envs        atomic.Int64
}

// env returns a fresh run environment with its own memory store.
func (r *runner) env() layer.Env {
	n := r.envs.Add(1)
	return layer.Env{
		ThreadID:    fmt.Sprintf("layertest-thread-%d", n),
		ResourceID:  fmt.Sprintf("layertest-user-%d", n),
		ExecutionID: fmt.Sprintf("layertest-exec-%d", n),
		Store:       storage.NewMemoryStore(),
		Logger:      slog.New(slog.DiscardHandler),
	}
}

// bind returns the layer bound to a fresh env, closing it when the test
// ends.
func (r *runner) bind(t *testing.T, tmpl layer.Layer) layer.Layer {
	t.Helper()
	return r.bindEnv(t, tmpl, r.env())
}

// bindEnv returns the layer bound to env, closing it when the test ends.
func (r *runner) bindEnv(t *testing.T, tmpl layer.Layer, env layer.Env) layer.Layer {
	t.Helper()
	l := tmpl
	if in, ok := layer.As[layer.Initializer](tmpl); ok {
		var err error
		r.within(t, "Init", func() { l, err = in.Init(t.Context(), env) })
		if err != nil {
			t.Fatalf("Init with a fresh Env: %v", err)
		}
		if l == nil {
			t.Fatal("Init returned a nil layer and no error")
		}
	}
	t.Cleanup(func() { closeLayer(l) })
	return l
}

func (r *runner) fresh(t *testing.T) layer.Layer {
	t.Helper()
	return r.bind(t, r.newLayer(t))
}

func (r *runner) populate(t *testing.T, l layer.Layer) {
	t.Helper()
	var err error
	r.within(t, "Populate", func() { err = r.o.Populate(t.Context(), l) })
	if err != nil {
		t.Fatalf("populating the layer: %v", err)
	}
}

// within runs fn and fails the test if it takes longer than the timeout
// (the goroutine is left behind) or panics.
func (r *runner) within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		fn()
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("%s panicked: %v", what, p)
		}
	case <-time.After(r.o.Timeout):
		t.Fatalf("%s did not return within %v", what, r.o.Timeout)
	}
}

// state is a comparable description of a layer's state: its snapshot as
// canonical JSON, or the text it recalls for a fixed query.
func (r *runner) state(t *testing.T, l layer.Layer) string {
	t.Helper()
	var out string
	var err error
	if sn, ok := layer.As[layer.Snapshotter](l); ok {
		r.within(t, "Snapshot", func() {
			var data json.RawMessage
			data, err = sn.Snapshot(t.Context())
			if err == nil {
				out, err = canonical(data)
			}
		})
	} else {
		return r.recalled(t, l)
	}
	if err != nil {
		t.Fatalf("reading the layer's state: %v", err)
	}
	return out
}

// recalled returns what l recalls for a fixed query, as JSON.
func (r *runner) recalled(t *testing.T, l layer.Layer) string {
	t.Helper()
	return r.recalledFor(t, l, "layertest")
}

// recalledFor returns what l recalls for text, as JSON.
func (r *runner) recalledFor(t *testing.T, l layer.Layer, text string) string {
	t.Helper()
	var out string
	var err error
	r.within(t, "Recall", func() {
		var items []layer.Item
		items, err = l.Recall(t.Context(), layer.Query{Text: text, Budget: layer.Unbounded})
		var texts []string
		for _, it := range items {
			texts = append(texts, it.Text)
		}
		b, _ := json.Marshal(texts)
		out = string(b)
	})
	if err != nil {
		t.Fatalf("reading what the layer recalls: %v", err)
	}
	return out
}

func canonical(data json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return "", fmt.Errorf("snapshot is not JSON: %w", err)
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func closeLayer(l layer.Layer) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, ok := layer.As[layer.Closer](l); ok {
		_ = c.Close(ctx)
	} else if c, ok := layer.As[io.Closer](l); ok {
		_ = c.Close()
	}
}

func (r *runner) testSpec(t *testing.T) {
	l := r.newLayer(t)
	if l == nil {
		t.Fatal("newLayer returned nil")
	}
	spec := l.Spec()
	if err := spec.Validate(); err != nil {
		t.Fatalf("Spec().Validate() = %v", err)
	}
	if again := l.Spec(); again != spec {
		t.Errorf("Spec() changed between calls: %+v then %+v", spec, again)
	}
}

// testPopulate fails a layer that populate leaves as it was: its
// snapshot (a Snapshotter's), what it recalls for the first turn's query
// and for a fixed one, and its Metrics "entries" are all unchanged. The
// checks that compare states would then pass on an empty one. A layer
// with no state to check (not a Storer, Snapshotter, Clearer or
// Spawner, and no Options.Populate) skips it.
func (r *runner) testPopulate(t *testing.T) {
	l := r.fresh(t)
	if !r.ownPopulate && !hasState(l) {
		t.Skip("no state to populate: not a Storer, Snapshotter, Clearer or Spawner")
	}
	before := r.probe(t, l)
	r.populate(t, l)
	if after := r.probe(t, l); after == before {
		t.Fatalf("the populate turns left the layer as it was (%s), so the Init, OnSpawn, SnapshotRestore, "+
			"RestoreGarbage and Clear checks would pass on an empty state without testing anything: "+
			"pass turns that exercise the layer in Options.Turns, or code that puts state into it in "+
			"Options.Populate (see \"Populated state\" in the layertest documentation)", before)
	}
}

// hasState reports whether l has state the suite's checks compare.
func hasState(l layer.Layer) bool {
	_, st := layer.As[layer.Storer](l)
	_, sn := layer.As[layer.Snapshotter](l)
	_, cl := layer.As[layer.Clearer](l)
	_, sp := layer.As[layer.Spawner](l)
	return st || sn || cl || sp
}

// probe describes what can be seen of l's state: its snapshot (when a
// Snapshotter), what it recalls for the first turn's query and for a
// fixed one, and its Metrics "entries".
func (r *runner) probe(t *testing.T, l layer.Layer) string {
	t.Helper()
	out := "recalls " + r.recalled(t, l)
	if _, ok := layer.As[layer.Snapshotter](l); ok {
		out = "snapshot " + r.state(t, l) + "; " + out
	}
	if len(r.o.Turns) > 0 && r.o.Turns[0].Query != "" {
		out += " and " + r.recalledFor(t, l, r.o.Turns[0].Query)
	}
	if mr, ok := layer.As[layer.MetricsReporter](l); ok {
		var m map[string]int64
		r.within(t, "Metrics", func() { m = mr.Metrics() })
		out += fmt.Sprintf("; %d entries", m["entries"])
	}
	return out
}

func (r *runner) testInit(t *testing.T) {
	tmpl := r.newLayer(t)
	spec := tmpl.Spec()
	a := r.bind(t, tmpl)
	if a.Spec().ID != spec.ID {
		t.Errorf("bound layer has ID %q, template %q", a.Spec().ID, spec.ID)
	}
	if _, ok := layer.As[layer.Initializer](tmpl); !ok {
		t.Skip("not an Initializer: the template is the live layer")
	}
	b := r.bind(t, tmpl)
	if after := tmpl.Spec(); after != spec {
		t.Errorf("Init changed the template's Spec: %+v → %+v", spec, after)
	}
	before := r.state(t, b)
	r.populate(t, a)
	if after := r.state(t, b); after != before {
		t.Errorf("a change to one bound layer showed in another bound to a separate env:\nbefore %s\nafter  %s", before, after)
	}
	if after := tmpl.Spec(); after != spec {
		t.Errorf("using a bound layer changed the template's Spec: %+v → %+v", spec, after)
	}
}

func (r *runner) testRecall(t *testing.T) {
	l := r.fresh(t)
	for _, q := range []layer.Query{{}, {Budget: layer.Unbounded}, {Text: "", Step: 0, Budget: 1}} {
		var err error
		r.within(t, fmt.Sprintf("Recall(%+v) on a fresh layer", q), func() { _, err = l.Recall(t.Context(), q) })
		if err != nil {
			t.Logf("Recall(%+v) on a fresh layer: %v", q, err)
		}
	}
	r.populate(t, l)
	r.within(t, "Recall(Query{}) on a populated layer", func() { _, _ = l.Recall(t.Context(), layer.Query{}) })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r.within(t, "Recall with a cancelled context", func() { _, _ = l.Recall(ctx, layer.Query{Text: "x", Budget: layer.Unbounded}) })
}

func (r *runner) testStore(t *testing.T) {
	l := r.fresh(t)
	st, ok := layer.As[layer.Storer](l)
	if !ok {
		t.Skip("not a Storer")
	}
	var err error
	r.within(t, "Store(Turn{})", func() { err = st.Store(t.Context(), layer.Turn{}) })
	if err != nil {
		t.Errorf("Store(Turn{}) = %v, want nil", err)
	}
	r.within(t, "Recall after an empty Store", func() { _, err = l.Recall(t.Context(), layer.Query{Budget: layer.Unbounded}) })
	if err != nil {
		t.Errorf("Recall after Store(Turn{}) = %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r.within(t, "Store with a cancelled context", func() { _ = st.Store(ctx, r.o.Turns[0]) })
}

func (r *runner) testSpawn(t *testing.T) {
	parent := r.fresh(t)
	sp, ok := layer.As[layer.Spawner](parent)
	if !ok {
		t.Skip("not a Spawner")
	}
	r.populate(t, parent)
	before := r.state(t, parent)
	var child layer.Layer
	var err error
	r.within(t, "OnSpawn", func() {
		child, err = sp.OnSpawn(t.Context(), r.env())
	})
	if err != nil {
		t.Fatalf("OnSpawn = %v", err)
	}
	if after := r.state(t, parent); after != before {
		t.Fatalf("OnSpawn changed the parent:\nbefore %s\nafter  %s", before, after)
	}
	if child == nil {
		return // the child goes without this layer
	}
	t.Cleanup(func() { closeLayer(child) })
	if child.Spec().ID != parent.Spec().ID {
		t.Errorf("child ID %q, parent %q", child.Spec().ID, parent.Spec().ID)
	}
	if r.o.SharedSpawn {
		return
	}
	r.testChildApart(t, parent, child, before)
}

// testChildApart populates the child of parent, then clears it: neither
// may change the parent, whose state was before.
func (r *runner) testChildApart(t *testing.T, parent, child layer.Layer, before string) {
	r.populate(t, child)
	if cl, ok := layer.As[layer.Clearer](child); ok {
		var err error
		r.within(t, "Clear on the child", func() { err = cl.Clear(t.Context()) })
		if err != nil {
			t.Errorf("Clear on the child: %v", err)
		}
	}
	if after := r.state(t, parent); after != before {
		t.Errorf("changing the child changed the parent:\nbefore %s\nafter  %s", before, after)
	}
}

func (r *runner) testSnapshot(t *testing.T) {
	env := r.env()
	l := r.bindEnv(t, r.newLayer(t), env)
	sn, ok := layer.As[layer.Snapshotter](l)
	if !ok {
		t.Skip("not a Snapshotter")
	}
	r.populate(t, l)
	var data json.RawMessage
	var err error
	r.within(t, "Snapshot", func() { data, err = sn.Snapshot(t.Context()) })
	if err != nil {
		t.Fatalf("Snapshot = %v", err)
	}
	want, err := canonical(data)
	if err != nil {
		t.Fatal(err)
	}
	r.testForeignSnapshot(t, env, data)
	r.testRestoreFresh(t, env, l, data, want)
	// Restoring into the layer it came from is a no-op.
	r.within(t, "Restore into itself", func() { err = sn.Restore(t.Context(), data) })
	if err != nil {
		t.Fatalf("Restore into the same layer = %v", err)
	}
	if got := r.state(t, l); got != want {
		t.Errorf("Restore of its own snapshot changed the layer:\nwant %s\ngot  %s", want, got)
	}
}

// testRestoreFresh restores data, the snapshot of l (run in env) whose
// canonical form is want, into a fresh layer (of the same run, with
// StoreSnapshots, whose snapshots name records in its store): the copy
// must recall as l does (StoreSnapshots) or snapshot as want.
func (r *runner) testRestoreFresh(t *testing.T, env layer.Env, l layer.Layer, data json.RawMessage, want string) {
	otherEnv := r.env()
	if r.o.StoreSnapshots {
		otherEnv.ThreadID, otherEnv.ResourceID, otherEnv.Store = env.ThreadID, env.ResourceID, env.Store
	}
	other := r.bindEnv(t, r.newLayer(t), otherEnv)
	osn, _ := layer.As[layer.Snapshotter](other)
	var err error
	r.within(t, "Restore", func() { err = osn.Restore(t.Context(), data) })
	if err != nil {
		t.Fatalf("Restore of its own snapshot into a fresh layer = %v", err)
	}
	if r.o.StoreSnapshots {
		q := r.o.Turns[0].Query
		if got, want := r.recalledFor(t, other, q), r.recalledFor(t, l, q); got != want {
			t.Errorf("restored layer recalls differently:\nwant %s\ngot  %s", want, got)
		}
	} else if got := r.state(t, other); got != want {
		t.Errorf("restored layer snapshots differently:\nwant %s\ngot  %s", want, got)
	}
}

// testForeignSnapshot restores data, a snapshot taken in from (a run on
// from.Store), into a populated layer of another thread and resource on
// that store. The restore must touch nothing stored in from's thread,
// resource or execution scope (the global scope is everyone's). With
// StoreSnapshots, whose snapshots name records, it must be refused and
// leave the layer's state as it was.
func (r *runner) testForeignSnapshot(t *testing.T, from layer.Env, data json.RawMessage) {
	t.Helper()
	w := Watch(from.Store)
	env := r.env()
	env.Store = w.Store()
	l := r.bindEnv(t, r.newLayer(t), env)
	r.populate(t, l)
	before := r.state(t, l)
	sn, _ := layer.As[layer.Snapshotter](l)
	w.Reset()
	var err error
	r.within(t, "Restore of another user's snapshot", func() { err = sn.Restore(t.Context(), data) })
	for _, scope := range []layer.Scope{layer.ScopeThread, layer.ScopeResource, layer.ScopeExecution} {
		if got := w.Touched("/" + from.ScopeKey(scope) + "/"); len(got) > 0 {
			t.Errorf("Restore of another user's snapshot touched that user's records: %q", got)
		}
	}
	if !r.o.StoreSnapshots {
		return
	}
	if err == nil {
		t.Errorf("Restore of another thread's and resource's snapshot = nil, want an error")
	}
	if after := r.state(t, l); after != before {
		t.Errorf("a refused Restore of another user's snapshot changed the state:\nbefore %s\nafter  %s", before, after)
	}
}

func (r *runner) testRestoreGarbage(t *testing.T) {
	l := r.fresh(t)
	sn, ok := layer.As[layer.Snapshotter](l)
	if !ok {
		t.Skip("not a Snapshotter")
	}
	r.populate(t, l)
	before := r.state(t, l)
	for _, garbage := range []string{"", "not json", `{"unterminated":`, "[1,2", "\x00", "}{"} {
		var err error
		r.within(t, fmt.Sprintf("Restore(%q)", garbage), func() { err = sn.Restore(t.Context(), json.RawMessage(garbage)) })
		if err == nil {
			t.Errorf("Restore(%q) = nil, want an error", garbage)
		}
		if after := r.state(t, l); after != before {
			t.Fatalf("a refused Restore(%q) changed the state:\nbefore %s\nafter  %s", garbage, before, after)
		}
	}
}

func (r *runner) testClear(t *testing.T) {
	l := r.fresh(t)
	cl, ok := layer.As[layer.Clearer](l)
	if !ok {
		t.Skip("not a Clearer")
	}
	// Clear empties the memory: the layer recalls what a fresh one does.
	// Bookkeeping that only orders later writes (a logical clock) may
	// survive it, so snapshots are not compared.
	empty := r.recalled(t, r.fresh(t))
	r.populate(t, l)
	var err error
	r.within(t, "Clear", func() { err = cl.Clear(t.Context()) })
	if err != nil {
		t.Fatalf("Clear = %v", err)
	}
	if got := r.recalled(t, l); got != empty {
		t.Errorf("what the layer recalls after Clear differs from a fresh layer's:\nfresh %s\ngot   %s", empty, got)
	}
	if mr, ok := layer.As[layer.MetricsReporter](l); ok {
		var st, fst map[string]int64
		r.within(t, "Metrics", func() { st = mr.Metrics() })
		fmr, _ := layer.As[layer.MetricsReporter](r.fresh(t))
		r.within(t, "Metrics", func() { fst = fmr.Metrics() })
		if st["entries"] != fst["entries"] {
			t.Errorf("Metrics after Clear = %v, a fresh layer's = %v: the entries differ", st, fst)
		}
	}
}

func (r *runner) testClose(t *testing.T) {
	l := r.fresh(t)
	var closeFn func() error
	if c, ok := layer.As[layer.Closer](l); ok {
		closeFn = func() error { return c.Close(t.Context()) }
	} else if c, ok := layer.As[io.Closer](l); ok {
		closeFn = c.Close
	} else {
		t.Skip("not a Closer")
	}
	r.populate(t, l)
	for i := range 2 {
		var err error
		r.within(t, "Close", func() { err = closeFn() })
		if err != nil {
			t.Errorf("Close #%d = %v, want nil", i+1, err)
		}
	}
}

var fnName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]*$`)

// maxWireNameLen is the longest tool name provider APIs accept (see
// layer.ToolName).
const maxWireNameLen = 64

func (r *runner) testProvides(t *testing.T) {
	l := r.fresh(t)
	p, ok := layer.As[layer.Provider](l)
	if !ok {
		t.Skip("not a Provider")
	}
	id := l.Spec().ID
	seen := map[string]bool{}
	for _, fn := range p.Functions() {
		name := id + "/" + fn.Name
		switch {
		case !fnName.MatchString(fn.Name):
			t.Errorf("function name %q: want a letter then letters, digits, '_' or '-'", fn.Name)
		case seen[fn.Name]:
			t.Errorf("function name %q repeated", fn.Name)
		case len(name) > maxWireNameLen:
			t.Errorf("tool name %q is longer than %d bytes: its wire name would be cut", name, maxWireNameLen)
		}
		seen[fn.Name] = true
		if fn.Call == nil {
			t.Errorf("function %q has no Call", fn.Name)
		}
		checkParameters(t, fn)
	}
}

// checkParameters checks that fn's Parameters, when set, is a JSON
// object whose type, if it names one, is "object".
func checkParameters(t *testing.T, fn layer.Function) {
	if fn.Parameters == nil {
		return
	}
	var schema map[string]any
	if err := json.Unmarshal(fn.Parameters, &schema); err != nil {
		t.Errorf("function %q: Parameters is not a JSON object: %v", fn.Name, err)
	} else if typ, ok := schema["type"]; ok && typ != "object" {
		t.Errorf("function %q: Parameters has type %v, want object", fn.Name, typ)
	}
}

func (r *runner) testConcurrent(t *testing.T) {
	tmpl := r.newLayer(t)
	s, err := layer.NewStack(layer.StackConfig{
		Layers: []layer.Layer{tmpl},
		Env:    r.env(),
		OnHook: func(ev layer.HookCall) {
			if errors.Is(ev.Err, layer.ErrPanic) {
				t.Errorf("%s panicked: %v", ev.Hook, ev.Err)
			}
		},
	})
	if err != nil {
		t.Fatalf("NewStack: %v", err)
	}
	ctx := t.Context()
	if err := s.Init(ctx); err != nil {
		t.Fatalf("Stack.Init: %v", err)
	}
	defer func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("Stack.Close: %v", err)
		}
	}()
	tools := s.Tools()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() { r.useStack(ctx, s, tools, g) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(12 * r.o.Timeout):
		t.Fatal("concurrent use through a Stack did not finish (deadlock?)")
	}
	if _, err := s.Recall(ctx, layer.Query{Budget: layer.Unbounded}, nil); errors.Is(err, layer.ErrTimeout) {
		t.Errorf("Recall after concurrent use timed out: %v", err)
	}
}

// useStack is user g of testConcurrent: ten rounds of recall, store,
// snapshot, the layers' metrics and a call of every tool.
func (r *runner) useStack(ctx context.Context, s *layer.Stack, tools []layer.Function, g int) {
	for i := range 10 {
		q := layer.Query{Text: "concurrent", Step: i, Budget: layer.Unbounded}
		_, _ = s.Recall(ctx, q, nil)
		_ = s.Store(ctx, r.o.Turns[(g+i)%len(r.o.Turns)])
		_, _ = s.Snapshot(ctx)
		for _, l := range s.Layers() {
			if mr, ok := layer.As[layer.MetricsReporter](l); ok {
				_ = mr.Metrics()
			}
		}
		for _, tl := range tools {
			_, _ = s.CallTool(ctx, tl.Name, "{}")
		}
	}
}

// testScopes: what a layer stores for a run on thread "7" of resource
// "u3" is not read by a run whose IDs collide with those across kinds —
// a thread named "u3" without a resource, a resource named "7", both —
// on the same store: each starts as it would on an empty store (issue
// 23). Global- and execution-scoped layers are not per-user and skip it.
func (r *runner) testScopes(t *testing.T) {
	tmpl := r.newLayer(t)
	in, ok := layer.As[layer.Initializer](tmpl)
	if sc := tmpl.Spec().Scope; !ok || sc == layer.ScopeGlobal || sc == layer.ScopeExecution {
		t.Skip("no per-user state")
	}
	init := func(env layer.Env) layer.Layer {
		t.Helper()
		var l layer.Layer
		var err error
		r.within(t, "Init", func() { l, err = in.Init(t.Context(), env) })
		if err != nil || l == nil {
			t.Fatalf("Init with env %+v: %v, %v", env, l, err)
		}
		t.Cleanup(func() { closeLayer(l) })
		return l
	}
	store := storage.NewMemoryStore()
	env := r.env()
	env.Store, env.ThreadID, env.ResourceID = store, "7", "u3"
	owner := init(env)
	r.populate(t, owner)
	closeLayer(owner) // flush
	for _, probe := range []struct{ thread, resource string }{{"u3", ""}, {"x", "7"}, {"u3", "7"}} {
		env := r.env()
		env.ThreadID, env.ResourceID = probe.thread, probe.resource
		want := r.state(t, init(env)) // on an empty store of its own
		env.Store = store
		if got := r.state(t, init(env)); got != want {
			t.Errorf("a run on thread %q of resource %q reads what thread \"7\" of resource \"u3\" stored:\n%s\nwant (as on an empty store):\n%s", probe.thread, probe.resource, got, want)
		}
	}
}
