// Package safeschema compiles JSON Schemas that come from configuration or
// from a model's tool definitions rather than from a trusted author. It
// is the one place memlayer sets up jsonschema/v6: the scratchpad's state
// schema and the agent's tool parameter schemas both compile through
// [Compile].
//
// What it guards against, each measured on jsonschema/v6's defaults:
//
//   - external references: the default loader reads any file:// URL, and
//     the document would then be quoted in the errors a model reads. No
//     reference outside the document is loaded unless the caller passes a
//     [Loader]; the JSON Schema meta-schemas are built in and need none;
//   - huge documents and patterns: a 1 MB "pattern" took seconds and
//     760 MB to compile. A document is at most [MaxBytes] and each regular
//     expression at most [MaxPattern];
//   - references that apply a schema to the same value again
//     ({"$ref":"#"}): they fail every value, so they are refused at
//     compile time instead of at every validation.
package safeschema

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const (
	// MaxBytes bounds a schema document, as JSON text.
	MaxBytes = 256 << 10
	// MaxPattern bounds each regular expression of a schema ("pattern",
	// "patternProperties"), in bytes.
	MaxPattern = 4 << 10
)

// ErrNoLoader is the cause of a compile error when the schema refers to
// a document outside itself and no [Loader] was given.
var ErrNoLoader = errors.New("external references are not loaded without a schema loader")

// A Loader returns the JSON text of the document an external reference
// names. Nil means external references are refused.
type Loader func(url string) ([]byte, error)

// Decode reads a schema document of at most MaxBytes into the form
// jsonschema compiles (numbers as json.Number).
func Decode(b []byte) (any, error) {
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("document of %d bytes, the limit is %d", len(b), MaxBytes)
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// Compile compiles doc (as returned by [Decode], or any map[string]any
// form), named url, with the guards of the package doc. url should be an
// absolute, hierarchical URL (memlayer://schemas/name): a relative one
// would be resolved against the working directory, which would then show
// in errors, and under a urn a relative "$ref" resolves to the schema
// itself. Errors are cut to 1 KiB, since jsonschema quotes the offending
// value.
func Compile(url string, doc any, load Loader) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refLoader(load))
	c.UseRegexpEngine(boundedRegexp)
	if err := c.AddResource(url, doc); err != nil {
		return nil, clipped{err}
	}
	sch, err := c.Compile(url)
	var le *jsonschema.LoadURLError // it has no Unwrap
	if errors.As(err, &le) && errors.Is(le.Err, ErrNoLoader) {
		return nil, fmt.Errorf("reference to %s: %w", clipped{errors.New(le.URL)}, ErrNoLoader)
	}
	if err != nil {
		return nil, clipped{err}
	}
	if err := checkRefCycles(sch); err != nil {
		return nil, err
	}
	return sch, nil
}

// clipped is an error whose text is cut to 1 KiB.
type clipped struct{ err error }

func (e clipped) Error() string {
	msg := e.err.Error()
	if len(msg) <= 1024 {
		return msg
	}
	cut := 1024
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes more)", msg[:cut], len(msg)-cut)
}

func (e clipped) Unwrap() error { return e.err }

// refLoader resolves external references through the caller's loader, or
// refuses them when there is none.
type refLoader Loader

func (l refLoader) Load(url string) (any, error) {
	if l == nil {
		return nil, ErrNoLoader
	}
	b, err := l(url)
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// boundedRegexp is the regular expression engine of schemas: Go's
// regexp, for patterns of at most MaxPattern bytes.
func boundedRegexp(s string) (jsonschema.Regexp, error) {
	if len(s) > MaxPattern {
		return nil, fmt.Errorf("pattern of %d bytes, the limit is %d", len(s), MaxPattern)
	}
	return regexp.Compile(s)
}

// checkRefCycles rejects a schema in which a subschema reachable from
// root applies itself to the same value again, through references and
// in-place applicators (allOf, anyOf, oneOf, not, if/then/else,
// dependent schemas): jsonschema reports a reference cycle for every
// value that reaches it. Recursion through properties or items is fine,
// since it moves to a smaller value.
func checkRefCycles(root *jsonschema.Schema) error {
	color := inPlaceColors{}
	seen := map[*jsonschema.Schema]bool{root: true}
	queue := []*jsonschema.Schema{root}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		if err := color.visit(s); err != nil {
			return err
		}
		for _, n := range append(inPlace(s), children(s)...) {
			if !seen[n] {
				seen[n] = true
				queue = append(queue, n)
			}
		}
	}
	return nil
}

// inPlaceColors marks the subschemas a depth-first walk of in-place
// applicators is visiting (on its path) or is done with.
type inPlaceColors map[*jsonschema.Schema]int

const (
	visiting = 1
	done     = 2
)

// visit walks the in-place applicators from s, and returns an error when
// one leads back to a subschema on the walk's path.
func (color inPlaceColors) visit(s *jsonschema.Schema) error {
	switch color[s] {
	case visiting:
		return fmt.Errorf("reference cycle at %s: it applies to the same value again, so no value could pass", s.Location)
	case done:
		return nil
	}
	color[s] = visiting
	for _, n := range inPlace(s) {
		if err := color.visit(n); err != nil {
			return err
		}
	}
	color[s] = done
	return nil
}

// inPlace returns the subschemas of s that apply to the same value as s.
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else}
	if s.DynamicRef != nil {
		out = append(out, s.DynamicRef.Ref)
	}
	out = append(out, s.AllOf...)
	out = append(out, s.AnyOf...)
	out = append(out, s.OneOf...)
	for _, d := range s.DependentSchemas {
		out = append(out, d)
	}
	for _, d := range s.Dependencies {
		if d, ok := d.(*jsonschema.Schema); ok {
			out = append(out, d)
		}
	}
	return slices.DeleteFunc(out, func(n *jsonschema.Schema) bool { return n == nil })
}

// children returns the subschemas of s that apply to parts of the value
// (members, items, names, content).
func children(s *jsonschema.Schema) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.PropertyNames, s.UnevaluatedProperties, s.Contains, s.Items2020, s.UnevaluatedItems, s.ContentSchema}
	for _, p := range s.Properties {
		out = append(out, p)
	}
	for _, p := range s.PatternProperties {
		out = append(out, p)
	}
	for _, v := range []any{s.AdditionalProperties, s.Items, s.AdditionalItems} {
		switch v := v.(type) {
		case *jsonschema.Schema:
			out = append(out, v)
		case []*jsonschema.Schema:
			out = append(out, v...)
		}
	}
	out = append(out, s.PrefixItems...)
	return slices.DeleteFunc(out, func(n *jsonschema.Schema) bool { return n == nil })
}
