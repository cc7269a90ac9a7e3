package writepath

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
)

// Redactor masks what a run keeps, by a redact.Policy, and counts what it
// masked. A nil Redactor (a disabled policy) masks nothing.
type Redactor struct {
	p     redact.Policy
	tools map[string]bool
}

// NewRedactor returns p's Redactor; nil when p is disabled.
func NewRedactor(p redact.Policy) *Redactor {
	if p.Disabled {
		return nil
	}
	return &Redactor{p: p, tools: p.LayerMasked()}
}

// ForLayers returns the layers' redaction (layer.Env.Redact): nil when
// redaction is disabled.
func (rd *Redactor) ForLayers() func(layerID, text string) string {
	if rd == nil {
		return nil
	}
	return rd.p.ForLayers()
}

// Text masks text, keeping every string of keep, and counts what it
// masked in n (see redact.Policy.Mask).
func (rd *Redactor) Text(text string, keep []string, n *Counts) string {
	if rd == nil {
		return text
	}
	out, found := rd.p.Mask(text, keep)
	n.Add(found)
	return out
}

// turn returns a masked copy of t for the layers' Store, keeping its
// tool-call IDs.
func (rd *Redactor) Turn(t layer.Turn, n *Counts) layer.Turn {
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
	t.Query = rd.Text(t.Query, keep, n)
	t.Response = rd.Text(t.Response, keep, n)
	t.ToolCalls = slices.Clone(t.ToolCalls)
	for i, c := range t.ToolCalls {
		t.ToolCalls[i].Arguments = rd.Text(c.Arguments, keep, n)
	}
	t.Results = slices.Clone(t.Results)
	for i, r := range t.Results {
		t.Results[i].Arguments = rd.Text(r.Arguments, keep, n)
		t.Results[i].Content = rd.Text(r.Content, keep, n)
	}
	return t
}

// masksTools reports whether the tools of layer l get masked arguments:
// unless redact.Policy.Layers turns it off for l, they do, the
// scratchpad's included.
func (rd *Redactor) MasksTools(l layer.Layer) bool {
	if rd == nil || l == nil {
		return false
	}
	if on, ok := rd.tools[l.Spec().ID]; ok {
		return on
	}
	return true
}

// Counts counts what a run masked, by kind.
type Counts struct {
	mu sync.Mutex
	by map[redact.Kind]int
}

func (n *Counts) Add(found []redact.Finding) {
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

// Counts returns a copy of the counts, or nil when nothing was masked.
func (n *Counts) Counts() map[redact.Kind]int {
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
func (rd *Redactor) Diagnostic() func(string) string {
	if rd == nil {
		return nil
	}
	return func(s string) string { return rd.Text(s, nil, nil) }
}

// logger returns l masking, through the agent's redactor, every record's
// message and every attribute value but the IDs and names of loggedIDs (a
// tool's, a layer's, a model's error, a recovered panic): the one place
// where the agent's and its layers' diagnostics, which may quote what a
// user said, reach the log. With redaction disabled it is l.
func (rd *Redactor) Logger(l *slog.Logger) *slog.Logger {
	if rd == nil || l == nil {
		return l
	}
	if _, ok := l.Handler().(maskingHandler); ok {
		return l
	}
	return slog.New(maskingHandler{h: l.Handler(), mask: rd.Diagnostic()})
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

// audit returns entries with their texts and reasons masked.
func (rd *Redactor) Audit(entries []audit.Entry) []audit.Entry {
	if rd == nil {
		return entries
	}
	out := make([]audit.Entry, len(entries))
	for i, e := range entries {
		e.Text = rd.Text(e.Text, nil, nil)
		e.Reason = rd.Text(e.Reason, nil, nil)
		out[i] = e
	}
	return out
}
