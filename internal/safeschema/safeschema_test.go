package safeschema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func compile(t *testing.T, doc string, load Loader) error {
	t.Helper()
	d, err := Decode([]byte(doc))
	if err != nil {
		return err
	}
	_, err = Compile("memlayer://schemas/test", d, load)
	return err
}

func TestExternalReferenceNeedsLoader(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"description":"TOP-SECRET"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"file://" + secret, "http://127.0.0.1:1/s.json", "other.json"} {
		err := compile(t, `{"$ref":"`+ref+`"}`, nil)
		if !errors.Is(err, ErrNoLoader) {
			t.Errorf("$ref %s: err = %v, want ErrNoLoader", ref, err)
		}
		if err != nil && strings.Contains(err.Error(), "TOP-SECRET") {
			t.Errorf("$ref %s: the error quotes the file: %v", ref, err)
		}
	}
	var asked []string
	load := func(url string) ([]byte, error) {
		asked = append(asked, url)
		return []byte(`{"type":"string"}`), nil
	}
	if err := compile(t, `{"$ref":"memlayer://schemas/other"}`, load); err != nil {
		t.Fatalf("with a loader: %v", err)
	}
	if len(asked) != 1 || asked[0] != "memlayer://schemas/other" {
		t.Errorf("loader asked for %q", asked)
	}
}

func TestCyclesAndSizesRefused(t *testing.T) {
	for name, doc := range map[string]string{
		"self ref":        `{"$ref":"#"}`,
		"allOf loop":      `{"$defs":{"a":{"allOf":[{"$ref":"#/$defs/b"}]},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		"long pattern":    `{"pattern":"` + strings.Repeat("a", MaxPattern+1) + `"}`,
		"long document":   `{"description":"` + strings.Repeat("d", MaxBytes) + `"}`,
		"not JSON":        `{"type":`,
		"unknown keyword": `{"type":"nosuchtype"}`,
	} {
		if err := compile(t, doc, nil); err == nil {
			t.Errorf("%s: compiled, want an error", name)
		} else if len(err.Error()) > 1200 {
			t.Errorf("%s: error of %d bytes, want it cut to about 1 KiB", name, len(err.Error()))
		}
	}
	// Recursion that moves to a smaller value is fine.
	if err := compile(t, `{"type":"object","properties":{"child":{"$ref":"#"}}}`, nil); err != nil {
		t.Errorf("recursive tree schema: %v", err)
	}
	if err := compile(t, `{"pattern":"^`+strings.Repeat("a", MaxPattern-2)+`$"}`, nil); err != nil {
		t.Errorf("pattern of MaxPattern bytes: %v", err)
	}
}
