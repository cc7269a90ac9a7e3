package workingmemory

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL names the compiled schema. A urn keeps the working directory
// out of error messages (a relative URL would be resolved against it).
const schemaURL = "urn:memlayer:working-memory"

// schema is a compiled state schema: the authoritative jsonschema/v6
// validator and, when the schema uses only the keywords it understands, a
// fast validator that walks the state without allocating. A state the fast
// validator accepts is valid; one it rejects is re-checked by jsonschema,
// whose verdict and violation list are the ones reported.
type schema struct {
	doc    any // the schema document, map[string]any form
	full   *jsonschema.Schema
	fast   *node             // nil: always use full
	intern map[string]string // property names
}

// compileSchema compiles the schema given in cfg, or returns nil when
// there is none.
func compileSchema(cfg Config) (*schema, error) {
	var doc any
	var err error
	switch {
	case cfg.Schema != nil && cfg.SchemaFile != "":
		return nil, fmt.Errorf("%w: set Schema or SchemaFile, not both", ErrInvalidConfig)
	case cfg.SchemaFile != "":
		b, rerr := os.ReadFile(cfg.SchemaFile)
		if rerr != nil {
			return nil, fmt.Errorf("%w: schema file: %w", ErrInvalidConfig, rerr)
		}
		doc, err = decodeJSON(b, 512)
	case cfg.Schema == nil:
		return nil, nil
	default:
		switch s := cfg.Schema.(type) {
		case string:
			doc, err = decodeJSON([]byte(s), 512)
		default:
			doc, err = normalize(s, 512)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %w", ErrInvalidConfig, err)
	}
	doc = toGo(doc)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: schema: %w", ErrInvalidConfig, err)
	}
	full, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: schema: %w", ErrInvalidConfig, err)
	}
	s := &schema{doc: doc, full: full, intern: map[string]string{}}
	if !isDraft4(doc) {
		s.fast, _ = compileNode(doc)
	}
	collectNames(doc, s.intern)
	return s, nil
}

// collectNames gathers the property names a schema mentions, so that
// decoding shares their strings instead of allocating them.
func collectNames(doc any, into map[string]string) {
	switch d := doc.(type) {
	case map[string]any:
		if props, ok := d["properties"].(map[string]any); ok {
			for k := range props {
				into[k] = k
			}
		}
		for _, v := range d {
			collectNames(v, into)
		}
	case []any:
		for _, v := range d {
			collectNames(v, into)
		}
	}
}

func isDraft4(doc any) bool {
	m, _ := doc.(map[string]any)
	v, _ := m["$schema"].(string)
	return strings.Contains(v, "draft-04") || strings.Contains(v, "draft-03")
}

// validateNext checks next, the successor of the state prev. When prev
// passed the schema, only the root's own constraints and the members of
// next that are not the same values as in prev are checked by the fast
// validator (its checks of one member never depend on another's).
func (s *schema) validateNext(prev *state, next any) error {
	if s.fast != nil && prev.valid {
		if po, ok := prev.tree().(*object); ok && s.fast.validChanged(po, next) {
			return nil
		}
	}
	return s.validate(next)
}

// validChanged is valid for an object whose unchanged members (the same
// values as in old, which was valid) need no check.
func (n *node) validChanged(old *object, v any) bool {
	o, ok := v.(*object)
	if !ok || n.never || n.hasConst || n.enum != nil {
		return n.valid(v)
	}
	return n.validObject(o, old)
}

// validObject checks an object against the object keywords of n. Members
// that are the same values as in old (nil: none), which was valid, are
// not checked again.
func (n *node) validObject(o, old *object) bool {
	if n.types&tObj == 0 || len(o.m) < n.minProps || n.maxProps >= 0 && len(o.m) > n.maxProps {
		return false
	}
	for _, r := range n.required {
		if _, ok := o.find(r); !ok {
			return false
		}
	}
	var prev []member
	if old != nil {
		prev = old.m
	}
	// Members, old members and property names are all sorted: one
	// merge-join.
	j, k := 0, 0
	for _, e := range o.m {
		for k < len(prev) && prev[k].key != e.key && prev[k].key < e.key {
			k++ // (keys are usually shared strings: == is the cheap test)
		}
		if k < len(prev) && prev[k].key == e.key && sameValue(prev[k].val, e.val) {
			continue
		}
		for j < len(n.propKeys) && n.propKeys[j] < e.key {
			j++
		}
		if j < len(n.propKeys) && n.propKeys[j] == e.key {
			if !n.propNodes[j].valid(e.val) {
				return false
			}
		} else if n.additional != nil && !n.additional.valid(e.val) {
			return false
		}
	}
	return true
}

// validate checks a state and returns nil or a *SchemaError listing every
// violation.
func (s *schema) validate(v any) error {
	if s.fast != nil && s.fast.valid(v) {
		return nil
	}
	err := s.full.Validate(toGo(v))
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &SchemaError{Violations: []Violation{{Pointer: "", Reason: err.Error()}}}
	}
	se := &SchemaError{}
	collectViolations(ve, &se.Violations)
	if len(se.Violations) == 0 {
		se.Violations = append(se.Violations, Violation{Reason: ve.Error()})
	}
	return se
}

// collectViolations flattens a jsonschema error tree into its leaves,
// which are the individual failures.
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
// schema. It lists every violation so the model can fix them all in one
// retry. It matches ErrSchema with errors.Is.
type SchemaError struct {
	Violations []Violation
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
	b.WriteString("workingmemory: update rejected by schema, the state is unchanged:")
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

// node is one compiled schema of the fast validator.
type node struct {
	never      bool // the false schema
	types      uint8
	propKeys   []string // sorted
	propNodes  []*node  // propNodes[i] is the schema of propKeys[i]
	additional *node    // nil: anything allowed
	required   []string
	enum       []any
	hasConst   bool
	constVal   any
	minLen     int
	maxLen     int // -1: none
	pattern    *regexp.Regexp
	min, max   float64 // -Inf, +Inf: none
	exMin      float64 // -Inf: none
	exMax      float64 // +Inf: none
	items      *node
	minItems   int
	maxItems   int // -1: none
	unique     bool
	minProps   int
	maxProps   int // -1: none
}

const (
	tNull uint8 = 1 << iota
	tBool
	tInt
	tNum
	tStr
	tArr
	tObj
	tAny = 0xFF
)

// annotation keywords the fast validator may ignore: they never make a
// value invalid.
var annotations = map[string]bool{
	"$schema": true, "$id": true, "$comment": true, "$anchor": true, "title": true,
	"description": true, "default": true, "examples": true, "readOnly": true,
	"writeOnly": true, "deprecated": true, "$defs": true, "definitions": true,
}

var errUnsupported = errors.New("keyword not supported by the fast validator")

// compileNode compiles a schema for the fast validator, or fails when it
// uses any keyword the fast validator does not implement (then the state
// is always checked by jsonschema).
func compileNode(doc any) (*node, error) {
	switch d := doc.(type) {
	case bool:
		if d {
			return &node{types: tAny, maxLen: -1, maxItems: -1, maxProps: -1, min: math.Inf(-1), max: math.Inf(1), exMin: math.Inf(-1), exMax: math.Inf(1)}, nil
		}
		return &node{never: true}, nil
	case map[string]any:
		n := &node{types: tAny, maxLen: -1, maxItems: -1, maxProps: -1, min: math.Inf(-1), max: math.Inf(1), exMin: math.Inf(-1), exMax: math.Inf(1)}
		for k, v := range d {
			if err := n.keyword(k, v); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	return nil, errUnsupported
}

func (n *node) keyword(k string, v any) error {
	if annotations[k] {
		return nil
	}
	num := func() (float64, error) {
		f, ok := numberValue(v)
		if !ok {
			return 0, errUnsupported
		}
		return f, nil
	}
	count := func() (int, error) {
		f, err := num()
		if err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
			return 0, errUnsupported
		}
		return int(f), nil
	}
	var err error
	switch k {
	case "type":
		n.types = 0
		var list []any
		switch t := v.(type) {
		case string:
			list = []any{t}
		case []any:
			list = t
		default:
			return errUnsupported
		}
		for _, t := range list {
			switch t {
			case "null":
				n.types |= tNull
			case "boolean":
				n.types |= tBool
			case "integer":
				n.types |= tInt
			case "number":
				n.types |= tInt | tNum
			case "string":
				n.types |= tStr
			case "array":
				n.types |= tArr
			case "object":
				n.types |= tObj
			default:
				return errUnsupported
			}
		}
	case "properties":
		m, ok := v.(map[string]any)
		if !ok {
			return errUnsupported
		}
		n.propKeys = slices.Sorted(maps.Keys(m))
		n.propNodes = make([]*node, len(n.propKeys))
		for i, p := range n.propKeys {
			if n.propNodes[i], err = compileNode(m[p]); err != nil {
				return err
			}
		}
	case "additionalProperties":
		n.additional, err = compileNode(v)
	case "required":
		list, ok := v.([]any)
		if !ok {
			return errUnsupported
		}
		for _, r := range list {
			s, ok := r.(string)
			if !ok {
				return errUnsupported
			}
			n.required = append(n.required, s)
		}
		slices.Sort(n.required)
	case "enum":
		list, ok := v.([]any)
		if !ok {
			return errUnsupported
		}
		n.enum = make([]any, len(list))
		for i, e := range list {
			n.enum[i] = fromGo(e)
		}
	case "const":
		n.hasConst, n.constVal = true, fromGo(v)
	case "minLength":
		n.minLen, err = count()
	case "maxLength":
		n.maxLen, err = count()
	case "pattern":
		s, ok := v.(string)
		if !ok {
			return errUnsupported
		}
		n.pattern, err = regexp.Compile(s)
	case "minimum":
		n.min, err = num()
	case "maximum":
		n.max, err = num()
	case "exclusiveMinimum":
		n.exMin, err = num()
	case "exclusiveMaximum":
		n.exMax, err = num()
	case "items":
		if _, ok := v.([]any); ok {
			return errUnsupported
		}
		n.items, err = compileNode(v)
	case "minItems":
		n.minItems, err = count()
	case "maxItems":
		n.maxItems, err = count()
	case "uniqueItems":
		b, ok := v.(bool)
		if !ok {
			return errUnsupported
		}
		n.unique = b
	case "minProperties":
		n.minProps, err = count()
	case "maxProperties":
		n.maxProps, err = count()
	default:
		return errUnsupported
	}
	return err
}

// valid reports whether v passes the schema.
func (n *node) valid(v any) bool {
	if n.never {
		return false
	}
	if n.hasConst && !jsonEqual(v, n.constVal) {
		return false
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e any) bool { return jsonEqual(v, e) }) {
		return false
	}
	switch v := v.(type) {
	case nil:
		return n.types&tNull != 0
	case bool:
		return n.types&tBool != 0
	case string:
		if n.types&tStr == 0 {
			return false
		}
		if n.minLen > 0 || n.maxLen >= 0 {
			c := utf8.RuneCountInString(v)
			if c < n.minLen || n.maxLen >= 0 && c > n.maxLen {
				return false
			}
		}
		return n.pattern == nil || n.pattern.MatchString(v)
	case *object:
		return n.validObject(v, nil)
	case []any:
		if n.types&tArr == 0 || len(v) < n.minItems || n.maxItems >= 0 && len(v) > n.maxItems {
			return false
		}
		if n.items != nil {
			for _, e := range v {
				if !n.items.valid(e) {
					return false
				}
			}
		}
		if n.unique {
			for i := range v {
				for j := i + 1; j < len(v); j++ {
					if jsonEqual(v[i], v[j]) {
						return false
					}
				}
			}
		}
		return true
	}
	f, ok := numberValue(v)
	if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	isInt := f == math.Trunc(f)
	if n.types&tNum == 0 && !(isInt && n.types&tInt != 0) {
		return false
	}
	return f >= n.min && f <= n.max && f > n.exMin && f < n.exMax
}

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
			props, ok := v.(map[string]any)
			if !ok {
				out[k] = v
				continue
			}
			np := make(map[string]any, len(props)+1)
			for name, s := range props {
				np[name] = nullable(patchNode(s, false))
			}
			out[k] = np
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
