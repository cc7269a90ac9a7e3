package memlayer_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/memlayer/memlayer"

// pkgInfo is what go list says about one package of the module.
type pkgInfo struct {
	path    string   // relative to the module: "layer", "storage/sqlite"; "" for the root
	imports []string // direct imports, as full paths
	deps    []string // transitive imports, as full paths (not test-only ones)
}

// listModule lists the module's packages with their imports and
// dependencies, and the set of standard-library packages among them. The
// tree is built concurrently by several people, so a package that does not
// compile yet is still listed (go list -e) with what it imports.
func listModule(t *testing.T) (map[string]pkgInfo, map[string]bool) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go command not found")
	}
	run := func(args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "go", args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil && len(out) == 0 {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out
	}
	pkgs := map[string]pkgInfo{}
	out := run("list", "-e", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}|{{join .Deps \",\"}}", "./...")
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 || !inModule(parts[0]) {
			continue
		}
		p := pkgInfo{path: rel(parts[0]), imports: split(parts[1]), deps: split(parts[2])}
		pkgs[p.path] = p
	}
	std := map[string]bool{}
	out = run("list", "-e", "-deps", "-f", "{{if .Standard}}{{.ImportPath}}{{end}}", "./...")
	for line := range strings.SplitSeq(string(out), "\n") {
		if line != "" {
			std[line] = true
		}
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages in the module")
	}
	return pkgs, std
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func inModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

func rel(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
}

// under reports whether the module-relative path p is dir or inside it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// TestImportDirection enforces the import rules of DESIGN.md on the
// module as it is now. Rules about packages that do not exist yet are
// skipped.
func TestImportDirection(t *testing.T) {
	pkgs, std := listModule(t)
	for _, r := range importRules {
		t.Run(r.name, func(t *testing.T) {
			if r.needs != nil && !slices.ContainsFunc(r.needs, func(p string) bool { _, ok := pkgs[p]; return ok }) {
				t.Skipf("none of %v exists yet", r.needs)
			}
			for _, v := range r.check(pkgs, std) {
				t.Error(v)
			}
		})
	}
}

// An importRule returns one message per violation.
type importRule struct {
	name  string
	needs []string // skip unless one of these packages exists
	check func(pkgs map[string]pkgInfo, std map[string]bool) []string
}

// forbid reports each module package in deps (other than pkg itself) for
// which bad is true.
func forbid(pkg string, deps []string, bad func(dep string) bool, why string) []string {
	var out []string
	for _, d := range deps {
		if !inModule(d) {
			continue
		}
		if r := rel(d); r != pkg && bad(r) {
			out = append(out, fmt.Sprintf("%s imports %s: %s", pkg, r, why))
		}
	}
	return out
}

// nonStandard reports each dependency that is neither in the standard
// library nor in allowed (module-relative paths).
func nonStandard(pkg string, deps []string, std map[string]bool, allowed ...string) []string {
	var out []string
	for _, d := range deps {
		switch {
		case std[d]:
		case inModule(d) && slices.Contains(allowed, rel(d)):
		case inModule(d):
			out = append(out, fmt.Sprintf("%s imports %s: only %v of the module is allowed", pkg, rel(d), allowed))
		default:
			out = append(out, fmt.Sprintf("%s imports %s: only the standard library is allowed (no langchaingo, no third party)", pkg, d))
		}
	}
	return out
}

// heavy reports whether the import path d is of langchaingo, raymond or
// a JSON Schema library.
func heavy(d string) bool {
	return strings.Contains(d, "langchaingo") || strings.Contains(d, "raymond") || strings.Contains(d, "jsonschema")
}

func anyUnder(d string, dirs ...string) bool {
	return slices.ContainsFunc(dirs, func(dir string) bool { return under(d, dir) })
}

var importRules = []importRule{
	{"storage imports only the standard library and internal/lexical", []string{"storage"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("storage", pkgs["storage"].deps, std, "internal/lexical")
	}},
	{"internal/jsonx imports only the standard library", []string{"internal/jsonx"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("internal/jsonx", pkgs["internal/jsonx"].deps, std)
	}},
	{"internal/lexical imports only the standard library", []string{"internal/lexical"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("internal/lexical", pkgs["internal/lexical"].deps, std)
	}},
	{"internal/textcut imports only the standard library", []string{"internal/textcut"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("internal/textcut", pkgs["internal/textcut"].deps, std)
	}},
	{"redact imports only the standard library and internal/jsonx", []string{"redact"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("redact", pkgs["redact"].deps, std, "internal/jsonx")
	}},
	{"redacttest imports only the standard library: its generators are written apart from redact", []string{"redact/redacttest"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("redact/redacttest", pkgs["redact/redacttest"].deps, std)
	}},
	{"internal/seqlog imports only the standard library and storage", []string{"internal/seqlog"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("internal/seqlog", pkgs["internal/seqlog"].deps, std, "storage", "internal/lexical")
	}},
	{"audit imports only the standard library and storage", []string{"audit"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("audit", pkgs["audit"].deps, std, "storage", "internal/lexical")
	}},
	{"layer imports only the standard library and storage", []string{"layer"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("layer", pkgs["layer"].deps, std, "storage", "internal/lexical")
	}},
	{"prompt/fence imports only the standard library: every layer fences its block with it", []string{"prompt/fence"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("prompt/fence", pkgs["prompt/fence"].deps, std)
	}},
	{"layertest imports only the standard library, layer and storage", []string{"layer/layertest"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("layer/layertest", pkgs["layer/layertest"].deps, std, "layer", "storage", "internal/lexical")
	}},
	{"prompt imports no storage, concrete layer or agentloop", []string{"prompt"}, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		var out []string
		for path, p := range pkgs {
			if !under(path, "prompt") {
				continue
			}
			// layer itself imports storage, so the ban on storage is on
			// prompt's own imports.
			out = append(out, forbid(path, p.imports, func(d string) bool { return under(d, "storage") }, "prompt must not use storage")...)
			out = append(out, forbid(path, p.deps, func(d string) bool {
				return anyUnder(d, "workingmemory", "entitymemory", "episodicmemory", "semanticmemory", "agentloop", "examples")
			}, "prompt must not depend on a concrete layer, agentloop or examples")...)
		}
		return out
	}},
	{"concrete layers import neither each other nor agentloop", []string{"workingmemory", "workingmemory/kv", "entitymemory", "episodicmemory", "semanticmemory"}, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		var out []string
		for path, p := range pkgs {
			// The scratchpad (workingmemory) and the key-value memory
			// (workingmemory/kv) are two concrete layers.
			var other func(d string) bool
			switch {
			case under(path, "workingmemory/kv"):
				other = func(d string) bool { return d == "workingmemory" || anyUnder(d, "entitymemory", "episodicmemory") }
			case under(path, "workingmemory"):
				other = func(d string) bool { return anyUnder(d, "workingmemory/kv", "entitymemory", "episodicmemory") }
			case under(path, "entitymemory"):
				other = func(d string) bool { return anyUnder(d, "workingmemory", "episodicmemory") }
			case under(path, "episodicmemory"):
				other = func(d string) bool { return anyUnder(d, "workingmemory", "entitymemory") }
			case under(path, "semanticmemory"):
				other = func(d string) bool { return anyUnder(d, "workingmemory", "entitymemory", "episodicmemory") }
			default:
				continue
			}
			out = append(out, forbid(path, p.deps, func(d string) bool {
				return other(d) || anyUnder(d, "agentloop", "examples")
			}, "concrete layers share only storage, layer and prompt")...)
		}
		return out
	}},
	{"agentloop imports no concrete layer and no langchaingo provider", []string{"agentloop"}, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		// The loop reaches layers only through the capabilities package
		// layer declares, so a user's own layer can do all a built-in
		// layer does; and it links no provider's client.
		p := pkgs["agentloop"]
		out := forbid("agentloop", p.deps, func(d string) bool {
			return anyUnder(d, "workingmemory", "entitymemory", "episodicmemory", "semanticmemory")
		}, "agentloop reaches layers through package layer's capabilities only")
		for _, d := range p.deps {
			if strings.HasPrefix(d, "github.com/tmc/langchaingo/llms/") {
				out = append(out, fmt.Sprintf("agentloop imports %s: agentloop links no langchaingo provider", d))
			}
		}
		return out
	}},
	{"chainmemory imports neither agentloop nor a concrete layer", []string{"chainmemory"}, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		// The langchaingo memory uses the write path, never the loop.
		return forbid("chainmemory", pkgs["chainmemory"].deps, func(d string) bool {
			return anyUnder(d, "agentloop", "workingmemory", "entitymemory", "episodicmemory", "semanticmemory")
		}, "chainmemory shares only the write path (internal/writepath) with agentloop")
	}},
	{"route imports only the standard library, layer and storage", []string{"route"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("route", pkgs["route"].deps, std, "layer", "storage", "internal/lexical")
	}},
	{"only examples and cmd import agentloop", []string{"agentloop"}, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		var out []string
		for path, p := range pkgs {
			if anyUnder(path, "examples", "cmd", "agentloop") {
				continue
			}
			out = append(out, forbid(path, p.deps, func(d string) bool { return under(d, "agentloop") }, "only examples and cmd (programs, per DESIGN.md) may import agentloop")...)
		}
		return out
	}},
	{"only examples and cmd import service: the loop, the layers and the write path never depend on it", []string{"service"}, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		// The service is built on semantic memory and the write path, for
		// programs; nothing it is built on may reach back to it.
		var out []string
		for path, p := range pkgs {
			if anyUnder(path, "examples", "cmd", "service") {
				continue
			}
			out = append(out, forbid(path, p.deps, func(d string) bool { return under(d, "service") }, "only examples and cmd (programs) may import service")...)
		}
		return out
	}},
	{"thread imports only the standard library, storage and layer: no langchaingo", []string{"thread"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return append(nonStandard("thread", pkgs["thread"].deps, std, "storage", "layer", "internal/lexical", "internal/textcut"),
			nonStandard("thread/threadtest", pkgs["thread/threadtest"].deps, std, "storage", "layer", "thread", "internal/lexical", "internal/textcut")...)
	}},
	{"inspect imports only the standard library, storage, layer, thread and audit: no langchaingo", []string{"inspect"}, func(pkgs map[string]pkgInfo, std map[string]bool) []string {
		return nonStandard("inspect", pkgs["inspect"].deps, std, "storage", "layer", "thread", "audit", "internal/lexical", "internal/textcut")
	}},
	{"history imports no concrete layer, inspect or route: it sits beside them", []string{"history"}, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		return forbid("history", pkgs["history"].deps, func(d string) bool {
			return anyUnder(d, "workingmemory", "entitymemory", "episodicmemory", "semanticmemory", "inspect", "route", "chainmemory")
		}, "history sits beside the layer packages, under the loop")
	}},
	{"cmd/memlayer depends on neither langchaingo, raymond nor jsonschema", []string{"cmd/memlayer"}, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		var out []string
		for _, d := range pkgs["cmd/memlayer"].deps {
			if heavy(d) {
				out = append(out, fmt.Sprintf("cmd/memlayer imports %s: the operator command links no model client, template or schema library", d))
			}
		}
		if n := len(pkgs["cmd/memlayer"].deps) + 1; n > 220 {
			out = append(out, fmt.Sprintf("cmd/memlayer links %d packages (go list -deps ./cmd/memlayer), more than 220: keep heavy clients behind build tags, as PostgreSQL's is", n))
		}
		return append(out, forbid("cmd/memlayer", pkgs["cmd/memlayer"].deps, func(d string) bool { return under(d, "agentloop") }, "the operator command uses inspect, not the loop")...)
	}},
	{"nothing imports examples", nil, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		var out []string
		for path, p := range pkgs {
			out = append(out, forbid(path, p.deps, func(d string) bool { return under(d, "examples") }, "examples are programs, not libraries")...)
		}
		return out
	}},
	{"conformance suites are imported only from tests", nil, func(pkgs map[string]pkgInfo, _ map[string]bool) []string {
		var out []string
		for path, p := range pkgs {
			out = append(out, forbid(path, p.deps, func(d string) bool {
				return (d == "layer/layertest" || d == "storage/storagetest" || d == "thread/threadtest") && !under(path, d)
			}, "a conformance suite may be imported only from _test.go files")...)
		}
		return out
	}},
}

// The rules catch each kind of violation in a made-up module.
func TestImportRulesCatchViolations(t *testing.T) {
	full := func(ps ...string) []string {
		var out []string
		for _, p := range ps {
			if strings.Contains(p, ".") || !strings.Contains(p, "/") && std[p] {
				out = append(out, p)
			} else {
				out = append(out, module+"/"+p)
			}
		}
		return out
	}
	tests := []struct {
		name string
		pkg  string
		deps []string
		want string // substring of every expected violation (at least one); "" for none
	}{
		{"storage on stdlib", "storage", []string{"context", "errors"}, ""},
		{"storage on layer", "storage", []string{"layer"}, "storage imports layer"},
		{"storage on third party", "storage", []string{"github.com/redis/go-redis/v9"}, "go-redis"},
		{"layer on storage", "layer", []string{"storage", "context"}, ""},
		{"layer on langchaingo", "layer", []string{"storage", "github.com/tmc/langchaingo/llms"}, "langchaingo"},
		{"layer on prompt", "layer", []string{"prompt"}, "layer imports prompt"},
		{"layertest on layer", "layer/layertest", []string{"layer", "storage", "testing"}, ""},
		{"layertest on workingmemory", "layer/layertest", []string{"layer", "workingmemory"}, "imports workingmemory"},
		{"prompt on layer", "prompt", []string{"layer", "github.com/aymerick/raymond"}, ""},
		{"prompt on workingmemory", "prompt", []string{"layer", "workingmemory"}, "prompt imports workingmemory"},
		{"prompt on agentloop", "prompt", []string{"agentloop"}, "prompt imports agentloop"},
		{"workingmemory on entitymemory", "workingmemory", []string{"layer", "entitymemory"}, "workingmemory imports entitymemory"},
		{"entitymemory on prompt", "entitymemory", []string{"layer", "prompt"}, ""},
		{"entitymemory on agentloop", "entitymemory", []string{"layer", "agentloop"}, "entitymemory imports agentloop"},
		{"episodicmemory on entitymemory", "episodicmemory", []string{"layer", "entitymemory"}, "episodicmemory imports entitymemory"},
		{"entitymemory on episodicmemory", "entitymemory", []string{"layer", "episodicmemory"}, "entitymemory imports episodicmemory"},
		{"episodicmemory on lexical", "episodicmemory", []string{"layer", "internal/lexical", "internal/jsonx"}, ""},
		{"lexical on layer", "internal/lexical", []string{"layer"}, "internal/lexical imports layer"},
		{"workingmemory on layer", "workingmemory", []string{"layer", "storage"}, ""},
		{"workingmemory/kv on workingmemory", "workingmemory/kv", []string{"layer", "workingmemory"}, "workingmemory/kv imports workingmemory"},
		{"workingmemory on workingmemory/kv", "workingmemory", []string{"layer", "workingmemory/kv"}, "workingmemory imports workingmemory/kv"},
		{"workingmemory/kv on entitymemory", "workingmemory/kv", []string{"layer", "entitymemory"}, "workingmemory/kv imports entitymemory"},
		{"workingmemory/kv on layer", "workingmemory/kv", []string{"layer", "storage"}, ""},
		{"layer on agentloop", "layer", []string{"storage", "agentloop"}, "imports agentloop"},
		{"agentloop on prompt", "agentloop", []string{"layer", "prompt", "storage"}, ""},
		{"agentloop on semanticmemory", "agentloop", []string{"layer", "semanticmemory"}, "agentloop imports semanticmemory"},
		{"agentloop on workingmemory/kv", "agentloop", []string{"layer", "workingmemory/kv"}, "agentloop imports workingmemory/kv"},
		{"agentloop on anthropic", "agentloop", []string{"layer", "github.com/tmc/langchaingo/llms", "github.com/tmc/langchaingo/llms/anthropic"}, "llms/anthropic"},
		{"chainmemory on agentloop", "chainmemory", []string{"layer", "agentloop"}, "chainmemory imports agentloop"},
		{"chainmemory on the write path", "chainmemory", []string{"layer", "route", "internal/writepath"}, ""},
		{"route on layer", "route", []string{"layer", "storage", "context"}, ""},
		{"route on agentloop", "route", []string{"layer", "agentloop"}, "route imports agentloop"},
		{"examples on agentloop", "examples/cms", []string{"agentloop", "workingmemory"}, ""},
		{"agentloop on examples", "agentloop", []string{"examples/cms"}, "agentloop imports examples/cms"},
		{"storage/sqlite on storagetest", "storage/sqlite", []string{"storage", "storage/storagetest"}, "storage/sqlite imports storage/storagetest"},
		{"entitymemory on layertest", "entitymemory", []string{"layer", "layer/layertest"}, "entitymemory imports layer/layertest"},
		{"redacttest on redact", "redact/redacttest", []string{"redact"}, "redact/redacttest imports redact"},
		{"thread on layer", "thread", []string{"layer", "storage", "context"}, ""},
		{"thread on langchaingo", "thread", []string{"storage", "github.com/tmc/langchaingo/llms"}, "langchaingo"},
		{"inspect on thread and audit", "inspect", []string{"thread", "audit", "storage", "layer"}, ""},
		{"inspect on agentloop", "inspect", []string{"thread", "agentloop"}, "inspect imports agentloop"},
		{"inspect on langchaingo", "inspect", []string{"thread", "github.com/tmc/langchaingo/llms"}, "langchaingo"},
		{"cmd/memlayer on inspect", "cmd/memlayer", []string{"inspect", "thread", "storage/sqlite", "modernc.org/sqlite"}, ""},
		{"cmd/memlayer on raymond", "cmd/memlayer", []string{"inspect", "github.com/aymerick/raymond"}, "raymond"},
		{"cmd/memlayer on jsonschema", "cmd/memlayer", []string{"inspect", "github.com/santhosh-tekuri/jsonschema/v6"}, "jsonschema"},
		{"history on thread and prompt", "history", []string{"thread", "prompt", "layer", "github.com/tmc/langchaingo/llms"}, ""},
		{"history on entitymemory", "history", []string{"thread", "entitymemory"}, "history imports entitymemory"},
		{"cmd/memlayer on agentloop", "cmd/memlayer", []string{"inspect", "agentloop"}, "cmd/memlayer imports agentloop"},
		{"service on semanticmemory and the write path", "service", []string{"semanticmemory", "internal/writepath", "route", "inspect", "layer"}, ""},
		{"agentloop on service", "agentloop", []string{"layer", "service"}, "agentloop imports service"},
		{"semanticmemory on service", "semanticmemory", []string{"layer", "service"}, "semanticmemory imports service"},
		{"service on agentloop", "service", []string{"semanticmemory", "agentloop"}, "service imports agentloop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := pkgInfo{path: tt.pkg, deps: full(tt.deps...)}
			p.imports = p.deps
			pkgs := map[string]pkgInfo{tt.pkg: p}
			var got []string
			for _, r := range importRules {
				got = append(got, r.check(pkgs, std)...)
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("unexpected violations %q", got)
			case tt.want != "" && (len(got) == 0 || slices.ContainsFunc(got, func(v string) bool { return !strings.Contains(v, tt.want) })):
				t.Errorf("violations %q, want some, each containing %q", got, tt.want)
			}
		})
	}
}

// std is a small standard-library set for the made-up module.
var std = map[string]bool{"context": true, "errors": true, "testing": true}

// TestListModuleSeesTestOnlyImports checks the premise of the conformance
// suite rule: go list without -test leaves out imports made only by
// _test.go files (layer's tests import layertest).
func TestListModuleSeesTestOnlyImports(t *testing.T) {
	pkgs, _ := listModule(t)
	p, ok := pkgs["layer"]
	if !ok {
		t.Skip("no layer package yet")
	}
	for _, d := range p.deps {
		if rel(d) == "layer/layertest" {
			t.Fatal("go list -deps of layer includes layer/layertest: test imports leak into the check")
		}
	}
	if len(p.deps) == 0 {
		t.Error("go list reported no dependencies for layer")
	}
}
