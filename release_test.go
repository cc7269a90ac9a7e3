package memlayer_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestOperate01_LicenceAndGoDirective (issue 13): the repository carries
// the MIT licence, and go.mod asks for a Go release (go 1.N.0), never a
// later patch, so that users on any 1.N toolchain can build it.
func TestOperate01_LicenceAndGoDirective(t *testing.T) {
	lic, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatalf("LICENSE: %v", err)
	}
	for _, want := range []string{"MIT License", "Copyright (c) 2026 The memlayer authors", "WITHOUT WARRANTY OF ANY KIND"} {
		if !strings.Contains(string(lic), want) {
			t.Errorf("LICENSE lacks %q", want)
		}
	}
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	if !regexp.MustCompile(`^1\.\d+\.0$`).Match(m[1]) {
		t.Errorf("go.mod asks for go %s, want a release 1.N.0 (what go mod tidy keeps given the dependencies)", m[1])
	}
}
