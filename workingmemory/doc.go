// Package workingmemory is the working memory layer ([Layer], ID
// "working_memory"): a scratchpad where the model keeps its goal, plan,
// findings and blockers across steps, turns, restarts and child agents. The scoped key-value memory for code and
// tools is package workingmemory/kv.
//
// Give the layer to an agent, or use it from code:
//
//	pad, err := workingmemory.New(workingmemory.Config{Template: "Goal: migrate the blog"})
//	err = pad.Update(ctx, json.RawMessage(`{"step":"export posts"}`))
//	items, err := pad.Recall(ctx, layer.Query{}) // <working_memory>…</working_memory>
//
// # The working memory
//
// [New] builds the layer from a [Config]; its zero value is a thread-scoped
// free-text scratchpad (ID "working_memory", slot 100, budget {200, 1500}).
// Its state is stored under the ID "working-memory" it had before the
// naming scheme ([DefaultStorageID], layer.Spec.StorageID), so state
// stored by earlier builds loads.
// With a JSON Schema the state is an object and every change must keep it
// valid. The layer implements layer.Initializer, Storer, Spawner,
// Returner, Provider, Snapshotter and Clearer, and reports Metrics.
//
// The model changes the state through the provided "update" function (the
// tool "working_memory_update") or, for older prompts, a
// "updateWorkingMemory" function call that the store hook finds in the
// model's response. Code uses [Layer.Update], the same path. An update is a
// JSON object merged into the state:
//
//   - objects merge recursively; keys the update leaves out are kept;
//   - strings, numbers, booleans and arrays replace the old value whole
//     (false, 0, "" and [] are values and do override), except that a
//     list starting with a fold's summary item gets the folded items
//     back (see "Over budget");
//   - null means "no change" by default, so that a model which a strict tool
//     schema forces to send every field cannot wipe data by sending null
//     (Config.NullReplaces stores the null instead);
//   - deletion is explicit: "$delete" ([DeleteKey]) lists paths, in any
//     object of the update and relative to it, as JSON Pointers with or
//     without the leading '/' ("contact/phone", "/openTasks/0") or dotted
//     ("contact.phone"; a key holding '.' needs the pointer form). They are
//     applied to the current state before the rest of that object is
//     merged, so {"$delete":["prefs"],"prefs":{...}} replaces prefs whole.
//     Indexes of one array refer to the array before any deletion; missing
//     paths are ignored, so a retried update is harmless;
//   - "__proto__", "constructor" and "prototype" are dropped at every depth
//     (they pollute prototypes when the state reaches JavaScript tooling);
//   - a text state merged with an object keeps the text under "_previous"
//     ([PreviousKey]); the old text wins over a "_previous" in the update.
//
// The merged state must pass the schema, be at most Config.MaxBytes of
// compact JSON (64 KiB) and nest at most Config.MaxDepth levels (32);
// otherwise the update is rejected and the state is unchanged, in memory
// and in storage. A schema failure is a [*SchemaError] listing every
// violation as a JSON Pointer and a reason, which the tool path returns to
// the model so that it can fix all of them at once. Arguments that are
// not JSON, or not an object, get [ErrInvalidUpdate].
//
// "updateWorkingMemory" is also an alias of the update function
// (layer.Function.Aliases), so a loop that runs tool calls through
// layer.Stack.CallTool, as agentloop does, runs the legacy call as the
// tool: the model gets its result or its error, and Store, seeing the
// call's result in the turn, does not apply it again. For a loop that
// does not run it, the store hook below applies it.
//
// On that legacy path there is no tool result to carry an error back to
// the model, so Store returns every rejection of an update — the schema,
// [ErrTooLarge] and [ErrTooDeep] alike, whether found while decoding the
// arguments or after the merge — wrapped with the call's ID, and the
// stack reports it as a store diagnostic (logged and sent to its
// layer.StackConfig.OnHook with the layer ID and hook). Arguments that
// are not a JSON object at all are not an update: the call is skipped
// with a warning (carrying its [ErrInvalidUpdate]) through the run's
// logger, and the next updateWorkingMemory call of the response, if any,
// is considered.
// ReadOnly offers no update tool and ignores the legacy call.
//
// # Merge implementation
//
// The merge is hand-written rather than dario.cat/mergo. mergo aliases the
// source's nested maps into the destination, panics on mixed map types,
// has no notion of forbidden keys or deletion, and works through
// reflection. Here a state is immutable: an update builds a new state that
// shares the unchanged subtrees of the old one, so a rejected update
// cannot have touched anything and readers never wait. Internally objects
// are sorted member lists (internal/jsonx), so decoding, merging, validating and encoding
// are linear passes with no map hashing or key sorting; [Layer.State] and
// the provided snapshot hand out map[string]any copies (numbers as
// json.Number).
//
// # Schema validation
//
// Schemas are compiled once by github.com/santhosh-tekuri/jsonschema/v6
// (default draft 2020-12; "$schema" selects another), which gives every
// verdict, on every path: Layer.Update, the update tool, the legacy call,
// a stored state at Init, Restore and the template. Numbers are compared
// exactly as written (10.0000000000000000001 exceeds a maximum of 10 and
// is not an integer), which float64 arithmetic cannot do; an earlier
// hand-written fast validator did it in float64 and was removed for that.
//
// A schema comes from configuration, so New compiles it defensively: no
// "$ref" outside the document is loaded (no file, no network) unless
// Config.SchemaLoader resolves it; a document is at most MaxSchemaBytes
// (256 KiB) and each regular expression at most MaxSchemaPattern (4 KiB);
// and references that loop back to a schema of the same value
// ({"$ref":"#"}, which would fail every value) are rejected. Recursion
// through properties or items is accepted.
//
// # Storage and concurrency
//
// The state is stored as its compact JSON (a string or an object) under
// storage.LayerKey(id, scopeKey, "state"), where the scope key comes from
// layer.Env.ScopeKey; execution scope never persists. An object state is
// stored with one more member, "$writes": a string holding a count of
// its writes and the IDs of the last 16 ([StoredState] returns a stored
// state without it, for tools that read the store directly). "$writes" is reserved: like "$delete" it
// is dropped from updates and from states read back, at every depth, and
// never shown to the model or the schema. It lets a writer whose write
// the store reported as failed (SQLite and Redis may apply a write and
// still return a deadline error) read the state back and tell whether
// its write landed, under any number of later writes up to 16, so that
// Update reports the truth; and it makes [Layer.UpdateOnce] (the legacy
// path, keyed by the call's thread, ID and arguments) apply a retried
// update only once. Every write is a
// compare-and-swap on the version last read; on a conflict the layer
// re-reads the stored state, merges the update into it again and
// re-validates, so two runs (or processes) updating one resource lose
// nothing. When the schema changes, Config.Migrate converts a stored
// state that fails the new schema (old state in, new state out, at Init):
// its result is checked like a stored state and stored in place with
// compare-and-swap, reported as WarningMigrated and logged ("migrated at
// load"). Init moves a stored state that cannot be used (not JSON, not
// text or an object, failing the schema with no migration or a migration
// that fails, over the limits) to LayerKey(id, scopeKey,
// "quarantine/<unix-nanos>"), reports WarningQuarantined with that key, logs a
// warning ("quarantined at load", with the key and the cause) through
// env.Logger and starts from the template: nothing is silently lost.
//
// A state keeps its canonical compact JSON, which is all Recall, Snapshot
// and Metrics need; the decoded tree is built by the first update after
// Init and then kept, so an idle scratchpad costs little more than its
// JSON (about 960 bytes of heap for the peer workload's final state) and
// a busy one updates without decoding the whole state again. An update
// validates the whole merged state and re-encodes only the top-level
// members it changed (the others are shared with the previous state,
// already encoded).
//
// Every method of [Layer] is safe for concurrent use. Updates of one Layer
// are serialised by a mutex; Recall, State and Snapshot read an atomic
// pointer to the current immutable state and never block. Recall renders
// the state once per version (text as is, objects as 2-space indented
// JSON, in a block built by fence.Wrap, which its content cannot close)
// and then returns the cached block.
//
// # Over budget
//
// A block over its budget is shown compact, then folded, then cut
// ([Layer.Recall]). The fold is a view: it changes what one Recall
// shows, never the state, in memory or in storage, so nothing is lost
// and the model (or code) decides what to remove, with the update tool.
//
// The fold's tail is the oldest items of the state's lists: a list grows
// at its end (the model sends the whole list with its new item last),
// so its first items are the oldest. Objects have no order of age, and
// text has no items: a long string member, or a text state, is cut.
// Fold steps are taken one item at a time, each from the list whose
// foldable items take the most bytes (the first such list in key order on
// a tie); a list always shows its newest item whole. The fewest steps
// whose block fits are taken, so the same state and budget always fold
// the same way. Lists are found through object members at any depth; a
// list inside a list item folds with its item.
//
// A folded list starts with one summary item:
//
//	{"_folded": 12,
//	 "items": [{"id": "task-00", "status": "done", "title": "Export posts"}, ...],
//	 "note": "the 12 oldest items of this list, shown by their key fields only ..."}
//
// It keeps, of each folded object, its scalar key fields: every field
// named as an ID ("id", "pageId", "page_id", "page-id", "pageID") and
// goal, key, kind, name, owner, priority, ref, state, status, title, type
// and url (any case), strings cut to 80 characters; of a folded string,
// its first 80 characters; of a number or boolean, itself. An object
// without key fields, or a nested list, is counted in the note only.
// Forbidden keys never reach a state, so they never reach a summary.
// With a schema, the view with its summary items is validated: when the
// schema would refuse a summary item in its list, the folded lists show
// their remaining items only, and each summary follows the state on a
// line of its own, "[folded "/tasks": {...}]", so the object shown never
// holds an item the schema refuses.
//
// A model sends a list whole, so it may send back a list as the fold
// showed it. An update whose list starts with an object holding
// "_folded" ([FoldedKey]) as a number n gets, in its place, the first n
// items of the list it replaces, before the schema sees it: the folded
// items are kept. The summary's note says so, and in the schema's
// placement asks for {"_folded": n} first in the list. A list sent
// without it replaces the old one whole, folded items included, as any
// list does.
//
// # Fence tags
//
// The block's tag is the layer ID with '-' replaced by '_' ([fence.Tag]):
// <working_memory> for the default ID "working_memory", <plan> for a
// scratchpad with ID "plan". The prompt compiler gives a fence tag to the
// first layer (in slot order) that fences with it and defangs it in every
// other layer's text, so that one layer cannot pass its text off as
// another's block; a tag shared by two scratchpads would leave the second
// one's state unfenced. Layer IDs are unique in a stack and hold no '_',
// so tags derived from them are unique too. The key-value memory's layer
// (kv.Layer) names its block the same way (<kv_memory> for its default ID).
//
// # Spawning
//
// OnSpawn gives a child agent a scratchpad of its own. Resource (and
// global) scope: the child starts from the parent's current state, a deep
// clone in effect since states are immutable. Thread (and execution)
// scope: the child starts fresh from the template (empty without one).
// The child's scratchpad is never persisted, so its writes cannot reach
// the parent; Config.OnReturn decides whether they come back when the
// child finishes (discard by default, merge, or replace). The child's
// update tool is bound to the child's layer. Merge is three-way: the
// child's changes since it was spawned are applied to the parent's
// latest stored state, so concurrent writes of the parent or of sibling
// threads survive; a key both sides changed takes the child's value and
// is reported to Config.OnWarning as a [WarningReturnConflict] (and logged).
package workingmemory
