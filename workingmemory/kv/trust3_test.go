package kv_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// TestTrust314_KVValuesMaskedOnWrite: a Layer writes each value out
// through its env's redaction (layer.Env.Redact, called with the layer's
// ID), in its persisted state and its snapshot, while the run's memory
// keeps the value as it was set; a redaction that returns something other
// than JSON is written as a JSON string; keys are kept; Config.Redact
// replaces the env's; a nil redaction writes values as they are.
func TestTrust314_KVValuesMaskedOnWrite(t *testing.T) {
	const email = "ana@example.com"
	mask := func(s string) string { return strings.ReplaceAll(s, email, "[redacted email]") }
	var ids []string
	for _, tc := range []struct {
		name   string
		redact func(id, text string) string
		cfg    func(string) string
		masked bool
	}{
		{"env", func(id, s string) string { ids = append(ids, id); return mask(s) }, nil, true},
		{"not JSON", func(_, s string) string {
			if strings.Contains(s, email) {
				return "<" + mask(s) + ">" // a redactor that breaks the JSON
			}
			return s
		}, nil, true},
		{"config replaces env", func(_, s string) string { return s }, mask, true},
		{"none", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := storage.NewMemoryStore()
			l, err := kv.NewLayer(kv.LayerConfig{Spec: layer.Spec{ID: "kv-a"}, Memory: kv.Config{Redact: tc.cfg}})
			if err != nil {
				t.Fatal(err)
			}
			env := layer.Env{ThreadID: "t", ResourceID: "u", Store: st, Logger: slog.New(slog.DiscardHandler), Redact: tc.redact}
			bound, err := l.Open(t.Context(), env)
			if err != nil {
				t.Fatal(err)
			}
			mem := bound.Memory()
			if err := kv.Set(mem, "contact/"+email[:3], "mail "+email); err != nil {
				t.Fatal(err)
			}
			if err := kv.Set(mem, "n", 42); err != nil {
				t.Fatal(err)
			}
			if err := bound.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if v, _, _ := kv.Get[string](mem, "contact/ana"); v != "mail "+email {
				t.Errorf("the run's memory holds %q, want the value as it was set", v)
			}
			it, err := st.Get(t.Context(), storage.LayerKey("kv-a", env.ScopeKey(layer.ScopeThread), "state"))
			if err != nil {
				t.Fatal(err)
			}
			snap, err := bound.Snapshot(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for what, b := range map[string][]byte{"stored state": it.Value, "snapshot": snap} {
				if !json.Valid(b) {
					t.Fatalf("%s is not JSON: %s", what, b)
				}
				if got := strings.Contains(string(b), email); got == tc.masked {
					t.Errorf("%s %s: value kept = %v, want %v", what, b, got, !tc.masked)
				}
				if !strings.Contains(string(b), `"contact/ana"`) {
					t.Errorf("%s %s: the key was altered", what, b)
				}
			}
			// A later run loads the masked value, and the number as it was.
			again, err := l.Open(t.Context(), env)
			if err != nil {
				t.Fatal(err)
			}
			v, ok, err := kv.Get[string](again.Memory(), "contact/ana")
			if err != nil || !ok || strings.Contains(v, email) == tc.masked {
				t.Errorf("a later run loads %q (%v)", v, err)
			}
			if n, _, err := kv.Get[int](again.Memory(), "n"); err != nil || n != 42 {
				t.Errorf("a later run loads n = %d (%v), want 42", n, err)
			}
		})
	}
	if len(ids) == 0 || ids[0] != "kv-a" {
		t.Errorf("the env's redaction was called with layer IDs %v, want kv-a", ids)
	}
}
