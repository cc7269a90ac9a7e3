package redact_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/redact"
)

// Policy.Mask keeps a JSON document valid when a redactor's mask cuts
// across its syntax, keeps the strings of keep and numbers as written,
// and reports what it masked; a disabled policy masks nothing.
func TestPolicyMask(t *testing.T) {
	emails := regexp.MustCompile(`[a-z.]+@[a-z.]+\.[a-z]{2,}"?`) // eats the closing quote
	greedy := redact.Func(func(text string, keep []string) (string, []redact.Finding) {
		var found []redact.Finding
		out := emails.ReplaceAllStringFunc(text, func(m string) string {
			for _, k := range keep {
				if strings.HasPrefix(m, k) {
					return m
				}
			}
			found = append(found, redact.Finding{Kind: redact.Email})
			return "[email]"
		})
		return out, found
	})
	doc := `{"to":"ann@example.com","id":12345678901234567890,"inner":"{\"cc\":\"bob@example.com\"}","keep":"kim@example.com"}`
	out, found := redact.Policy{Redactor: greedy}.Mask(doc, []string{"kim@example.com"})
	if !json.Valid([]byte(out)) {
		t.Fatalf("Mask(%s) = %s, not JSON", doc, out)
	}
	for _, gone := range []string{"ann@example.com", "bob@example.com"} {
		if strings.Contains(out, gone) {
			t.Errorf("Mask kept %s: %s", gone, out)
		}
	}
	for _, kept := range []string{"kim@example.com", "12345678901234567890"} {
		if !strings.Contains(out, kept) {
			t.Errorf("Mask lost %s: %s", kept, out)
		}
	}
	if len(found) != 2 {
		t.Errorf("Mask found %d, want 2 (the outer and the nested address)", len(found))
	}
	if out, found := (redact.Policy{Disabled: true, Redactor: greedy}).Mask(doc, nil); out != doc || found != nil {
		t.Errorf("a disabled policy masked: %s, %v", out, found)
	}
}

// ForLayers masks a layer's text unless Layers (or its former name,
// Tools, which Layers overrides) turns masking off for that layer; a
// disabled policy gives nil.
func TestPolicyForLayers(t *testing.T) {
	const text = "mail ann@example.com"
	f := redact.Policy{Layers: map[string]bool{"pad": false}, Tools: map[string]bool{"pad": true, "kv": false}}.ForLayers()
	for id, masked := range map[string]bool{"pad": false, "kv": false, "facts": true} {
		if got := f(id, text); strings.Contains(got, "ann@example.com") == masked {
			t.Errorf("layer %s: %q, want masked %v", id, got, masked)
		}
	}
	if (redact.Policy{Disabled: true}).ForLayers() != nil {
		t.Error("a disabled policy's ForLayers is not nil")
	}
}
