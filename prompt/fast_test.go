package prompt

import (
	"testing"

	"github.com/aymerick/raymond"

	"github.com/memlayer/memlayer/layer"
)

var fastVars = map[string]any{
	"name": `Ann <a&b> "q" 'x'`, "empty": "", "zero": 0, "n": 42, "f": 2.5, "yes": true, "no": false,
	"nothing": nil, "safe": raymond.SafeString("<ok>"), "list": []int{}, "obj": map[string]int{"a": 1},
}

var fastRecalled = []layer.Recalled{
	rec("working-memory", 100, layer.Fence("working_memory", "plan & <b>")),
	rec("entities", 150, "e1", "e2"),
}

// slowTwin returns a copy of c that always renders with raymond.
func slowTwin(c *Compiler) *Compiler {
	twin := *c
	twin.fast = nil
	return &twin
}

func TestFastPathEligibility(t *testing.T) {
	tests := []struct {
		tpl  string
		fast bool
	}{
		{"plain text", true},
		{"{{name}} {{{name}}} {{& name}} {{! comment}} {{!-- long --}}", true},
		{"{{#if yes}}a{{else}}b{{/if}}{{#unless no}}c{{/unless}}", true},
		{"{{#if yes}}a{{else if no}}b{{else}}c{{/if}}", true},
		{"  {{~name~}}  \n{{#if yes}}\nx\n{{/if}}\n", true},
		{"{{obj.a}}", false},
		{"{{this}}", false},
		{"{{@root}}", false},
		{"{{../x}}", false},
		{"{{#each list}}{{this}}{{/each}}", false},
		{"{{#with obj}}{{a}}{{/with}}", false},
		{"{{> part}}", false},
		{"{{lookup obj 'a'}}", false},
		{"{{#if yes includeZero=true}}x{{/if}}", false},
		{"{{#if (lookup obj 'a')}}x{{/if}}", false},
		{"{{#if yes as |x|}}{{x}}{{/if}}", false},
		{"{{shout name}}", false},
		{"{{shout}}", false}, // a helper, not a variable
		{"{{log}}", false},
		{"{{\"literal\"}}", false},
	}
	for _, tt := range tests {
		c, err := New(Config{Template: tt.tpl, Helpers: map[string]any{"shout": func() string { return "!" }}, Partials: map[string]string{"part": "p"}})
		if err != nil {
			t.Errorf("New(%q): %v", tt.tpl, err)
			continue
		}
		if got := c.fast != nil; got != tt.fast {
			t.Errorf("%q: fast = %v, want %v", tt.tpl, got, tt.fast)
		}
		fast, ferr := c.Compile(fastRecalled, fastVars)
		slow, serr := slowTwin(c).Compile(fastRecalled, fastVars)
		if fast != slow || (ferr == nil) != (serr == nil) {
			t.Errorf("%q: fast %q, %v; raymond %q, %v", tt.tpl, fast, ferr, slow, serr)
		}
	}
}

// FuzzFastPath renders arbitrary templates both ways and requires the
// fast path to match raymond byte for byte whenever it is used.
func FuzzFastPath(f *testing.F) {
	for _, s := range []string{
		"{{name}}|{{{name}}}|{{zero}}|{{n}}|{{f}}|{{yes}}|{{no}}|{{nothing}}|{{safe}}|{{{safe}}}|{{obj}}|{{list}}",
		"{{#if empty}}E{{else}}not{{/if}} {{#unless zero}}zero is false{{/unless}} {{#if list}}L{{/if}}",
		"a\n  {{#if yes}}  \n  b\n  {{else}}\n  c\n  {{/if}}  \nd",
		"{{~name~}}   x   {{~{name}~}} {{! c }}\n{{!-- x --}}\n",
		"{{{instructions}}}\n\n{{{layers}}}\n{{workingMemory}}\n{{entities}}",
		"{{#if yes}}{{#unless no}}{{#if n}}deep{{/if}}{{/unless}}{{/if}}",
		"{{#if no}}1{{else if nothing}}2{{else if yes}}3{{else}}4{{/if}}",
		"\\{{name}} {{{{raw}}}} {{missing}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tpl string) {
		c, err := New(Config{Template: tpl, Instructions: "I <&>"})
		if err != nil || c.fast == nil {
			return
		}
		fast, ferr := c.Compile(fastRecalled, fastVars)
		slow, serr := slowTwin(c).Compile(fastRecalled, fastVars)
		if serr != nil {
			return // raymond failed at run time; the fast path has nothing to match
		}
		if ferr != nil || fast != slow {
			t.Fatalf("template %q:\nfast    %q (%v)\nraymond %q", tpl, fast, ferr, slow)
		}
	})
}
