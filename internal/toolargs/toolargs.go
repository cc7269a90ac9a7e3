// Package toolargs checks the arguments of a tool call against the
// tool's JSON Schema, and words a failed call's error for the model.
package toolargs

import (
	"bytes"
	"container/list"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/internal/safeschema"
	"github.com/memlayer/memlayer/layer"
)

// AnyObject is the schema used when a tool declares none.
var AnyObject = json.RawMessage(`{"type":"object"}`)

// CacheSize is how many compiled JSON Schemas [ValidateArgs] and
// each [Agent] keep: the most recently used ones. A schema that was
// dropped is compiled again when it is next used. It is well above the
// number of tools a provider accepts in one request (128 for OpenAI).
const CacheSize = 256

// Cache compiles JSON Schemas and keeps the CacheSize most
// recently used (compiled, or the compile error) for validation. It is
// safe for concurrent use. The zero value is ready to use.
type Cache struct {
	mu    sync.Mutex
	byKey map[string]*list.Element // string(schema) -> element of lru
	lru   list.List                // of *entry, most recent first
}

type entry struct {
	key string
	sch *jsonschema.Schema
	err error
}

// Compile returns the compiled schema, compiling it if it is not cached.
// Two callers may compile one schema at once; both results are valid.
func (c *Cache) Compile(schema json.RawMessage) (*jsonschema.Schema, error) {
	c.mu.Lock()
	if el, ok := c.byKey[string(schema)]; ok { // no allocation for the key
		c.lru.MoveToFront(el)
		e := el.Value.(*entry)
		c.mu.Unlock()
		return e.sch, e.err
	}
	c.mu.Unlock()
	sch, err := compileSchema(schema)
	key := string(schema)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; !ok {
		if c.byKey == nil {
			c.byKey = make(map[string]*list.Element)
		}
		c.byKey[key] = c.lru.PushFront(&entry{key: key, sch: sch, err: err})
		if c.lru.Len() > CacheSize {
			delete(c.byKey, c.lru.Remove(c.lru.Back()).(*entry).key)
		}
	}
	return sch, err
}

func compileSchema(schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := safeschema.Decode(schema)
	if err != nil {
		return nil, fmt.Errorf("schema is not JSON: %w", err)
	}
	// No external reference is loaded, patterns and documents are
	// bounded, and a schema no value could pass is refused (see
	// internal/safeschema).
	sch, err := safeschema.Compile("memlayer://schemas/tool-arguments", doc, nil)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return sch, nil
}

// validate checks args (JSON) against schema. The error lists every
// violation, which is what the model needs to correct its call.
func (c *Cache) Validate(schema json.RawMessage, args []byte) error {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil
	}
	if bytes.Equal(schema, AnyObject) {
		return anyObject(args)
	}
	sch, err := c.Compile(schema)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return &schemaError{err: err}
	}
	return nil
}

// anyObject checks args against the default schema, AnyObject, without
// decoding them.
func anyObject(args []byte) error {
	if a := bytes.TrimSpace(args); len(a) > 0 && a[0] == '{' && json.Valid(a) {
		return nil
	}
	return fmt.Errorf("arguments are not a JSON object")
}

// schemaError is a schema violation. Its text is the validator's list of
// every violation without the first line, which names the schema's
// internal URL and means nothing to a model, and without the failures of
// null alternatives (see withoutNullBranches).
type schemaError struct{ err error }

// Error lists the violations.
func (e *schemaError) Error() string {
	err := e.err
	if ve, ok := err.(*jsonschema.ValidationError); ok {
		err = withoutNullBranches(ve)
	}
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, "\n"); ok && strings.HasPrefix(msg, "jsonschema") {
		return "does not match the schema:\n" + rest
	}
	return msg
}

// withoutNullBranches returns a copy of the error tree in which an anyOf
// failure loses its branches that only wanted null: "'anyOf' failed /
// got string, want integer / got string, want null" becomes "got string,
// want integer". Such anyOf [T, null] wrappers are how a tool lets a
// field say "no change" (the scratchpad's update tool wraps every
// property of the user's schema so), and the model needs to read what T
// wants, not the wrapper. An anyOf left with one branch is replaced by
// that branch's failure.
func withoutNullBranches(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	c := *e
	c.Causes = make([]*jsonschema.ValidationError, 0, len(e.Causes))
	for _, sub := range e.Causes {
		c.Causes = append(c.Causes, withoutNullBranches(sub))
	}
	if _, ok := e.ErrorKind.(*kind.AnyOf); !ok {
		return &c
	}
	kept := c.Causes[:0:0]
	for _, sub := range c.Causes {
		if !wantsNull(sub) {
			kept = append(kept, sub)
		}
	}
	switch {
	case len(kept) == len(c.Causes) || len(kept) == 0:
		return &c
	case len(kept) == 1:
		return kept[0]
	}
	c.Causes = kept
	return &c
}

// wantsNull reports whether e is the failure of a branch that only
// wanted null.
func wantsNull(e *jsonschema.ValidationError) bool {
	t, ok := e.ErrorKind.(*kind.Type)
	return ok && len(t.Want) == 1 && t.Want[0] == "null"
}

// Unwrap returns the validator's error (a *jsonschema.ValidationError).
func (e *schemaError) Unwrap() error { return e.err }

// Object normalises raw tool arguments: empty means {}, anything else
// must be a JSON object.
func Object(args string) (json.RawMessage, error) {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(raw) {
		return nil, fmt.Errorf("%w: not valid JSON", layer.ErrInvalidArguments)
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("%w: want a JSON object", layer.ErrInvalidArguments)
	}
	return raw, nil
}

// shared backs [Validate], and agentloop.ValidateArgs.
var shared Cache

// Validate checks args against schema through a cache shared by the
// process.
func Validate(schema json.RawMessage, args []byte) error { return shared.Validate(schema, args) }

// Shared is the cache Validate uses.
func Shared() *Cache { return &shared }

// Check checks a call's arguments: a JSON object (empty is {}) that
// schema, compiled through cache, accepts.
func Check(cache *Cache, name string, schema json.RawMessage, args string) (json.RawMessage, error) {
	raw, err := Object(args)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := cache.Validate(schema, raw); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", layer.ErrInvalidArguments, name, err)
	}
	return raw, nil
}

// packagePrefix matches the package prefixes memlayer's errors carry
// ("layer: ", "agentloop: ", "workingmemory: ", and a layer hook's
// "layer <id>: tool: "), at the start of a message or of a wrapped part.
var packagePrefix = regexp.MustCompile(`(^|: |\n)(?:(?:layer|agentloop|chainmemory|route|thread|history|workingmemory|kv|entitymemory|episodicmemory|semanticmemory|storage|prompt|memlayer): |layer [a-z][a-z0-9-]*: (?:tool|store|data): )+`)

// ErrorText is the tool result the model reads for a failed call:
// "error: " and the error's text without memlayer's package prefixes,
// which say where in the library an error arose and mean nothing to a
// model. The Go error keeps them (and errors.Is still matches).
func ErrorText(err error) string {
	return "error: " + packagePrefix.ReplaceAllString(err.Error(), "$1")
}

// Definition is the definition of a layer function offered to a model:
// its wire name, description and parameter schema (AnyObject for a
// function without one).
func Definition(t layer.Function) llms.Tool {
	params := t.Parameters
	if len(params) == 0 {
		params = AnyObject
	}
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}}
}
