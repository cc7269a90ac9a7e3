package workingmemory

import (
	"encoding/json"
	"reflect"
	"testing"
)

// roundTrip turns a state into what encoding/json decodes (float64
// numbers), independent of this package's codec.
func roundTrip(tb testing.TB, v any) any {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		tb.Fatal(err)
	}
	return out
}

func jsonDeepEqual(a, b any) bool { return reflect.DeepEqual(a, b) }

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
