package agentloop

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/storage"
)

// instrumentation is the name of the tracer and meter memlayer uses.
const instrumentation = "github.com/memlayer/memlayer/agentloop"

// Attribute keys of memlayer's spans and metrics. Values are IDs and
// names, never text from memory, prompts or tool results, which may be
// personal.
const (
	attrThread   = attribute.Key("memlayer.thread_id")
	attrResource = attribute.Key("memlayer.resource_id")
	attrDepth    = attribute.Key("memlayer.depth")
	attrStep     = attribute.Key("memlayer.step")
	attrLayer    = attribute.Key("memlayer.layer")
	attrHook     = attribute.Key("memlayer.hook")
	attrTool     = attribute.Key("memlayer.tool")
	attrTokens   = attribute.Key("memlayer.token_type")
)

// telemetry holds an agent's OpenTelemetry tracer and instruments. With
// the global providers (no-ops until the application installs some),
// each costs a few nanoseconds.
type telemetry struct {
	tracer      trace.Tracer
	hookTime    metric.Float64Histogram
	modelTime   metric.Float64Histogram
	toolTime    metric.Float64Histogram
	tokens      metric.Int64Counter
	layerTokens metric.Int64Histogram
	conflicts   metric.Int64Counter
	casLost     metric.Int64Counter
	meter       metric.Meter
	optsMu      sync.RWMutex
	opts        map[optKey]*measureOpts // built once per layer, hook, tool
	figures     sync.Map                // a layer figure's name → its instrument (metric.Int64Counter or metric.Int64Gauge)
	// mask masks the text of an error before a span records it (the
	// agent's redactor); nil records it as it is.
	mask func(string) string
	// genAI names the model's and the tools' spans.
	genAI *genAI
}

func newTelemetry(tp trace.TracerProvider, mp metric.MeterProvider) (*telemetry, error) {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter(instrumentation)
	t := &telemetry{tracer: tp.Tracer(instrumentation), opts: map[optKey]*measureOpts{}}
	var errs [7]error
	t.hookTime, errs[0] = m.Float64Histogram("memlayer.layer.hook.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of layer hook calls, by layer and hook."))
	t.modelTime, errs[1] = m.Float64Histogram("memlayer.model.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of model calls."))
	t.toolTime, errs[2] = m.Float64Histogram("memlayer.tool.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of tool calls, by tool."))
	t.tokens, errs[3] = m.Int64Counter("memlayer.model.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of model calls, by type (prompt, completion)."))
	t.layerTokens, errs[4] = m.Int64Histogram("memlayer.layer.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens each layer put into the prompt, per step."))
	t.conflicts, errs[5] = m.Int64Counter("memlayer.checkpoint.conflicts",
		metric.WithDescription("Thread writes that lost a compare-and-swap to another run."))
	t.casLost, errs[6] = m.Int64Counter("memlayer.layer.cas.conflicts",
		metric.WithDescription("Layer writes that lost a compare-and-swap to another writer, by layer; the layer retries each, up to its MaxRetries."))
	t.meter = m
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return t, nil
}

// optKey names the attributes of a measurement: one or two keys with
// their values (k2 "" for one).
type optKey struct {
	k1, k2 attribute.Key
	v1, v2 string
}

// measureOpts holds the options of one attribute set, as the slices
// Record and Add take, so that passing them allocates nothing.
type measureOpts struct {
	rec []metric.RecordOption
	add []metric.AddOption
}

// attrs returns the measurement options of the attributes k1=v1 (and
// k2=v2 unless k2 is ""), cached, so that recording a metric allocates
// nothing once a layer, hook or tool has been seen.
func (t *telemetry) attrs(k1 attribute.Key, v1 string, k2 attribute.Key, v2 string) *measureOpts {
	k := optKey{k1: k1, v1: v1, k2: k2, v2: v2}
	t.optsMu.RLock()
	o, ok := t.opts[k]
	t.optsMu.RUnlock()
	if ok {
		return o
	}
	kvs := []attribute.KeyValue{k1.String(v1)}
	if k2 != "" {
		kvs = append(kvs, k2.String(v2))
	}
	set := metric.WithAttributeSet(attribute.NewSet(kvs...))
	o = &measureOpts{rec: []metric.RecordOption{set}, add: []metric.AddOption{set}}
	t.optsMu.Lock()
	t.opts[k] = o
	t.optsMu.Unlock()
	return o
}

// start starts a span named name under ctx's span; its attributes are
// built only when the span records (a no-op provider's never do).
func (t *telemetry) start(ctx context.Context, name string, attrs func() []attribute.KeyValue) (context.Context, trace.Span) {
	ctx, span := t.tracer.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(attrs()...)
	}
	return ctx, t.masking(span)
}

// masking returns span recording errors masked by t.mask: the one place
// where the text of a tool's, a model's or a layer's error, or of a
// recovered panic, which may quote what a user said, reaches a trace.
func (t *telemetry) masking(span trace.Span) trace.Span {
	if t.mask == nil || !span.IsRecording() {
		return span
	}
	return maskedSpan{Span: span, mask: t.mask}
}

// maskedSpan is a span whose error status and exception events carry
// masked text.
type maskedSpan struct {
	trace.Span
	mask func(string) string
}

// SetStatus sets the status with its description masked.
func (s maskedSpan) SetStatus(code codes.Code, description string) {
	s.Span.SetStatus(code, s.mask(description))
}

// RecordError records err as the SDK does (an "exception" event with the
// error's type and message), its message masked.
func (s maskedSpan) RecordError(err error, opts ...trace.EventOption) {
	if err == nil {
		return
	}
	opts = append(opts, trace.WithAttributes(
		attribute.String("exception.type", errorType(err)),
		attribute.String("exception.message", s.mask(err.Error())),
	))
	s.Span.AddEvent("exception", opts...)
}

// errorType names err's type as the SDK's RecordError does.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.PkgPath() == "" && t.Name() == "" {
		return t.String() // a pointer type, say
	}
	return t.PkgPath() + "." + t.Name()
}

// end ends a span, marking it failed when err is not nil.
func end(span trace.Span, err error, opts ...trace.SpanEndOption) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(opts...)
}

// hook records a layer hook that took e.Duration and just ended: a span
// under the step that ran it (built afterwards, with its timestamps, as
// the stack reports hooks through its OnHook) and its duration.
func (t *telemetry) hook(ctx context.Context, e layer.HookCall) {
	t.hookTime.Record(ctx, e.Duration.Seconds(), t.attrs(attrLayer, e.Layer, attrHook, e.Hook).rec...)
	if !trace.SpanFromContext(ctx).IsRecording() {
		return // no trace to join (a no-op provider, or not sampled)
	}
	now := time.Now()
	_, span := t.tracer.Start(ctx, spanHook, trace.WithTimestamp(now.Add(-e.Duration)),
		trace.WithAttributes(attrLayer.String(e.Layer), attrHook.String(e.Hook)))
	end(t.masking(span), e.Err, trace.WithTimestamp(now))
}

// model records a model call's duration and tokens.
func (t *telemetry) model(ctx context.Context, took time.Duration, u Usage) {
	t.modelTime.Record(ctx, took.Seconds())
	if u.PromptTokens > 0 {
		t.tokens.Add(ctx, int64(u.PromptTokens), t.attrs(attrTokens, "prompt", "", "").add...)
	}
	if u.CompletionTokens > 0 {
		t.tokens.Add(ctx, int64(u.CompletionTokens), t.attrs(attrTokens, "completion", "", "").add...)
	}
}

// recalled records the tokens each layer put into the step's prompt
// (an item that reports none is counted with c).
func (t *telemetry) recalled(ctx context.Context, rs []layer.Recalled, c prompt.Counter) {
	if !t.layerTokens.Enabled(ctx) {
		return
	}
	for _, r := range rs {
		t.layerTokens.Record(ctx, int64(writepath.RecallTokens(r.Items, c)), t.attrs(attrLayer, r.ID, "", "").rec...)
	}
}

// position is where a run is: the step its stack's hook events name, and
// that step's context, under whose span the hooks' spans go.
type position struct {
	step atomic.Int64
	ctx  atomic.Pointer[context.Context]
}

// context returns the current step's context (the run's before the
// first step), or the background one.
func (p *position) context() context.Context {
	if c := p.ctx.Load(); c != nil {
		return *c
	}
	return context.Background()
}

// store returns s as the layers get it: a lost compare-and-swap (a
// conditional Put that fails with storage.ErrConflict) is counted in
// memlayer.layer.cas.conflicts under the layer whose key it was (the
// second part of a "layers/{id}/…" key, else the key's first part).
// The wrapper forwards storage.Searcher when s is one, so that layers
// still find the store's index through it, and storage.MultiGetter, so
// that a layer reading many records still reads them in one round trip.
func (t *telemetry) store(s storage.Store, renamed map[string]string) storage.Store {
	c := &casCounting{Store: s, t: t, renamed: renamed}
	if sr, ok := s.(storage.Searcher); ok {
		return &casCountingSearcher{casCounting: c, Searcher: sr}
	}
	return c
}

// casCountingSearcher is a casCounting store whose index calls get
// spans: Search, Index and Unindex, each under the span of the step that
// made it, naming the layer whose collection it is, never the query's
// text or the documents'.
type casCountingSearcher struct {
	*casCounting
	storage.Searcher
}

// Search searches s's index, in a memlayer.search span.
func (s *casCountingSearcher) Search(ctx context.Context, collection string, q storage.Query) ([]storage.Hit, error) {
	ctx, span := s.t.child(ctx, spanSearch, func() []attribute.KeyValue {
		return []attribute.KeyValue{attrLayer.String(s.layerOf(collection)), attrK.Int(q.K)}
	})
	hits, err := s.Searcher.Search(ctx, collection, q)
	if span.IsRecording() {
		span.SetAttributes(attrHits.Int(len(hits)))
	}
	end(span, err)
	return hits, err
}

// Index indexes docs in s's index, in a memlayer.index span.
func (s *casCountingSearcher) Index(ctx context.Context, collection string, docs ...storage.Document) error {
	ctx, span := s.t.child(ctx, spanIndex, func() []attribute.KeyValue {
		return []attribute.KeyValue{attrLayer.String(s.layerOf(collection)), attrDocs.Int(len(docs))}
	})
	err := s.Searcher.Index(ctx, collection, docs...)
	end(span, err)
	return err
}

// Unindex removes documents from s's index, in a memlayer.unindex span.
func (s *casCountingSearcher) Unindex(ctx context.Context, collection string, ids ...string) error {
	ctx, span := s.t.child(ctx, spanUnindex, func() []attribute.KeyValue {
		return []attribute.KeyValue{attrLayer.String(s.layerOf(collection)), attrDocs.Int(len(ids))}
	})
	err := s.Searcher.Unindex(ctx, collection, ids...)
	end(span, err)
	return err
}

type casCounting struct {
	storage.Store
	t *telemetry
	// renamed maps the storage name of each layer stored under another
	// name than its ID (layer.Spec.StorageName) to the ID.
	renamed map[string]string
}

// layerOf returns the ID of the layer whose key or collection name is
// key (see the function layerOf), its ID when its data is stored under
// another name.
func (s *casCounting) layerOf(key string) string {
	name := layerOf(key)
	if id, ok := s.renamed[name]; ok {
		return id
	}
	return name
}

// renamedLayers maps the storage name of each layer of cfg (and of its
// spawn layers) stored under another name than its ID to the ID, for the
// spans and metrics of the store's I/O.
func renamedLayers(cfg Config) map[string]string {
	out := map[string]string{}
	for _, l := range slices.Concat(cfg.Layers, cfg.SpawnLayers) {
		if l == nil {
			continue
		}
		if spec := l.Spec(); spec.StorageName() != spec.ID {
			out[spec.StorageName()] = spec.ID
		}
	}
	return out
}

// GetMany implements storage.MultiGetter: s's own when it has one, else
// one Get a key (see storage.GetMany).
func (s *casCounting) GetMany(ctx context.Context, keys []string) ([]storage.Item, error) {
	return storage.GetMany(ctx, s.Store, keys)
}

func (s *casCounting) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	v, err := s.Store.Put(ctx, key, value, ifVersion)
	if err != nil && ifVersion != storage.AnyVersion && errors.Is(err, storage.ErrConflict) {
		s.t.casLost.Add(ctx, 1, s.t.attrs(attrLayer, s.layerOf(key), "", "").add...)
	}
	return v, err
}

// layerMetrics records, as a run ends, the figures of each of its layers
// that reports some: a count "x_total" is added to the counter
// memlayer.layer.x, a level "y" recorded in the gauge memlayer.layer.y,
// each under the layer's ID.
func (t *telemetry) layerMetrics(ctx context.Context, st *layer.Stack) {
	if !t.layerTokens.Enabled(ctx) {
		return // no meter provider installed: nothing would record them
	}
	for _, l := range st.Layers() {
		r, ok := layer.As[layer.MetricsReporter](l)
		if !ok {
			continue
		}
		id := l.Spec().ID
		for name, v := range r.Metrics() {
			t.recordFigure(ctx, id, name, v)
		}
	}
}

// recordFigure records the figure name, of value v, of layer id: a count
// is added to its counter, a level recorded in its gauge.
func (t *telemetry) recordFigure(ctx context.Context, id, name string, v int64) {
	inst, err := t.figure(name)
	if err != nil {
		return // an invalid instrument name: nothing to record it in
	}
	opt := t.attrs(attrLayer, id, "", "")
	switch inst := inst.(type) {
	case metric.Int64Counter:
		if v > 0 {
			inst.Add(ctx, v, opt.add...)
		}
	case metric.Int64Gauge:
		inst.Record(ctx, v, opt.rec...)
	}
}

// figure returns the instrument of a layer figure, made on first use.
func (t *telemetry) figure(name string) (any, error) {
	if inst, ok := t.figures.Load(name); ok {
		return inst, nil
	}
	var inst any
	var err error
	if base, ok := strings.CutSuffix(name, "_total"); ok {
		inst, err = t.meter.Int64Counter("memlayer.layer."+base, metric.WithDescription("A layer's count of "+strings.ReplaceAll(base, "_", " ")+", by layer (see the layer's Metrics)."))
	} else {
		inst, err = t.meter.Int64Gauge("memlayer.layer."+name, metric.WithDescription("A layer's "+strings.ReplaceAll(name, "_", " ")+" at the end of a run, by layer (see the layer's Metrics)."))
	}
	if err != nil {
		return nil, err
	}
	inst, _ = t.figures.LoadOrStore(name, inst)
	return inst, nil
}
