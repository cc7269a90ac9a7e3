package prompt

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/aymerick/raymond"

	"github.com/memlayer/memlayer/layer"
)

// Reserved template variable names. They are always set by [Compiler.Compile]
// and a user variable may not use them.
const (
	// VarLayers holds every recalled layer's block, in slot order,
	// separated by blank lines.
	VarLayers = "layers"
	// VarInstructions holds [Config.Instructions].
	VarInstructions = "instructions"
)

// MaxPartialDepth is how deeply partials may include one another when
// a template renders: a template including a partial that includes
// another is depth 2. [New] rejects a deeper chain.
const MaxPartialDepth = 32

// MaxBlockDepth is how deeply blocks ({{#with}}, {{#each}}, {{#if}}, an
// inverse {{^x}} ...) and subexpressions may nest in a template, counting
// the blocks of the partials it includes at the depth it includes them.
// [New] rejects a deeper template: raymond's rendering takes memory and
// time that grow with the depth (4,000 nested {{#with}} blocks took
// about 70 MB).
const MaxBlockDepth = 64

// Config configures a [Compiler]. The zero Config is valid: the default
// layout, no instructions, the [Estimate] counter.
type Config struct {
	// Template is the Handlebars source of the system prompt. Empty
	// means the default layout: the instructions, then each layer's
	// block in slot order, separated by blank lines.
	Template string
	// Instructions are the agent's instructions. The default layout puts
	// them first; a template places them with {{{instructions}}}.
	// They are trusted text and are never HTML-escaped.
	Instructions string
	// Counter counts tokens. Nil means [Estimate].
	Counter Counter
	// Partials are Handlebars partials available to Template, by name.
	// They are parsed once by [New] and registered on this template only.
	// A partial is named by a plain name ({{> name}}), never computed
	// by a helper, and must be defined here; partials may not include
	// themselves, directly or through others, nor nest deeper than
	// [MaxPartialDepth]. New rejects a template that breaks these rules,
	// because raymond would recurse until the process dies.
	Partials map[string]string
	// Helpers are Handlebars helpers available to Template, by name,
	// registered on this template only. A helper is a func returning a
	// string or raymond.SafeString (see raymond's documentation); it must
	// be safe for concurrent use. A helper that panics makes Compile
	// return an error that wraps [ErrRender].
	Helpers map[string]any
	// LayerIDs are the IDs of every layer of the stack the prompts are
	// compiled for, whether or not it recalls anything in a step. The
	// block tag (fence.Tag) of each is guarded in every prompt, like
	// those of [BuiltinLayerIDs] and of the layers recalled in the step,
	// so that no layer's text can forge the block of another, present or
	// absent. Nil guards the built-in and the recalled layers' tags only.
	LayerIDs []string
}

// Compiler renders system prompts from recalled layers. It is immutable
// after [New] and safe for concurrent use. The zero Compiler renders the
// default layout with no instructions.
type Compiler struct {
	tpl          *raymond.Template // nil: default layout
	instructions string
	instrValue   any // raymond.SafeString(instructions), boxed once by New
	counter      Counter
	guards       *guards // nil: builtinGuards
}

// New returns a Compiler for cfg. It parses the template and its partials
// once; a syntax error wraps [ErrTemplate] and names the line.
func New(cfg Config) (c *Compiler, err error) {
	c = &Compiler{instructions: cfg.Instructions, instrValue: raymond.SafeString(cfg.Instructions), counter: orEstimate(cfg.Counter)}
	if len(cfg.LayerIDs) > 0 {
		c.guards = newGuards(cfg.LayerIDs)
	}
	if cfg.Template == "" {
		if len(cfg.Partials) > 0 || len(cfg.Helpers) > 0 {
			return nil, fmt.Errorf("%w: partials and helpers need a Template", ErrTemplate)
		}
		return c, nil
	}
	if c.tpl, err = parseTemplate(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// parseTemplate checks and parses cfg's template, and registers cfg's
// partials and helpers on it.
func parseTemplate(cfg Config) (tpl *raymond.Template, err error) {
	if err := checkDepthBounds(cfg); err != nil {
		return nil, err
	}
	tpl, err = raymond.Parse(cfg.Template)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	// raymond panics on a duplicate or malformed helper or partial.
	defer func() {
		if r := recover(); r != nil {
			tpl, err = nil, fmt.Errorf("%w: %v", ErrTemplate, r)
		}
	}()
	if err := register(tpl, cfg); err != nil {
		return nil, err
	}
	return tpl, nil
}

// checkDepthBounds refuses a template or partial whose blocks may nest
// deeper than MaxBlockDepth (blockDepthBound), before it is parsed.
func checkDepthBounds(cfg Config) error {
	for name, src := range cfg.Partials {
		if d := blockDepthBound(src); d > MaxBlockDepth {
			return fmt.Errorf("%w: partial %q: blocks nest %d deep, more than %d (MaxBlockDepth)", ErrTemplate, name, d, MaxBlockDepth)
		}
	}
	if d := blockDepthBound(cfg.Template); d > MaxBlockDepth {
		return fmt.Errorf("%w: blocks nest %d deep, more than %d (MaxBlockDepth)", ErrTemplate, d, MaxBlockDepth)
	}
	return nil
}

// register parses and registers cfg's partials on tpl, checks them
// (checkPartials), and registers cfg's helpers. raymond panics on a
// duplicate or malformed helper or partial.
func register(tpl *raymond.Template, cfg Config) error {
	for _, name := range slices.Sorted(maps.Keys(cfg.Partials)) {
		// A pre-parsed partial: raymond parses partials registered from
		// source lazily on first use, which races under concurrent Exec.
		p, err := raymond.Parse(cfg.Partials[name])
		if err != nil {
			return fmt.Errorf("%w: partial %q: %w", ErrTemplate, name, err)
		}
		tpl.RegisterPartialTemplate(name, p)
	}
	if err := checkPartials(cfg.Template, cfg.Partials); err != nil {
		return fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Helpers)) {
		if cfg.Helpers[name] == nil {
			return fmt.Errorf("%w: helper %q is nil", ErrTemplate, name)
		}
		tpl.RegisterHelper(name, cfg.Helpers[name])
	}
	return nil
}

// Counter returns the compiler's token counter ([Config.Counter] or
// [Estimate]).
func (c *Compiler) Counter() Counter {
	return orEstimate(c.counter)
}

// VarName returns the template variable of the layer with the given ID:
// its snake- or kebab-case words in camelCase ("working_memory" and
// "working-memory" → "workingMemory", "plan" → "plan").
func VarName(id string) string {
	if !strings.ContainsAny(id, "-_") {
		return id
	}
	var b strings.Builder
	b.Grow(len(id))
	for word := range strings.FieldsFuncSeq(id, func(r rune) bool { return r == '-' || r == '_' }) {
		if b.Len() > 0 && word != "" && 'a' <= word[0] && word[0] <= 'z' {
			b.WriteByte(word[0] - 'a' + 'A')
			word = word[1:]
		}
		b.WriteString(word)
	}
	return b.String()
}

// layerText returns the text one recalled layer contributes: its
// non-empty items' texts, guarded against spoofing the blocks of tags (see
// guardItem), joined by newlines. Layers fence their own untrusted text
// (see [fence.Wrap]); the compiler neither escapes nor re-fences it.
func layerText(r layer.Recalled, tags *guards) string {
	if len(r.Items) == 1 {
		return guardItem(r.Items[0].Text, r.ID, tags)
	}
	var b strings.Builder
	for _, it := range r.Items {
		if it.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(guardItem(it.Text, r.ID, tags))
	}
	return b.String()
}

// Compile renders the system prompt.
//
// recalled is what the stack recalled, in slot order ([layer.Stack.Recall]
// returns it so); its order is kept. A layer with no text is left out.
//
// Without a template the prompt is the instructions followed by each
// layer's text, separated by blank lines; vars are checked but unused.
//
// With a template, the variables are:
//   - one per recalled layer, named [VarName] of its ID, holding its
//     items' texts joined by newlines;
//   - "layers": every layer's text in slot order, separated by blank lines;
//   - "instructions": [Config.Instructions];
//   - every entry of vars.
//
// Layer texts and the instructions are passed as raymond.SafeString, so
// {{workingMemory}} and {{{workingMemory}}} render them alike, verbatim:
// escaping would mangle the entities [fence.Wrap] writes. They are
// values, never template source, so a layer text such as "{{instructions}}"
// stays literal. One more guard applies to every layout: inside a layer's
// text, the tags of the other fenced blocks of this prompt are defanged
// like [fence.Wrap] defangs a block's own tag, so no layer can forge
// another's block (a fenced item is "<tag>\n…\n</tag>", as fence.Wrap
// writes it). User variables follow Handlebars rules: {{x}} escapes
// HTML, {{{x}}} does not. Strings, booleans, numbers and nil are passed as
// they are; a fmt.Stringer or error as its text; a [Raw] as its Value;
// anything else (maps, slices, structs) as its JSON encoding, because
// raymond prints those in Go syntax. A missing variable renders empty.
//
// Name rules: a user variable named "layers" or "instructions" is an error
// wrapping [ErrNameConflict], as are two recalled layers mapping to one
// name. A user variable with the name of a layer recalled in this call is
// shadowed by the layer: layer text always wins (and the user value is
// used only in steps where that layer recalls nothing, so avoid such
// names).
//
// A helper that fails or panics makes Compile return an error wrapping
// [ErrRender]. Compile is safe for concurrent use.
func (c *Compiler) Compile(recalled []layer.Recalled, vars map[string]any) (out string, err error) {
	// raymond re-raises helper panics (and runtime errors); so would a
	// user value's String method.
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: panic: %v", ErrRender, r)
		}
	}()
	ctx, err := c.context(vars, len(recalled))
	if err != nil {
		return "", err
	}
	all, err := c.layers(recalled, ctx)
	if err != nil || c.tpl == nil {
		return all, err
	}
	ctx[VarLayers] = raymond.SafeString(all)
	ctx[VarInstructions] = c.instrValue
	out, err = c.tpl.Exec(ctx)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrRender, err)
	}
	return out, nil
}

// context returns the template's variables: the user's vars, each as
// userValue gives it, with room for n layers. It is nil for the default
// layout. A var may not take a reserved name.
func (c *Compiler) context(vars map[string]any, n int) (map[string]any, error) {
	for _, name := range [...]string{VarLayers, VarInstructions} {
		if _, ok := vars[name]; ok {
			return nil, fmt.Errorf("%w: %q is reserved and cannot be a user variable", ErrNameConflict, name)
		}
	}
	if c.tpl == nil {
		return nil, nil
	}
	ctx := make(map[string]any, len(vars)+n+2)
	for k, v := range vars {
		cv, err := userValue(v)
		if err != nil {
			return nil, fmt.Errorf("%w: variable %q: %w", ErrRender, k, err)
		}
		ctx[k] = cv
	}
	return ctx, nil
}

// layers returns the recalled layers' texts, after the instructions in
// the default layout, separated by blank lines, and sets each layer's
// variable in ctx (when not nil).
func (c *Compiler) layers(recalled []layer.Recalled, ctx map[string]any) (string, error) {
	tags := forStep(cmp.Or(c.guards, builtinGuards), recalled)
	var all strings.Builder
	if c.tpl == nil {
		all.WriteString(c.instructions)
	}
	names := make([][2]string, 0, 8) // {name, id} of the layers so far
	for _, r := range recalled {
		name, err := layerVar(names, r.ID)
		if err != nil {
			return "", err
		}
		names = append(names, [2]string{name, r.ID})
		text := layerText(r, tags)
		if ctx != nil {
			ctx[name] = raymond.SafeString(text) // shadows a user variable even when empty
		}
		if text != "" && all.Len() > 0 {
			all.WriteString("\n\n")
		}
		all.WriteString(text)
	}
	if ctx != nil {
		deprecatedVars(ctx, names)
	}
	return all.String(), nil
}

// DeprecatedVars maps the template variables of built-in layers from
// before the naming scheme to the layer IDs whose text they hold:
// {{entities}} is {{entityMemory}}, {{semantic}} is {{semanticMemory}}.
// A template may use them for one release; they will then be removed.
var DeprecatedVars = map[string]string{"entities": "entity_memory", "semantic": "semantic_memory"}

// deprecatedVars sets each of DeprecatedVars that no layer of names
// ({name, id} pairs) or user variable has, to the text of the layer it
// names, when recalled.
func deprecatedVars(ctx map[string]any, names [][2]string) {
	for old, id := range DeprecatedVars {
		if _, taken := ctx[old]; taken {
			continue
		}
		if text, ok := ctx[VarName(id)]; ok && slices.ContainsFunc(names, func(n [2]string) bool { return n[1] == id }) {
			ctx[old] = text
		}
	}
}

// layerVar returns the template variable of layer id, or an error when
// it is reserved or another layer's of names ({name, id} pairs).
func layerVar(names [][2]string, id string) (string, error) {
	name := VarName(id)
	if name == VarLayers || name == VarInstructions {
		return "", fmt.Errorf("%w: layer %q would be the reserved variable %q", ErrNameConflict, id, name)
	}
	for _, n := range names {
		if n[0] == name && n[1] != id {
			return "", fmt.Errorf("%w: layers %q and %q both map to variable %q", ErrNameConflict, n[1], id, name)
		}
	}
	return name, nil
}

// Raw wraps a user variable that Compile must pass to the template
// unchanged instead of serialising it to JSON: a slice to iterate with
// {{#each}}, a map or struct whose fields the template reads with paths
// ({{user.name}}). Printing such a value directly gives Go's formatting,
// not JSON.
type Raw struct{ Value any }

// scalarKinds are the kinds of booleans, strings and numbers (not
// complex ones).
var scalarKinds = map[reflect.Kind]bool{
	reflect.Bool: true, reflect.String: true,
	reflect.Int: true, reflect.Int8: true, reflect.Int16: true, reflect.Int32: true, reflect.Int64: true,
	reflect.Uint: true, reflect.Uint8: true, reflect.Uint16: true, reflect.Uint32: true, reflect.Uint64: true, reflect.Uintptr: true,
	reflect.Float32: true, reflect.Float64: true,
}

// userValue converts a user variable into what raymond prints well.
func userValue(v any) (any, error) {
	switch v := v.(type) {
	case nil, string, raymond.SafeString:
		return v, nil
	case Raw:
		return v.Value, nil
	case error:
		return v.Error(), nil
	case fmt.Stringer:
		return v.String(), nil
	case json.RawMessage:
		return string(v), nil
	}
	// Booleans, strings and numbers, of named types too.
	if scalarKinds[reflect.ValueOf(v).Kind()] {
		return v, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}
