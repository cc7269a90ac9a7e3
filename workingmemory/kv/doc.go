// Package kv is the key-value memory (layer ID "kv_memory"): fast, typed, in-process memory
// for code and tools (not the model's scratchpad, which is package
// workingmemory), with child scopes that fall back to their parents, and
// a layer ([Layer]) that gives each run of an agent the memory of its
// scope.
//
//	mem := kv.New(kv.Config{})
//	err := kv.Set(mem, "current", task{ID: 7})
//	t, ok, err := kv.Get[task](mem, "current")
//
// [New] returns the root scope of a tree; [Scope.Child] derives child
// scopes. Every Child call makes a new, isolated scope with its own ID
// ([Scope.ID]), even for a name already in use, so two parallel tasks
// named alike never share entries; [Scope.Scope] finds a live scope of
// the tree by its ID, [Scope.Children] lists a scope's children. Reads ([Get], [Scope.Contains], [Scope.Entries], ...) look in the
// scope, then its parent, up to the root; the Local variants do not fall
// back. Writes ([Set], [SetWith], [Scope.Remove], [Scope.Clear]) touch only the
// scope. [GetOrSet] runs its factory at most once per key and scope, even
// under concurrency. Values are stored as JSON (so they must serialise,
// and their size is bounded); types that hold no references are also
// kept as Go values so Get returns a copy without decoding. Entries carry
// metadata ([Meta]: importance, 0.5 unless set, tags, type, expiry) and
// access counts.
// Limits (10,000 entries per tree, 1 MiB per entry, 100 scopes by default)
// fail with [ErrLimit] naming the limit. Changes are reported to
// Config.OnChange and logged at debug level; a [Change] carries the
// scope's ID, its parent's and its agent's, whether a set replaced an
// entry and the value's Go type, and how many entries a clear removed. [Scope.Snapshot] and
// [Scope.Restore] save and load a whole subtree. One read-write lock guards a
// tree.
//
// [Layer] puts key-value memory into a layer stack, one memory per scope
// key like every layer's state: [NewLayer] returns a template, and each
// run's Init gives the run the memory of its thread (the default scope), its
// resource, the global one, or a fresh one (execution scope), loaded from
// the store. Changes are persisted with compare-and-swap at the end of
// every step and when the run ends (see [Layer] for when a write is
// acknowledged); concurrent runs of one scope lose no update. Tools reach
// the current run's memory with [From] on the run's stack (agentloop hands
// it to tools made with agentloop.NewContextTool); code outside a run uses
// [Layer.Open]. A spawned child agent gets a child scope of its parent's
// run memory, disposed of when the child returns.
//
// # Personal data
//
// The key-value memory follows the rule every memlayer layer does:
// personal data is masked before it is stored. What code sets is kept as
// it was in the memory of the run that set it (the run can still use it),
// and each value is passed through [Config].Redact as it is written out:
// persisted by a Layer, in a checkpoint's snapshot, in [Scope.Snapshot].
// A Layer run by agentloop gets the agent's redactor (layer.Env.Redact,
// from redact.Policy, which masks e-mail addresses, phone
// numbers, card numbers, IBANs and secrets); redact.Policy.Layers turns
// it off for one layer, as it does for the scratchpad, and Config.Redact
// replaces it. Keys, metadata and timestamps are stored as they are: do
// not key entries by an e-mail address. Unmasked values already stored are
// masked the next time their scope is written.
package kv
