package prompt

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
)

var update = flag.Bool("update", false, "rewrite the want/error files of testdata/*.txtar")

// TestGolden renders every testdata/*.txtar case and compares the result
// with its "want" file (or its "error" file, which holds a substring of
// the expected error). A case holds:
//
//	-- instructions --          Config.Instructions (optional)
//	-- template --              Config.Template (optional)
//	-- vars.json --             user variables, a JSON object (optional)
//	-- layer ID SLOT --         one recalled item of layer ID at SLOT;
//	                            repeat the name for more items
//	-- layer ID SLOT fence=TAG --  the same, passed through fence.Wrap(TAG, …)
//	-- want --                  the rendered prompt
//
// Every file's final newline is not part of its text. Run
// `go test ./prompt -run Golden -update` to rewrite want (or error) files.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			out, err := renderCase(t, ar)
			got, kind := out, "want"
			if err != nil {
				got, kind = err.Error(), "error"
			}
			if *update {
				writeResult(t, file, ar, kind, got)
				return
			}
			want, ok := fileText(ar, kind)
			if !ok {
				t.Fatalf("no %q file; got %s:\n%s", kind, kind, got)
			}
			if kind == "error" && !strings.Contains(got, want) || kind == "want" && got != want {
				t.Errorf("%s mismatch\ngot:\n%s\nwant:\n%s", kind, got, want)
			}
		})
	}
}

func renderCase(t *testing.T, ar *txtar.Archive) (string, error) {
	t.Helper()
	var cfg Config
	cfg.Instructions, _ = fileText(ar, "instructions")
	cfg.Template, _ = fileText(ar, "template")
	var vars map[string]any
	if v, ok := fileText(ar, "vars.json"); ok {
		if err := json.Unmarshal([]byte(v), &vars); err != nil {
			t.Fatalf("vars.json: %v", err)
		}
	}
	// The files name each layer's slot; the layers are handed to Compile
	// in slot order, as layer.Stack.Recall returns them.
	var recalled []layer.Recalled
	var slots []int
	for _, f := range ar.Files {
		fields := strings.Fields(f.Name)
		if len(fields) < 3 || fields[0] != "layer" {
			continue
		}
		slot, err := strconv.Atoi(fields[2])
		if err != nil {
			t.Fatalf("file %q: bad slot: %v", f.Name, err)
		}
		text := strings.TrimSuffix(string(f.Data), "\n")
		if len(fields) == 4 {
			tag, ok := strings.CutPrefix(fields[3], "fence=")
			if !ok {
				t.Fatalf("file %q: want fence=TAG", f.Name)
			}
			text = fence.Wrap(tag, text)
		}
		if n := len(recalled); n > 0 && recalled[n-1].ID == fields[1] {
			recalled[n-1].Items = append(recalled[n-1].Items, layer.Item{Text: text})
			continue
		}
		recalled = append(recalled, layer.Recalled{ID: fields[1], Items: []layer.Item{{Text: text}}})
		slots = append(slots, slot)
	}
	order := make([]int, len(recalled))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(slots[i], slots[j]) })
	sorted := make([]layer.Recalled, len(order))
	for k, i := range order {
		sorted[k] = recalled[i]
	}
	recalled = sorted
	c, err := New(cfg)
	if err != nil {
		return "", err
	}
	return c.Compile(recalled, vars)
}

func fileText(ar *txtar.Archive, name string) (string, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return strings.TrimSuffix(string(f.Data), "\n"), true
		}
	}
	return "", false
}

func writeResult(t *testing.T, file string, ar *txtar.Archive, kind, text string) {
	t.Helper()
	files := ar.Files[:0:0]
	for _, f := range ar.Files {
		if f.Name != "want" && f.Name != "error" {
			files = append(files, f)
		}
	}
	ar.Files = append(files, txtar.File{Name: kind, Data: []byte(text + "\n")})
	data := txtar.Format(ar)
	if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, data) {
		return
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("updated %s", file)
}
