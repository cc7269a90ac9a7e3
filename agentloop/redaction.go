package agentloop

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/workingmemory"
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
//   - the arguments of the layers' own tools (such as semantic memory's
//     memorize), except the scratchpad's: a user who asks the agent to
//     note their e-mail address on the scratchpad may want it kept.
//
// The model still sees the run's messages as they were, so a task that
// needs the address can finish; what a later run loads is masked.
// Identifiers are never altered: tool-call IDs are kept, and the default
// redactor skips values under ID-named JSON keys (at any depth, JSON
// documents carried as escaped strings included) and numbers that fail a
// card's or an IBAN's check, so a long numeric page ID survives.
type RedactionConfig struct {
	// Disabled stores everything as it was said.
	Disabled bool
	// Redactor masks text; nil is redact.Default.
	Redactor redact.Redactor
	// Tools says, by layer ID, whether a layer's tools get masked
	// arguments, overriding the default: masked, except for the
	// scratchpad (a *workingmemory.Layer).
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
	return &redactor{r: r, tools: cfg.Tools}
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
func (rd *redactor) message(m StoredMessage, n *redactions) StoredMessage {
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

// masksTools reports whether the tools of layer l get masked arguments.
func (rd *redactor) masksTools(l layer.Layer) bool {
	if rd == nil || l == nil {
		return false
	}
	if on, ok := rd.tools[l.Spec().ID]; ok {
		return on
	}
	_, scratchpad := layer.As[*workingmemory.Layer](l)
	return !scratchpad
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
