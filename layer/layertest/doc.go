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
// what [Run] uses. A layer that learns nothing from [DefaultTurns] must
// say how to give it state (see "Populated state"), or the suite fails.
//
// # What is checked
//
// Each rule of the [layer] contract is a named subtest, so a failure says
// which rule broke. Optional interfaces are checked only when the layer
// implements them (found with [layer.As]):
//
//   - Spec: valid ([layer.Spec.Validate]) and the same on every call.
//   - Populate: the populate step changes the layer's state (see
//     "Populated state").
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
// # Populated state
//
// The Init, OnSpawn, SnapshotRestore, RestoreGarbage and Clear checks put
// state into a bound layer first (the populate step), then compare states.
// On an empty state they would pass without testing anything, so the
// Populate subtest fails a layer that the populate step leaves as it was:
// its snapshot, what it recalls (for the first turn's query and for a
// fixed one) and its Metrics "entries" all unchanged. A layer with no state
// to check (not a Storer, Snapshotter, Clearer or Spawner) skips it.
//
// By default the populate step calls Store with each of [DefaultTurns]: a
// user message, a tool call with a JSON result naming a page, and an
// answer. A layer that learns from other turns (a call of its own
// convention, a result of another shape) gives them in [Options.Turns]:
//
//	func TestConformance(t *testing.T) {
//		turns := layertest.DefaultTurns()
//		// The model asks the layer to keep a note, in the layer's own
//		// call convention.
//		turns[0].ToolCalls = append(turns[0].ToolCalls, layer.ToolCall{
//			ID: "call-note", Name: "keepNote", Arguments: `{"note":"launch on Friday"}`,
//		})
//		layertest.Options{Turns: turns}.Run(t, newMyLayer)
//	}
//
// A layer filled by code or by its tools rather than by Store gives the
// code in [Options.Populate]:
//
//	layertest.Options{Populate: func(ctx context.Context, l layer.Layer) error {
//		m, _ := layer.As[*mylayer.Layer](l)
//		return m.Put(ctx, "launch", "friday")
//	}}.Run(t, newMyLayer)
//
// # Requirements on the constructor
//
// newLayer must return a new template each time, sharing no state with
// earlier ones (a layer whose templates share a cache must key it by the
// Env it is initialised with). The suite gives each Init its own store.
package layertest
