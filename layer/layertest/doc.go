// Package layertest is the conformance suite every [layer.Layer]
// implementation can run, in the manner of testing/slogtest and
// storage/storagetest.
//
// A layer's test calls [Run] with a constructor that returns a fresh
// layer as it would be registered in a stack (the template, not yet
// initialised):
//
//	func TestConformance(t *testing.T) {
//		layertest.Run(t, func(t *testing.T) layer.Layer {
//			l, err := mylayer.New(mylayer.Config{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return l
//		})
//	}
//
// [Options] tunes the suite for layers that need it (how to put state into
// the layer, or that OnSpawn shares state on purpose); its zero value is
// what [Run] uses.
//
// # What is checked
//
// Each rule of the [layer] contract is a named subtest, so a failure says
// which rule broke. Optional interfaces are checked only when the layer
// implements them (found with [layer.As]):
//
//   - Spec: valid ([layer.Spec.Validate]) and the same on every call.
//   - Init: with a fresh [layer.Env] on [storage.NewMemoryStore] it returns a
//     non-nil layer with the template's ID and leaves the template's Spec
//     unchanged; two Inits on separate envs give independent layers (a
//     change to one does not show in the other).
//   - Recall: a zero Query does not panic; a cancelled context makes
//     Recall return promptly (with an error or without) instead of
//     hanging.
//   - Store: an empty Turn is harmless (no error, the layer still
//     recalls); a cancelled context returns promptly.
//   - OnSpawn: does not modify the parent, before or after the child is
//     changed (unless [Options.SharedSpawn]); the child keeps the ID.
//   - Snapshot and Restore: a snapshot restored into a fresh layer
//     snapshots the same (compared as JSON values); data that is not JSON
//     is an error and leaves the state unchanged. A snapshot restored into
//     another user's layer on the same store touches nothing stored in
//     the first user's thread, resource or execution scope.
//   - Clear: afterwards the layer recalls what a fresh layer recalls and
//     reports as many Metrics "entries" (bookkeeping such as a logical clock
//     may survive).
//   - Close: a second Close returns nil.
//   - Provides: function names are unique identifiers ([a-zA-Z] then
//     [a-zA-Z0-9_-]) whose tool names need no sanitising beyond the '/'
//     and fit in 64 bytes; each function has a Call; parameter schemas are
//     JSON objects; data entries have unique names and readable values.
//   - Concurrency: Recall, Store, Snapshot, Metrics, tool calls and data
//     reads through a [layer.Stack] from several goroutines, with no panic
//     (run the suite with -race to catch data races).
//
// A layer's state is compared through Snapshot when the layer is a
// [layer.Snapshotter], else through what Recall returns for a fixed query.
//
// # Requirements on the constructor
//
// newLayer must return a new template each time, sharing no state with
// earlier ones (a layer whose templates share a cache must key it by the
// Env it is initialised with). The suite gives each Init its own store.
package layertest
