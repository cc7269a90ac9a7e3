package workingmemory

import (
	"time"

	"github.com/memlayer/memlayer/internal/safeschema"
	"github.com/memlayer/memlayer/layer"
)

// Defaults of the scratchpad layer.
const (
	// DefaultID is the working memory's layer ID: the prefix of its
	// tool name ("working_memory_update") and its block's tag
	// (<working_memory>).
	DefaultID = "working_memory"
	// DefaultStorageID is the Spec.StorageID of the layer whose ID is
	// DefaultID: its ID before the naming scheme, under which its state
	// stays stored (see layer.Spec.StorageID).
	DefaultStorageID = "working-memory"
	// DefaultMaxBytes bounds the compact JSON encoding of the state.
	DefaultMaxBytes = 64 << 10
	// DefaultMaxDepth bounds the nesting of objects and arrays.
	DefaultMaxDepth = 32
	// DefaultMaxRetries bounds compare-and-swap attempts of one update.
	DefaultMaxRetries = 16
	// MaxSchemaBytes bounds a schema document (Schema, SchemaFile, and
	// each document SchemaLoader returns), as JSON text.
	MaxSchemaBytes = safeschema.MaxBytes
	// MaxSchemaPattern bounds each regular expression of a schema
	// ("pattern", "patternProperties"): compiling a 1 MB pattern takes
	// seconds and hundreds of megabytes.
	MaxSchemaPattern = safeschema.MaxPattern
	// LegacyFunction is the function call the store hook accepts from
	// models prompted with the older updateWorkingMemory convention.
	LegacyFunction = "updateWorkingMemory"
	// Tag is the block name Recall fences the state of a scratchpad with
	// DefaultID in. A scratchpad with another ID fences with its own tag,
	// derived from the ID by [fence.Tag] ("plan" fences with <plan>).
	Tag = "working_memory"
)

// DefaultBudget is the scratchpad's token budget.
var DefaultBudget = layer.Budget{Min: 200, Max: 1500}

// ReturnPolicy says what happens to a child agent's scratchpad when the
// child finishes (see [Layer.OnReturn]).
type ReturnPolicy string

// The return policies.
const (
	// ReturnDiscard drops the child's changes. It is the zero value: a
	// child works on a copy unless the configuration says otherwise.
	ReturnDiscard ReturnPolicy = ""
	// ReturnMerge applies the child's changes (against the state it was
	// spawned with: keys set, changed or deleted, at any depth) to the
	// parent's latest state, as one update: validated against the schema
	// and persisted with compare-and-swap. What the parent, or another
	// thread of the same resource, changed meanwhile is kept; a key both
	// changed takes the child's value and is reported
	// ([WarningReturnConflict]).
	ReturnMerge ReturnPolicy = "merge"
	// ReturnReplace makes the child's state the parent's (validated and
	// persisted the same way).
	ReturnReplace ReturnPolicy = "replace"
)

// Config configures the scratchpad layer. The zero Config is valid: a
// thread-scoped free-text scratchpad with the defaults above.
type Config struct {
	// Spec is what every layer declares (see layer.Spec):
	//   - ID: ID is the layer ID (lowercase snake or kebab case). Empty means DefaultID. It names the update tool ("<id>_update"), the storage keys (unless StorageID is set: DefaultStorageID for DefaultID) and the block Recall fences the state in: the ID with '-' replaced by '_' ([fence.Tag]), so two working memories in one stack (IDs "working_memory" and "plan") fence with <working_memory> and <plan> and neither loses its fence to the other.
	//   - StorageID: StorageID names the layer's stored data (see layer.Spec.StorageID). Empty means DefaultStorageID when ID is DefaultID, the ID otherwise.
	//   - Slot: Slot orders the layer in the prompt. Zero means layer.SlotWorkingMemory (100).
	//   - Scope: Scope is whose scratchpad it is: layer.ScopeThread (the zero value) or layer.ScopeResource (shared by every thread of a resource); layer.ScopeGlobal and layer.ScopeExecution (never persisted) also work.
	//   - Budget: Budget is the token budget. Zero means DefaultBudget.
	layer.Spec

	// Schema is the JSON Schema of the state: a Go value (a map, or
	// anything encoding/json marshals to a schema) or JSON text (string,
	// []byte, json.RawMessage). With a schema the state is an object and
	// every merged state must pass it. Nil means no schema: the state is
	// free text until the first update, an object after it.
	//
	// A Go struct, or a pointer to one, is the state's type instead
	// (Schema: Plan{}): the schema is inferred from the type by
	// github.com/google/jsonschema-go, as agentloop.NewTool infers a
	// tool's parameters (fields under their JSON names, with their types;
	// those without omitempty or omitzero required; other properties
	// refused), and the value is the initial state when Template is nil.
	// A type the inference refuses (a func or chan field) makes New fail.
	// A struct from a package named jsonschema, or one that encodes to an
	// object of JSON Schema keywords only, is taken as a schema document.
	Schema any
	// SchemaFile is a path to read the schema from (in New). Set Schema
	// or SchemaFile, not both.
	SchemaFile string
	// SchemaLoader resolves a "$ref" (or "$schema") to a document outside
	// the schema: it gets the absolute URL and returns the referenced
	// schema as JSON text (at most MaxSchemaBytes). Nil means no external
	// reference is loaded: a schema naming a file or any URL other than
	// the JSON Schema meta-schemas is rejected by New, so that a schema
	// cannot make the layer read local files or reach the network.
	SchemaLoader func(url string) ([]byte, error)
	// Template is the initial content: free text (a string) without a
	// schema, or an object with one (a Go value, or JSON text as string
	// or []byte). It must pass the schema. Nil means empty ("" or {}).
	Template any
	// ReadOnly shows the state to the model but offers no update tool
	// and ignores legacy updateWorkingMemory calls. Code can still
	// Restore and Clear.
	ReadOnly bool
	// MaxBytes bounds the state's compact JSON size. Zero means
	// DefaultMaxBytes.
	MaxBytes int
	// MaxDepth bounds the nesting of updates and state. Zero means
	// DefaultMaxDepth.
	MaxDepth int
	// MaxRetries bounds compare-and-swap attempts per update. Zero means
	// DefaultMaxRetries.
	MaxRetries int
	// OnReturn is what a child agent's changes do to the parent when the
	// child finishes. The zero value discards them.
	OnReturn ReturnPolicy
	// NullReplaces stores a null sent in an update as the key's value.
	// By default a null means "leave this key as it is", so a model that
	// a strict tool schema forces to send every field cannot wipe data by
	// sending null; deletion is done with DeleteKey.
	NullReplaces bool
	// Migrate, when set, converts a stored state that fails the schema
	// (one written under an older schema) into one that passes it. Init
	// calls it once per such state with the stored state in
	// encoding/json's form (map[string]any, or a string for text) and
	// the write log left out; its result (any Go value encoding/json
	// marshals, or JSON text as json.RawMessage or []byte) is checked
	// like a stored state and persisted with compare-and-swap, and an
	// [WarningMigrated] is reported. An error, or a result that fails the
	// schema, quarantines the stored state as when Migrate is nil
	// ([WarningQuarantined]). It must not keep or modify old. A state that
	// passes the schema is loaded as it is, without calling Migrate.
	Migrate func(old any) (any, error)
	// Now returns the time used in quarantine keys. Nil means time.Now.
	Now func() time.Time
	// OnWarning, when set, receives the scratchpad's [Warning]s. It is
	// called synchronously, after the change it reports was persisted,
	// and must be safe for concurrent use.
	OnWarning func(Warning)
}

// WarningKind says what a [Warning] reports.
type WarningKind string

// The warning kinds.
const (
	// WarningReturnConflict: under ReturnMerge, a returning child changed
	// keys that had also changed in the parent (by the parent, or by
	// another thread of the same resource) since the child was spawned.
	// The child's values were kept; Paths lists those keys.
	WarningReturnConflict WarningKind = "return-conflict"
	// WarningMigrated: Init found a stored state that failed the schema,
	// Config.Migrate converted it, and the result was stored in its
	// place. Err says why the stored state failed.
	WarningMigrated WarningKind = "migrated"
	// WarningQuarantined: Init found a stored state it could not use (not
	// JSON, failing the schema with no Config.Migrate, or a migration
	// that failed or whose result fails the schema). It was moved to Key
	// and the run started from the template. Err says why.
	WarningQuarantined WarningKind = "quarantined"
)

// Warning is something the scratchpad reports to Config.OnWarning (and logs
// at warning level through the run's logger).
type Warning struct {
	Kind WarningKind
	// Layer is the layer ID; Scope the scope key of the state.
	Layer, Scope string
	// Paths are JSON Pointers into the state.
	Paths []string
	// Key is the storage key the warning is about: the quarantine key of
	// WarningQuarantined, the state key of WarningMigrated.
	Key string
	// Err is the cause of WarningMigrated and WarningQuarantined.
	Err error
}
