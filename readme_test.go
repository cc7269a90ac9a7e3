package memlayer_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readmeImports are the packages a README snippet may use without importing
// them, by the name it uses.
var readmeImports = map[string]string{
	"context":        "context",
	"errors":         "errors",
	"fmt":            "fmt",
	"llms":           "github.com/tmc/langchaingo/llms",
	"agentloop":      module + "/agentloop",
	"audit":          module + "/audit",
	"entitymemory":   module + "/entitymemory",
	"episodicmemory": module + "/episodicmemory",
	"layer":          module + "/layer",
	"prompt":         module + "/prompt",
	"route":          module + "/route",
	"chainmemory":    module + "/chainmemory",
	"inspect":        module + "/inspect",
	"semanticmemory": module + "/semanticmemory",
	"service":        module + "/service",
	"storage":        module + "/storage",
	"sqlite":         module + "/storage/sqlite",
	"thread":         module + "/thread",
	"workingmemory":  module + "/workingmemory",
	"kv":             module + "/workingmemory/kv",
}

// goBlocks returns the ```go blocks of a Markdown text, in order.
func goBlocks(md string) []string {
	var blocks []string
	var cur []string
	in := false
	for line := range strings.Lines(md) {
		trimmed := strings.TrimRight(line, "\r\n")
		switch {
		case !in && trimmed == "```go":
			in, cur = true, nil
		case in && trimmed == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, ""))
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// readmeSource returns block as a Go file. A block that starts with a
// package clause is a file already. Any other block is the body of a
// function that returns an error and has ctx, model and store in scope;
// it is given the imports of readmeImports it uses.
func readmeSource(block string) (string, error) {
	if strings.HasPrefix(block, "package ") {
		return block, nil
	}
	body := "package readme\n\nfunc snippet() error {\n" + block + "\nreturn nil\n}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "snippet.go", body, parser.SkipObjectResolution)
	if err != nil {
		return "", err
	}
	used := map[string]bool{"context": true, "llms": true, "storage": true}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && readmeImports[id.Name] != "" {
				used[id.Name] = true
			}
		}
		return true
	})
	var b strings.Builder
	b.WriteString("package readme\n\nimport (\n")
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range used {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "\t%q\n", readmeImports[name])
	}
	b.WriteString(")\n\nfunc snippet(ctx context.Context, model llms.Model, store storage.Store) error {\n")
	b.WriteString("\t_, _, _ = ctx, model, store\n")
	b.WriteString(block)
	b.WriteString("\treturn nil\n}\n")
	return b.String(), nil
}

// TestReadme_GoBlocksCompile builds every Go block of README.md with
// go vet, each in a package of its own inside the module.
func TestReadme_GoBlocksCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds each README block with the go command")
	}
	md, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(md))
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d Go blocks, want the complete program and at least one snippet", len(blocks))
	}
	// A directory whose name starts with "_" is left out of ./... patterns,
	// so a concurrent go build of the tree never sees these packages.
	dir, err := os.MkdirTemp(".", "_readmetest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var pkgs []string
	for i, block := range blocks {
		src, err := readmeSource(block)
		if err != nil {
			t.Errorf("README Go block %d does not parse: %v\n%s", i+1, err, block)
			continue
		}
		sub := filepath.Join(dir, fmt.Sprintf("block%d", i+1))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, "./"+filepath.ToSlash(sub))
	}
	if len(pkgs) == 0 {
		return
	}
	out, err := exec.Command("go", append([]string{"vet"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("README Go blocks do not compile (block N is the Nth ```go block of README.md):\n%s", out)
	}
}

// TestReadme_BlocksAreChecked shows the check can fail: a block that uses
// an undefined name, and one that declares a name twice, are refused.
func TestReadme_BlocksAreChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	dir, err := os.MkdirTemp(".", "_readmetest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bad := map[string]string{
		"undefined":  "x := map[string]page{}\n_ = x\n",
		"redeclared": "a, err := 1, error(nil)\na, err := 2, err\n_, _ = a, err\n",
	}
	for name, block := range bad {
		src, err := readmeSource(block)
		if err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, "main.go"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("go", "vet", "./"+filepath.ToSlash(sub)).CombinedOutput(); err == nil {
			t.Errorf("block %q compiled; want an error\n%s", name, out)
		}
	}
}

func TestReadme_GoBlocksFound(t *testing.T) {
	md := "text\n```go\npackage main\n```\n```sh\nls\n```\n```go\nx := 1\n_ = x\n```\n"
	got := goBlocks(md)
	if len(got) != 2 || got[0] != "package main\n" || got[1] != "x := 1\n_ = x\n" {
		t.Fatalf("goBlocks = %q", got)
	}
}

// TestReadme_ProgramRuns runs the README's complete program on its
// scripted model and checks that the second turn's prompt holds what the
// first turn noted.
func TestReadme_ProgramRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the README program")
	}
	md, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var prog string
	for _, b := range goBlocks(string(md)) {
		if strings.HasPrefix(b, "package main") {
			prog = b
			break
		}
	}
	if prog == "" {
		t.Fatal("README.md has no complete program (a Go block starting with package main)")
	}
	dir, err := os.MkdirTemp(".", "_readmetest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "OPENAI_") })
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "<working_memory>") || !strings.Contains(string(out), `"user": "I am Ada.`) {
		t.Errorf("the second turn's prompt does not hold the first turn's note:\n%s", out)
	}
}
