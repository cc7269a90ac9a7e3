package entitymemory

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports enforces the package's place in the module: besides the
// standard library it may import only layer, storage, prompt/fence and
// internal/jsonx (no prompt, agentloop, workingmemory or langchaingo).
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/memlayer/memlayer/layer":            true,
		"github.com/memlayer/memlayer/storage":          true,
		"github.com/memlayer/memlayer/internal/jsonx":   true,
		"github.com/memlayer/memlayer/internal/lexical": true,
		"github.com/memlayer/memlayer/prompt/fence":     true,
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(p, "/")
			if strings.Contains(first, ".") && !allowed[p] {
				t.Errorf("%s imports %s; entitymemory may import only the standard library, layer, storage, prompt/fence, internal/jsonx and internal/lexical", f, p)
			}
		}
	}
}
