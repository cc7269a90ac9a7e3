package storage_test

import (
	"strings"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

// FuzzTrust301_ScopeKeys: a typed scope key takes apart into the parts it
// was built from; keys of different parts differ; a typed key's records
// never share a prefix with an untyped key's, whatever the IDs.
func FuzzTrust301_ScopeKeys(f *testing.F) {
	f.Add("7", "7", "")
	f.Add("c1", "c1/child-care", "x")
	f.Add("resource:7", "thread:7", "a:b")
	f.Add("", "%", "..")
	kinds := []storage.ScopeKind{storage.KindThread, storage.KindResource, storage.KindAnonymous, storage.KindExecution, storage.KindGlobal}
	f.Fuzz(func(t *testing.T, a, b, child string) {
		keys := map[string]storage.ScopeKeyParts{}
		for _, k := range kinds {
			for _, id := range []string{a, b} {
				for _, c := range []string{"", child} {
					p := storage.ScopeKeyParts{Kind: k, ID: id, Child: c}
					switch {
					case k == storage.KindGlobal:
						p.ID, p.Child = "", ""
					case k != storage.KindThread && k != storage.KindAnonymous:
						p.Child = ""
					}
					key := storage.ScopeKeyOf(p)
					got, ok := storage.ParseScopeKey(key)
					if !ok || got != p {
						t.Fatalf("ParseScopeKey(ScopeKeyOf(%+v) = %q) = %+v, %v", p, key, got, ok)
					}
					if prev, dup := keys[key]; dup && prev != p {
						t.Fatalf("%+v and %+v share the key %q", prev, p, key)
					}
					keys[key] = p
					for _, raw := range []string{a, b, child} {
						legacy := storage.LegacyLayerPrefix("wm", raw)
						typed := storage.LayerPrefix("wm", key)
						if strings.HasPrefix(typed, legacy) || strings.HasPrefix(legacy, typed) {
							t.Fatalf("typed prefix %q and untyped %q overlap", typed, legacy)
						}
					}
				}
			}
		}
	})
}
