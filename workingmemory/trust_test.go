package workingmemory

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

// TestTrust19_DuplicateKeysLastWins: of duplicate keys in a JSON object
// the last one wins, as in encoding/json, at every depth, in objects of
// every size (the decoder sorts small and large objects differently), on
// the update path and when a stored state is loaded.
func TestTrust19_DuplicateKeysLastWins(t *testing.T) {
	var big strings.Builder
	big.WriteString(`{"k":"first"`)
	for i := range 80 {
		fmt.Fprintf(&big, `,"f%02d":%d`, i, i)
	}
	big.WriteString(`,"k":"last"}`)
	inputs := []string{
		`{"k":"first","k":"last"}`,
		`{"o":{"k":"first","z":1,"k":"last"}}`,
		`{"a":[{"k":"first","k":"last"}]}`,
		`{"k":"first","b":1,"k":"middle","c":2,"k":"last"}`,
		big.String(),
	}
	for _, in := range inputs {
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		for _, path := range paths {
			l := newLayer(t, Config{})
			if err := applyVia(t, path, l, in); err != nil {
				t.Fatalf("%s %.60s: %v", path, in, err)
			}
			if got := roundTrip(t, l.State()); !jsonDeepEqual(got, want) {
				t.Errorf("%s %.60s: state = %s, want the last duplicate (%s)", path, in, mustJSON(t, got), mustJSON(t, want))
			}
		}
		st := storage.NewMemory()
		putState(t, st, DefaultID, "thread-1", in)
		l := initLayer(t, Config{}, testEnv(st))
		if got := roundTrip(t, l.State()); !jsonDeepEqual(got, want) {
			t.Errorf("stored %.60s: loaded state = %s, want the last duplicate", in, mustJSON(t, got))
		}
	}
}

// TestTrust17_JSONSchemaGivesEveryVerdict: numbers that round to an
// allowed float64 but are not allowed (jsonschema compares them exactly)
// are rejected on every path: Update, the tool, the legacy call, a stored
// state at Init, Restore and the template.
func TestTrust17_JSONSchemaGivesEveryVerdict(t *testing.T) {
	cases := []struct{ schema, value string }{
		{`{"type":"number","maximum":10}`, `10.0000000000000000001`},
		{`{"type":"integer"}`, `1.0000000000000000001`},
		{`{"enum":[10]}`, `10.0000000000000000001`},
	}
	for _, c := range cases {
		schema := `{"type":"object","properties":{"x":` + c.schema + `}}`
		doc := `{"x":` + c.value + `}`
		for _, path := range paths {
			l := newLayer(t, Config{Schema: schema})
			if err := applyVia(t, path, l, doc); !errors.Is(err, ErrSchema) {
				t.Errorf("%s: %s with x=%s: err = %v, want ErrSchema", path, c.schema, c.value, err)
			}
			assertState(t, l, `{}`)
		}
		st := storage.NewMemory()
		putState(t, st, DefaultID, "thread-1", doc)
		l := initLayer(t, Config{Schema: schema}, testEnv(st))
		assertState(t, l, `{}`) // quarantined, not loaded
		if err := l.Restore(t.Context(), json.RawMessage(doc)); !errors.Is(err, ErrSchema) {
			t.Errorf("Restore: %s with x=%s: err = %v, want ErrSchema", c.schema, c.value, err)
		}
		if _, err := New(Config{Schema: schema, Template: doc}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("template: %s with x=%s: err = %v, want ErrInvalidConfig", c.schema, c.value, err)
		}
	}
}
