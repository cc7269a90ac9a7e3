package redact

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
)

// Policy says what is masked before it reaches a store. By default an
// agent masks personal data and secrets (e-mail addresses, phone numbers,
// payment card numbers, IBANs, API keys and bearer tokens) in everything
// it stores or hands a layer to keep:
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
type Policy struct {
	// Disabled stores everything as it was said.
	Disabled bool
	// Redactor masks text; nil is Default.
	Redactor Redactor
	// Layers says, by layer ID, whether what a layer keeps of a run is
	// masked (the arguments of its tools; the values the key-value memory
	// writes out), overriding the default: masked, for every layer.
	Layers map[string]bool
	// Tools is the former name of Layers, which overrides it.
	//
	// Deprecated: use Layers.
	Tools map[string]bool
}

// redactor returns the policy's redactor (Default when it names none);
// nil when the policy is disabled.
func (p Policy) redactor() Redactor {
	if p.Disabled {
		return nil
	}
	if p.Redactor == nil {
		return Default
	}
	return p.Redactor
}

// LayerMasked reports, by layer ID, whether what each layer keeps is
// masked when the policy names it (Layers over Tools); a layer it does
// not name is masked.
func (p Policy) LayerMasked() map[string]bool {
	layers := maps.Clone(p.Tools)
	if len(p.Layers) > 0 && layers == nil {
		layers = map[string]bool{}
	}
	maps.Copy(layers, p.Layers)
	return layers
}

// Mask masks text by the policy, keeping every string of keep, and
// returns what it found. A masked JSON document stays valid JSON: the
// default redactor masks a document value by value; should another
// redactor's mask cut across the syntax, the string values are masked one
// by one instead, a string that holds a JSON document itself as a
// document, and the document is written back compact with its members
// sorted and its numbers as they were (read as json.Number, never through
// a float64, so a long numeric ID is not rounded). A disabled policy
// returns text as it is.
func (p Policy) Mask(text string, keep []string) (string, []Finding) {
	return maskJSON(p.redactor(), text, keep)
}

func maskJSON(r Redactor, text string, keep []string) (string, []Finding) {
	if r == nil || text == "" {
		return text, nil
	}
	out, found := r.Redact(text, keep)
	if len(found) == 0 {
		return text, nil
	}
	if json.Valid([]byte(out)) || !json.Valid([]byte(text)) {
		return out, found
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return out, nil
	}
	var all []Finding
	v = maskValue(r, v, keep, &all)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return out, all
	}
	return strings.TrimSuffix(b.String(), "\n"), all
}

// maskValue masks the strings of a decoded JSON value.
func maskValue(r Redactor, v any, keep []string, all *[]Finding) any {
	switch v := v.(type) {
	case string:
		out, found := maskString(r, v, keep)
		*all = append(*all, found...)
		return out
	case []any:
		for i := range v {
			v[i] = maskValue(r, v[i], keep, all)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = maskValue(r, e, keep, all)
		}
	}
	return v
}

// maskString masks s, a string of a decoded JSON value: as a document
// when it holds one, else as text.
func maskString(r Redactor, s string, keep []string) (string, []Finding) {
	if t := strings.TrimSpace(s); len(t) >= 2 && closers[t[0]] != 0 && json.Valid([]byte(t)) {
		return maskJSON(r, s, keep) // a JSON document written as a string
	}
	return r.Redact(s, keep)
}

// ForLayers returns what layer.Env.Redact should be for a stack the
// policy applies to: it masks the text a layer stores (the key-value
// memory's values) unless the policy is disabled or turns masking off for
// that layer (Layers). An agent sets it on its runs' stacks itself; use
// it for a stack built by hand, such as one behind a langchaingo memory.
// It returns nil when the policy is disabled.
func (p Policy) ForLayers() func(layerID, text string) string {
	r := p.redactor()
	if r == nil {
		return nil
	}
	layers := p.LayerMasked()
	return func(layerID, text string) string {
		if on, ok := layers[layerID]; ok && !on {
			return text
		}
		out, _ := maskJSON(r, text, nil)
		return out
	}
}
