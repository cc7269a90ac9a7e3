package agentloop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/thread"
)

// RedactionConfig says what is masked before it reaches a store. By
// default the agent masks personal data and secrets (e-mail addresses,
// phone numbers, payment card numbers, IBANs, API keys and bearer tokens:
// see package redact) in everything it stores or hands a layer to keep:
//
//   - the thread's messages (the user's, the model's, tool calls and tool
//     results) and so the summaries made from them;
//   - the turn each layer's Store gets (the user's input, the answer, tool
//     arguments and results), so entity, episodic and semantic memory
//     never see the secrets a conversation carried;
//   - what working memory keeps, by one rule for both kinds: the
//     arguments of the layers' own tools (semantic memory's memorize,
//     the scratchpad's update), and the values the key-value memory
//     (package kv) writes to the store and into checkpoints, which the
//     code that sets them never hands to the agent: the layers get the
//     redactor through layer.Env.Redact. The run's own memory keeps
//     the values as they were set, for the rest of the run; what a later
//     run loads is masked. Layers turns masking off for a layer (a
//     scratchpad whose user asks it to keep their address, say, or whose
//     schema constrains such a field with a pattern the mask would not
//     match).
//
// The model still sees the run's messages as they were, so a task that
// needs the address can finish; what a later run loads is masked.
//
// Traces and logs get the same masking: the text of an error (a tool's,
// the model's, a layer's, a recovered panic's value) is masked before it
// goes into a span's status or exception event, and the agent's Logger
// (which the layers and the audit log get too) masks every record's
// message and attribute values but IDs and names (agent, thread, layer,
// hook, tool, ...).
// Identifiers are never altered: tool-call IDs are kept, and the default
// redactor skips values under ID-named JSON keys (at any depth, JSON
// documents carried as escaped strings included) and numbers that fail a
// card's or an IBAN's check, so a long numeric page ID survives.
type RedactionConfig struct {
	// Disabled stores everything as it was said.
	Disabled bool
	// Redactor masks text; nil is redact.Default.
	Redactor redact.Redactor
	// Layers says, by layer ID, whether what a layer keeps of a run is
	// masked (the arguments of its tools; the values the key-value memory
	// writes out), overriding the default: masked, for every layer.
	Layers map[string]bool
	// Tools is the former name of Layers, which overrides it.
	//
	// Deprecated: use Layers.
	Tools map[string]bool
}

// redactor is an agent's redaction: nil when it is disabled.
type redactor struct {
	r     redact.Redactor
	tools map[string]bool
}

func newRedactor(cfg RedactionConfig) *redactor {
	if cfg.Disabled {
		return nil
	}
	r := cfg.Redactor
	if r == nil {
		r = redact.Default
	}
	layers := maps.Clone(cfg.Tools)
	if len(cfg.Layers) > 0 && layers == nil {
		layers = map[string]bool{}
	}
	maps.Copy(layers, cfg.Layers)
	return &redactor{r: r, tools: layers}
}

// ForLayers returns what layer.Env.Redact should be for a stack that c's
// redaction applies to: it masks the text a layer stores (the key-value
// memory's values) unless c is disabled or turns masking off for that
// layer (Layers). The agent sets it on its runs' stacks itself; use it
// for a stack built by hand, such as one behind a langchaingo Memory
// (NewMemory). It returns nil when c is disabled.
func (c RedactionConfig) ForLayers() func(layerID, text string) string {
	return newRedactor(c).forLayers()
}

// forLayers returns the layers' redaction (layer.Env.Redact): nil when
// redaction is disabled.
func (rd *redactor) forLayers() func(layerID, text string) string {
	if rd == nil {
		return nil
	}
	return func(layerID, text string) string {
		if on, ok := rd.tools[layerID]; ok && !on {
			return text
		}
		return rd.text(text, nil, nil)
	}
}

// text masks text, keeping every string of keep. A masked JSON document
// stays valid JSON: the default redactor masks a document value by value
// (see package redact); should another redactor's mask cut across the
// syntax, the string values are masked one by one instead, a string that
// holds a JSON document itself as a document, and the document is written
// back compact with its members sorted and its numbers as they were (read
// as json.Number, never through a float64, so a long numeric ID is not
// rounded).
func (rd *redactor) text(text string, keep []string, n *redactions) string {
	if rd == nil || text == "" {
		return text
	}
	out, found := rd.r.Redact(text, keep)
	if len(found) == 0 {
		return text
	}
	if json.Valid([]byte(out)) || !json.Valid([]byte(text)) {
		n.add(found)
		return out
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return out
	}
	v = rd.value(v, keep, n)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return out
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// value masks the strings of a decoded JSON value.
func (rd *redactor) value(v any, keep []string, n *redactions) any {
	switch v := v.(type) {
	case string:
		if t := strings.TrimSpace(v); t != "" && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
			return rd.text(v, keep, n) // a JSON document written as a string
		}
		out, found := rd.r.Redact(v, keep)
		n.add(found)
		return out
	case []any:
		for i := range v {
			v[i] = rd.value(v[i], keep, n)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = rd.value(e, keep, n)
		}
	}
	return v
}

// message masks a stored message, keeping its tool-call IDs.
func (rd *redactor) message(m thread.Message, n *redactions) thread.Message {
	if rd == nil {
		return m
	}
	keep := make([]string, 0, len(m.ToolCalls)+len(m.ToolResults))
	for _, c := range m.ToolCalls {
		keep = append(keep, c.ID)
	}
	for _, r := range m.ToolResults {
		keep = append(keep, r.CallID)
	}
	m.Text = rd.text(m.Text, keep, n)
	m.ToolCalls = slices.Clone(m.ToolCalls)
	for i, c := range m.ToolCalls {
		m.ToolCalls[i].Arguments = rd.text(c.Arguments, keep, n)
	}
	m.ToolResults = slices.Clone(m.ToolResults)
	for i, r := range m.ToolResults {
		m.ToolResults[i].Content = rd.text(r.Content, keep, n)
	}
	return m
}

// turn returns a masked copy of t for the layers' Store, keeping its
// tool-call IDs.
func (rd *redactor) turn(t layer.Turn, n *redactions) layer.Turn {
	if rd == nil {
		return t
	}
	keep := make([]string, 0, len(t.ToolCalls)+len(t.Results))
	for _, c := range t.ToolCalls {
		keep = append(keep, c.ID)
	}
	for _, r := range t.Results {
		keep = append(keep, r.ID)
	}
	t.Query = rd.text(t.Query, keep, n)
	t.Response = rd.text(t.Response, keep, n)
	t.ToolCalls = slices.Clone(t.ToolCalls)
	for i, c := range t.ToolCalls {
		t.ToolCalls[i].Arguments = rd.text(c.Arguments, keep, n)
	}
	t.Results = slices.Clone(t.Results)
	for i, r := range t.Results {
		t.Results[i].Arguments = rd.text(r.Arguments, keep, n)
		t.Results[i].Content = rd.text(r.Content, keep, n)
	}
	return t
}

// masksTools reports whether the tools of layer l get masked arguments:
// unless RedactionConfig.Layers turns it off for l, they do, the
// scratchpad's included.
func (rd *redactor) masksTools(l layer.Layer) bool {
	if rd == nil || l == nil {
		return false
	}
	if on, ok := rd.tools[l.Spec().ID]; ok {
		return on
	}
	return true
}

// redactions counts what a run masked, by kind.
type redactions struct {
	mu sync.Mutex
	by map[redact.Kind]int
}

func (n *redactions) add(found []redact.Finding) {
	if n == nil || len(found) == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.by == nil {
		n.by = map[redact.Kind]int{}
	}
	for _, f := range found {
		n.by[f.Kind]++
	}
}

// counts returns a copy of the counts, or nil when nothing was masked.
func (n *redactions) counts() map[redact.Kind]int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.by) == 0 {
		return nil
	}
	return maps.Clone(n.by)
}

// diagnostic masks text bound for a trace or a log (an error's text, a
// recovered panic's value): nil when redaction is disabled, so that the
// text goes as it was.
func (rd *redactor) diagnostic() func(string) string {
	if rd == nil {
		return nil
	}
	return func(s string) string { return rd.text(s, nil, nil) }
}

// logger returns l masking, through the agent's redactor, every record's
// message and every attribute value but the IDs and names of loggedIDs (a
// tool's, a layer's, a model's error, a recovered panic): the one place
// where the agent's and its layers' diagnostics, which may quote what a
// user said, reach the log. With redaction disabled it is l.
func (rd *redactor) logger(l *slog.Logger) *slog.Logger {
	if rd == nil || l == nil {
		return l
	}
	if _, ok := l.Handler().(maskingHandler); ok {
		return l
	}
	return slog.New(maskingHandler{h: l.Handler(), mask: rd.diagnostic()})
}

// loggedIDs are the attribute keys whose values are IDs and names, logged
// as they are (as the spans' attributes are).
var loggedIDs = map[string]bool{
	"agent": true, "event": true, "thread": true, "resource": true, "layer": true, "hook": true,
	"tool": true, "in": true, "kind": true, "stop_reason": true, "checkpoint_agent": true,
	"quarantine": true, "call": true, "key": true, "stack": true,
}

// maskingHandler is a slog.Handler that masks text before its handler
// gets it.
type maskingHandler struct {
	h    slog.Handler
	mask func(string) string
}

func (m maskingHandler) Enabled(ctx context.Context, l slog.Level) bool { return m.h.Enabled(ctx, l) }

func (m maskingHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, m.mask(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(m.attr(a))
		return true
	})
	return m.h.Handle(ctx, out)
}

func (m maskingHandler) WithAttrs(as []slog.Attr) slog.Handler {
	masked := make([]slog.Attr, len(as))
	for i, a := range as {
		masked[i] = m.attr(a)
	}
	return maskingHandler{h: m.h.WithAttrs(masked), mask: m.mask}
}

func (m maskingHandler) WithGroup(name string) slog.Handler {
	return maskingHandler{h: m.h.WithGroup(name), mask: m.mask}
}

// attr masks an attribute's value: a string, an error's text, any other
// value as fmt prints it (left as it was when nothing in it is masked),
// a group's attributes each.
func (m maskingHandler) attr(a slog.Attr) slog.Attr {
	a.Value = a.Value.Resolve()
	if loggedIDs[a.Key] {
		return a
	}
	switch a.Value.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(m.mask(a.Value.String()))
	case slog.KindAny:
		var s string
		if err, ok := a.Value.Any().(error); ok {
			s = err.Error()
		} else {
			s = fmt.Sprint(a.Value.Any())
		}
		if masked := m.mask(s); masked != s {
			a.Value = slog.StringValue(masked)
		}
	case slog.KindGroup:
		g := a.Value.Group()
		masked := make([]slog.Attr, len(g))
		for i, x := range g {
			masked[i] = m.attr(x)
		}
		a.Value = slog.GroupValue(masked...)
	}
	return a
}
