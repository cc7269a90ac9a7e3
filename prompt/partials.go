package prompt

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aymerick/raymond/ast"
	"github.com/aymerick/raymond/parser"
)

// checkPartials rejects partial inclusions that raymond would follow
// until the stack overflows (a fatal error, not a panic): a partial that
// includes itself, directly or through others, and chains deeper than
// MaxPartialDepth. To see the whole graph it also rejects partial names
// computed at render time and names not in partials (a global raymond
// partial could include one of ours). source and partials have already
// been parsed once.
func checkPartials(source string, partials map[string]string) error {
	g, err := newPartialGraph(partials)
	if err != nil {
		return err
	}
	top, topNest, err := partialRefs(source, partials)
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(partials)) {
		if _, err := g.visit(name, nil); err != nil {
			return err
		}
	}
	for _, r := range top {
		if err := g.checkTop(r); err != nil {
			return err
		}
	}
	if topNest > MaxBlockDepth {
		return fmt.Errorf("blocks nest %d deep, more than %d (MaxBlockDepth)", topNest, MaxBlockDepth)
	}
	return nil
}

// newPartialGraph parses what each partial includes, in name order, into
// a graph not yet explored.
func newPartialGraph(partials map[string]string) (partialGraph, error) {
	refs := make(map[string][]partialRef, len(partials)+1)
	own := make(map[string]int, len(partials))
	for _, name := range slices.Sorted(maps.Keys(partials)) {
		r, d, err := partialRefs(partials[name], partials)
		if err != nil {
			return partialGraph{}, fmt.Errorf("partial %q: %w", name, err)
		}
		refs[name], own[name] = r, d
	}
	return partialGraph{refs: refs, own: own, depth: make(map[string]int, len(partials)), nest: make(map[string]int, len(partials))}, nil
}

// partialGraph is the graph of partials that checkPartials explores.
// refs[name] are the partials name includes, and own[name] how deeply
// blocks nest in name itself. depth[name] is the longest chain of
// partials name starts, itself included, once known; 0 while name is
// being explored. nest[name] is how deeply blocks nest in name, those of
// the partials it includes counted.
type partialGraph struct {
	refs             map[string][]partialRef
	own, depth, nest map[string]int
}

// visit explores the partial name, reached by path, and returns its
// depth, or an error when it includes itself.
func (g *partialGraph) visit(name string, path []string) (int, error) {
	if d, seen := g.depth[name]; seen {
		if d == 0 {
			return 0, fmt.Errorf("partial %q includes itself (%s)", name, cycle(path, name))
		}
		return d, nil
	}
	g.depth[name] = 0
	d, n := 0, g.own[name]
	for _, r := range g.refs[name] {
		rd, err := g.visit(r.name, append(path, name))
		if err != nil {
			return 0, err
		}
		d, n = max(d, rd), max(n, r.depth+g.nest[r.name])
	}
	g.depth[name], g.nest[name] = d+1, n
	return d + 1, nil
}

// checkTop checks a partial the template includes: the chain of partials
// and the blocks nesting through it.
func (g *partialGraph) checkTop(r partialRef) error {
	if g.depth[r.name] > MaxPartialDepth {
		return fmt.Errorf("partials nested deeper than %d (MaxPartialDepth), from %q", MaxPartialDepth, r.name)
	}
	if n := r.depth + g.nest[r.name]; n > MaxBlockDepth {
		return fmt.Errorf("blocks nest %d deep through partial %q, more than %d (MaxBlockDepth)", n, r.name, MaxBlockDepth)
	}
	return nil
}

// partialRef is a partial a source includes, and the depth of the
// blocks it is included in (the deepest, when it is included more than
// once).
type partialRef struct {
	name  string
	depth int
}

// blockDepthBound returns an upper bound of how deeply blocks nest in
// source, from its text alone: "{{#" and "{{^" (but not "{{^}}", an
// else) open, "{{/" closes, with or without '~'. It over-counts only
// openers in comments and raw blocks. New checks it before parsing, so
// that a template nesting thousands of blocks is refused without being
// parsed (parsing it takes memory and time too); the exact depth,
// partials included, is checked on the parsed template.
func blockDepthBound(source string) int {
	depth, deepest := 0, 0
	for i := 0; ; {
		j := strings.Index(source[i:], "{{")
		if j < 0 {
			return deepest
		}
		i += j + 2
		rest := strings.TrimPrefix(source[i:], "~")
		switch {
		case strings.HasPrefix(rest, "#"), strings.HasPrefix(rest, "^") && !strings.HasPrefix(strings.TrimLeft(rest[1:], " ~"), "}}"):
			depth++
			deepest = max(deepest, depth)
		case strings.HasPrefix(rest, "/"):
			depth = max(depth-1, 0)
		}
	}
}

// cycle renders the part of path from name on, back to name.
func cycle(path []string, name string) string {
	cyc := slices.Clone(path[slices.Index(path, name):])
	return strings.Join(append(cyc, name), " > ")
}

// partialRefs returns the partials source includes, each once, and how
// deeply blocks and subexpressions nest in source itself, or an error for
// a partial name that is computed or not defined, or for blocks nesting
// deeper than MaxBlockDepth (found without walking further down).
func partialRefs(source string, partials map[string]string) ([]partialRef, int, error) {
	prog, err := parser.Parse(source)
	if err != nil {
		return nil, 0, err
	}
	w := refWalker{partials: partials}
	err = w.walk(prog, 0)
	return w.refs, w.deepest, err
}

// refWalker walks a parsed template for partialRefs: the partials it
// includes (refs) and how deeply its blocks nest (deepest).
type refWalker struct {
	partials map[string]string
	refs     []partialRef
	deepest  int
}

// tooDeep notes that blocks nest d deep, and returns an error when that
// is more than MaxBlockDepth.
func (w *refWalker) tooDeep(d int) error {
	w.deepest = max(w.deepest, d)
	if d > MaxBlockDepth {
		return fmt.Errorf("blocks nest more than %d deep (MaxBlockDepth)", MaxBlockDepth)
	}
	return nil
}

// walk walks the statements of p, at blocks' depth.
func (w *refWalker) walk(p *ast.Program, depth int) error {
	if p == nil {
		return nil
	}
	for _, n := range p.Body {
		var err error
		switch n := n.(type) {
		case *ast.MustacheStatement:
			err = w.tooDeep(depth + exprDepth(n.Expression))
		case *ast.BlockStatement:
			err = w.block(n, depth)
		case *ast.PartialStatement:
			err = w.partial(n, depth)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// block walks a block statement at depth: its expression, its program
// and its else.
func (w *refWalker) block(n *ast.BlockStatement, depth int) error {
	if err := w.tooDeep(depth + 1 + exprDepth(n.Expression)); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	if err := w.walk(n.Program, depth+1); err != nil {
		return err
	}
	return w.walk(n.Inverse, depth+1)
}

// partial notes a partial statement at depth; its name must be a
// literal one of the defined partials.
func (w *refWalker) partial(n *ast.PartialStatement, depth int) error {
	name, ok := ast.HelperNameStr(n.Name)
	if !ok {
		return fmt.Errorf("line %d: dynamic partial names are not supported", n.Line)
	}
	if _, ok := w.partials[name]; !ok {
		return fmt.Errorf("line %d: partial %q is not defined", n.Line, name)
	}
	if i := slices.IndexFunc(w.refs, func(r partialRef) bool { return r.name == name }); i >= 0 {
		w.refs[i].depth = max(w.refs[i].depth, depth)
	} else {
		w.refs = append(w.refs, partialRef{name, depth})
	}
	return nil
}

// exprDepth returns how deeply subexpressions nest in e's parameters and
// hash values, up to MaxBlockDepth+1.
func exprDepth(e *ast.Expression) int {
	if e == nil {
		return 0
	}
	d := 0
	sub := func(n ast.Node) {
		if s, ok := n.(*ast.SubExpression); ok && d <= MaxBlockDepth {
			d = max(d, 1+exprDepth(s.Expression))
		}
	}
	for _, p := range e.Params {
		sub(p)
	}
	if e.Hash != nil {
		for _, p := range e.Hash.Pairs {
			sub(p.Val)
		}
	}
	return d
}
