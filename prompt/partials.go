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
	refs := make(map[string][]string, len(partials)+1)
	for _, name := range slices.Sorted(maps.Keys(partials)) {
		r, err := partialRefs(partials[name], partials)
		if err != nil {
			return fmt.Errorf("partial %q: %w", name, err)
		}
		refs[name] = r
	}
	top, err := partialRefs(source, partials)
	if err != nil {
		return err
	}
	// depth[name] is the longest chain of partials name starts, itself
	// included, once known; 0 while name is being explored.
	depth := make(map[string]int, len(partials))
	var visit func(name string, path []string) (int, error)
	visit = func(name string, path []string) (int, error) {
		if d, seen := depth[name]; seen {
			if d == 0 {
				return 0, fmt.Errorf("partial %q includes itself (%s)", name, cycle(path, name))
			}
			return d, nil
		}
		depth[name] = 0
		d := 0
		for _, r := range refs[name] {
			rd, err := visit(r, append(path, name))
			if err != nil {
				return 0, err
			}
			d = max(d, rd)
		}
		depth[name] = d + 1
		return d + 1, nil
	}
	for _, name := range slices.Sorted(maps.Keys(partials)) {
		if _, err := visit(name, nil); err != nil {
			return err
		}
	}
	for _, name := range top {
		if depth[name] > MaxPartialDepth {
			return fmt.Errorf("partials nested deeper than %d (MaxPartialDepth), from %q", MaxPartialDepth, name)
		}
	}
	return nil
}

// cycle renders the part of path from name on, back to name.
func cycle(path []string, name string) string {
	cyc := slices.Clone(path[slices.Index(path, name):])
	return strings.Join(append(cyc, name), " > ")
}

// partialRefs returns the names of the partials source includes, each
// once, or an error for a name that is computed or not defined.
func partialRefs(source string, partials map[string]string) ([]string, error) {
	prog, err := parser.Parse(source)
	if err != nil {
		return nil, err
	}
	var names []string
	var walk func(p *ast.Program) error
	walk = func(p *ast.Program) error {
		if p == nil {
			return nil
		}
		for _, n := range p.Body {
			switch n := n.(type) {
			case *ast.BlockStatement:
				if err := walk(n.Program); err != nil {
					return err
				}
				if err := walk(n.Inverse); err != nil {
					return err
				}
			case *ast.PartialStatement:
				name, ok := ast.HelperNameStr(n.Name)
				if !ok {
					return fmt.Errorf("line %d: dynamic partial names are not supported", n.Line)
				}
				if _, ok := partials[name]; !ok {
					return fmt.Errorf("line %d: partial %q is not defined", n.Line, name)
				}
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
		return nil
	}
	return names, walk(prog)
}
