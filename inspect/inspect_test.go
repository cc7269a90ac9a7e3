package inspect_test

import (
	"testing"

	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/storage"
)

// FuzzOperate36_ParseLayerKey: ParseLayerKey inverts storage.LayerKey,
// and whatever it accepts is a key LayerKey builds.
func FuzzOperate36_ParseLayerKey(f *testing.F) {
	f.Add("layers/working-memory/alice/state", "a", "b", "c")
	f.Add("layers/x/%/quarantine%2F1", "", "..", "q/1")
	f.Add("threads/a/checkpoint", "é", "a/b", "%")
	f.Add("layers/wm/thread:a%2Fb:c/state", "wm", "thread:a%2Fb:c", "state")
	f.Add("layers/wm/resource:/state", "wm", "resource:7", "state")
	f.Fuzz(func(t *testing.T, key, id, scope, name string) {
		if k, ok := inspect.ParseLayerKey(key); ok {
			if back := k.Key(); back != key {
				t.Fatalf("ParseLayerKey(%q) = %+v, which builds %q", key, k, back)
			}
		}
		_, typed := storage.ParseScopeKey(scope)
		k, ok := inspect.ParseLayerKey(storage.LayerKey(id, scope, name))
		if !ok || k != (inspect.LayerKey{LayerID: id, ScopeKey: scope, Name: name, Legacy: !typed}) {
			t.Fatalf("round trip of %q %q %q: %+v, %v", id, scope, name, k, ok)
		}
	})
}
