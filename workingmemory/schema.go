package workingmemory

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	jsonschemago "github.com/google/jsonschema-go/jsonschema"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/internal/safeschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL names the compiled schema. An absolute URL keeps the working
// directory out of error messages (a relative one would be resolved
// against it), and a hierarchical one gives a relative "$ref" its own
// URL, which the loader then refuses (against a urn it would resolve to
// the schema itself).
const schemaURL = "memlayer://schemas/working-memory"

// schema is a compiled state schema. jsonschema/v6 gives every verdict.
type schema struct {
	doc  any // the schema document, map[string]any form
	full *jsonschema.Schema
}

// compileSchema compiles the schema given in cfg, or returns nil when
// there is none.
func compileSchema(cfg Config) (*schema, error) {
	var b []byte
	var err error
	switch {
	case cfg.Schema != nil && cfg.SchemaFile != "":
		return nil, fmt.Errorf("%w: set Schema or SchemaFile, not both", ErrInvalidConfig)
	case cfg.SchemaFile != "":
		if b, err = os.ReadFile(cfg.SchemaFile); err != nil {
			return nil, fmt.Errorf("%w: schema file: %w", ErrInvalidConfig, err)
		}
	case cfg.Schema == nil:
		return nil, nil
	default:
		b, err = schemaJSON(cfg.Schema)
	}
	var doc any
	if err == nil {
		doc, err = safeschema.Decode(b)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %w", ErrInvalidConfig, err)
	}
	full, err := safeschema.Compile(schemaURL, doc, cfg.SchemaLoader)
	if errors.Is(err, safeschema.ErrNoLoader) {
		return nil, fmt.Errorf("%w: schema (set Config.SchemaLoader to resolve it): %w", ErrInvalidConfig, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %w", ErrInvalidConfig, err)
	}
	return &schema{doc: doc, full: full}, nil
}

// schemaJSON returns Config.Schema as JSON: text as it is, a Go state
// type's inferred schema, any other value encoded.
func schemaJSON(s any) ([]byte, error) {
	switch s := s.(type) {
	case string:
		return []byte(s), nil
	case []byte:
		return s, nil
	case json.RawMessage:
		return s, nil
	}
	if t := goStateType(s); t != nil {
		return inferSchema(t)
	}
	return json.Marshal(s)
}

// validate checks a state and returns nil or a *SchemaError listing every
// violation.
func (s *schema) validate(v any) error {
	err := s.full.Validate(jsonx.ToGo(v))
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &SchemaError{Violations: []Violation{{Pointer: "", Reason: err.Error()}}}
	}
	se := &SchemaError{}
	collectViolations(ve, &se.Violations)
	return se
}

// collectViolations flattens a jsonschema error tree into its leaves,
// which are the individual failures (a tree has at least one).
func collectViolations(e *jsonschema.ValidationError, out *[]Violation) {
	if len(e.Causes) == 0 {
		*out = append(*out, Violation{Pointer: pointer(e.InstanceLocation), Reason: reason(e.ErrorKind)})
		return
	}
	for _, c := range e.Causes {
		collectViolations(c, out)
	}
}

// reason renders one failure in jsonschema's words (its default English
// printer) without the location, which Violation carries apart.
func reason(k jsonschema.ErrorKind) string {
	return strings.TrimPrefix((&jsonschema.ValidationError{ErrorKind: k}).Error(), "at '': ")
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// SchemaError is the error of an update whose merged state fails the
// schema (or of a template, stored state or snapshot that does). It lists every violation so the model can fix them all in one
// retry. It matches ErrSchema with errors.Is.
type SchemaError struct {
	Violations []Violation
	// what failed, for the message; "" is an update.
	what string
}

// Violation is one schema failure: where (a JSON Pointer into the merged
// state, "" for the root) and why.
type Violation struct {
	Pointer string `json:"pointer"`
	Reason  string `json:"reason"`
}

// Error lists every violation, one per line.
func (e *SchemaError) Error() string {
	var b strings.Builder
	if e.what == "" {
		b.WriteString("workingmemory: update rejected by schema, the state is unchanged:")
	} else {
		b.WriteString("workingmemory: " + e.what + " fails the schema:")
	}
	for _, v := range e.Violations {
		p := v.Pointer
		if p == "" {
			p = "(root)"
		}
		fmt.Fprintf(&b, "\n- at %s: %s", p, v.Reason)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *SchemaError) Is(target error) bool { return target == ErrSchema }

// patchSchema derives the JSON Schema of the update tool's arguments from
// the state schema: objects lose "required" (an update names only what
// changes) and their properties also accept null (null keeps the value, so
// that models forced by strict tool schemas to send every field can say
// "no change"); array items stay as they are (an array replaces whole, so
// it must be complete); every object may carry DeleteKey.
func patchSchema(doc any) json.RawMessage {
	p := patchNode(doc, true)
	b, _ := json.Marshal(p)
	return b
}

func patchNode(doc any, top bool) any {
	m, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		switch k {
		case "required":
		case "$schema":
			if top {
				out[k] = v
			}
		case "properties":
			out[k] = patchProperties(v)
		default:
			out[k] = v
		}
	}
	if isObjectSchema(m) {
		props, _ := out["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
			out["properties"] = props
		}
		props[DeleteKey] = deleteSchema
	}
	return out
}

// patchProperties is patchNode of a "properties" keyword: each property
// patched and made nullable. A value that is not an object is kept.
func patchProperties(v any) any {
	props, ok := v.(map[string]any)
	if !ok {
		return v
	}
	np := make(map[string]any, len(props)+1)
	for name, s := range props {
		np[name] = nullable(patchNode(s, false))
	}
	return np
}

var deleteSchema = map[string]any{
	"type":        "array",
	"items":       map[string]any{"type": "string"},
	"description": "Paths to delete before the rest of this object is merged, relative to this object: \"key\", \"key/sub\", \"list/0\" (JSON Pointer, or dotted).",
}

func isObjectSchema(m map[string]any) bool {
	if _, ok := m["properties"]; ok {
		return true
	}
	switch t := m["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

func nullable(s any) any {
	if b, ok := s.(bool); ok && b {
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}

// goStateType returns the struct type of s when Config.Schema is a Go
// struct, or a pointer to one, that is the state's type rather than a
// schema document; nil otherwise. A struct is a schema document when its
// type is a JSON Schema type (google/jsonschema-go's Schema and the like,
// from a package named jsonschema) or when it encodes to a non-empty JSON
// object holding only JSON Schema keywords.
func goStateType(s any) reflect.Type {
	t := reflect.TypeOf(s)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || strings.HasSuffix(t.PkgPath(), "jsonschema") {
		return nil
	}
	if encodesAsSchema(s) {
		return nil
	}
	return t
}

// encodesAsSchema reports whether s encodes to a non-empty JSON object
// holding only JSON Schema keywords. A value that does not encode is not
// a schema (inferSchema then says why).
func encodesAsSchema(s any) bool {
	b, err := json.Marshal(s)
	if err != nil {
		return false
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil || len(keys) == 0 {
		return false
	}
	for k := range keys {
		if !schemaKeywords[k] {
			return false
		}
	}
	return true
}

// schemaKeywords are the keywords of JSON Schema (2020-12 and draft-07).
var schemaKeywords = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`$schema $id $ref $defs $anchor $dynamicRef $dynamicAnchor $comment $vocabulary
		definitions type enum const title description default examples deprecated readOnly writeOnly
		properties patternProperties additionalProperties propertyNames required dependentRequired
		dependentSchemas dependencies unevaluatedProperties minProperties maxProperties
		items prefixItems additionalItems contains minContains maxContains unevaluatedItems minItems maxItems uniqueItems
		allOf anyOf oneOf not if then else format pattern minLength maxLength
		minimum maximum exclusiveMinimum exclusiveMaximum multipleOf contentEncoding contentMediaType contentSchema`) {
		m[k] = true
	}
	return m
}()

// inferSchema returns the JSON Schema of the Go type t, inferred by
// github.com/google/jsonschema-go as agentloop.NewTool infers a tool's
// parameters: exported fields under their JSON names, with their types;
// fields without omitempty or omitzero are required; other properties
// are refused.
func inferSchema(t reflect.Type) ([]byte, error) {
	s, err := jsonschemago.ForType(t, nil)
	if err != nil {
		return nil, fmt.Errorf("infer the schema of %v: %w", t, err)
	}
	return json.Marshal(s)
}
