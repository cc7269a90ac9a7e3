package prompt

import (
	"strings"

	"github.com/aymerick/raymond"
	"github.com/aymerick/raymond/ast"
	"github.com/aymerick/raymond/parser"
)

// A fast path for the common template. raymond evaluates every {{name}}
// through reflection, strings.Title and fmt.Sprintf (about 2 µs a
// variable), which alone would spend the whole per-step budget. Most
// system-prompt templates use only text, comments, {{name}}, {{{name}}}
// and {{#if name}}/{{#unless name}} (with {{else}}). New compiles such a
// template a second time, from raymond's own AST (so whitespace control
// and standalone lines are identical), into a list of nodes that Compile
// renders with a map lookup, raymond.Escape, raymond.Str and
// raymond.IsTrue: the same functions raymond itself uses, so the output
// is the same byte for byte (FuzzFastPath checks it against raymond). Any
// other construct (paths, helpers, partials, each/with, hashes, data
// variables) keeps the whole template on raymond.

type fastKind uint8

const (
	fastText fastKind = iota
	fastVar
	fastIf
)

type fastNode struct {
	kind      fastKind
	text      string // fastText: the text; fastVar, fastIf: the variable
	escape    bool   // fastVar: HTML-escape unless the value is a SafeString
	negate    bool   // fastIf: unless
	then, els []fastNode
}

// builtinHelpers are raymond's global helpers: a mustache naming one is
// a helper call, not a variable.
var builtinHelpers = map[string]bool{"if": true, "unless": true, "with": true, "each": true, "log": true, "lookup": true, "equal": true}

// compileFast returns the fast form of source, or nil if it uses anything
// the fast path does not handle. helpers are the template's own helpers.
func compileFast(source string, helpers map[string]any) []fastNode {
	prog, err := parser.Parse(source)
	if err != nil {
		return nil
	}
	nodes, ok := fastProgram(prog, helpers)
	if !ok {
		return nil
	}
	if nodes == nil {
		nodes = []fastNode{}
	}
	return nodes
}

func fastProgram(p *ast.Program, helpers map[string]any) ([]fastNode, bool) {
	if p == nil {
		return nil, true
	}
	if len(p.BlockParams) > 0 {
		return nil, false
	}
	var out []fastNode
	for _, n := range p.Body {
		switch n := n.(type) {
		case *ast.ContentStatement:
			if n.Value != "" {
				out = append(out, fastNode{kind: fastText, text: n.Value})
			}
		case *ast.CommentStatement:
		case *ast.MustacheStatement:
			name, ok := simpleVar(n.Expression, helpers)
			if !ok || len(n.Expression.Params) > 0 {
				return nil, false
			}
			out = append(out, fastNode{kind: fastVar, text: name, escape: !n.Unescaped})
		case *ast.BlockStatement:
			e := n.Expression
			if e == nil || e.Hash != nil || len(e.Params) != 1 {
				return nil, false
			}
			helper, ok := e.Path.(*ast.PathExpression)
			if !ok || helper.Data || helper.Scoped || helper.Depth != 0 || len(helper.Parts) != 1 ||
				(helper.Parts[0] != "if" && helper.Parts[0] != "unless") || helpers[helper.Parts[0]] != nil {
				return nil, false
			}
			param := e.Params[0]
			if pe, isExpr := param.(*ast.Expression); isExpr {
				if len(pe.Params) > 0 || pe.Hash != nil {
					return nil, false
				}
				param = pe.Path
			}
			name, ok := simplePath(param, helpers)
			if !ok {
				return nil, false
			}
			then, ok := fastProgram(n.Program, helpers)
			if !ok {
				return nil, false
			}
			els, ok := fastProgram(n.Inverse, helpers)
			if !ok {
				return nil, false
			}
			out = append(out, fastNode{kind: fastIf, text: name, negate: helper.Parts[0] == "unless", then: then, els: els})
		default:
			return nil, false
		}
	}
	return out, true
}

// simpleVar returns the variable a plain one-part path names.
func simpleVar(e *ast.Expression, helpers map[string]any) (string, bool) {
	if e == nil || e.Hash != nil {
		return "", false
	}
	return simplePath(e.Path, helpers)
}

// simplePath returns the variable a plain one-part path names.
func simplePath(n ast.Node, helpers map[string]any) (string, bool) {
	p, ok := n.(*ast.PathExpression)
	if !ok || p.Data || p.Scoped || p.Depth != 0 || len(p.Parts) != 1 {
		return "", false
	}
	name := p.Parts[0]
	if name == "" || name == "this" || builtinHelpers[name] || helpers[name] != nil {
		return "", false
	}
	return name, true
}

func renderFast(b *strings.Builder, nodes []fastNode, ctx map[string]any) {
	for i := range nodes {
		n := &nodes[i]
		switch n.kind {
		case fastText:
			b.WriteString(n.text)
		case fastVar:
			switch v := ctx[n.text].(type) {
			case nil:
			case raymond.SafeString:
				b.WriteString(string(v))
			case string:
				if n.escape {
					b.WriteString(raymond.Escape(v))
				} else {
					b.WriteString(v)
				}
			default:
				s := raymond.Str(v)
				if n.escape {
					s = raymond.Escape(s)
				}
				b.WriteString(s)
			}
		case fastIf:
			if raymond.IsTrue(ctx[n.text]) != n.negate {
				renderFast(b, n.then, ctx)
			} else {
				renderFast(b, n.els, ctx)
			}
		}
	}
}
