package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// The command names layers by their IDs, the names of the docs, the
// prompt's block tags and the tools. A built-in layer stores its data
// under another name (layer.Spec.StorageID): the command maps the one to
// the other, takes the stored name as a deprecated alias, and prints the
// ID wherever it prints a layer.

// builtinLayer is a layer memlayer ships: its ID and the name its data is
// stored under (layer.Spec.StorageName).
type builtinLayer struct{ id, stored string }

// builtinLayers are the layers memlayer ships, made with their package's
// defaults: the ID is the package's DefaultID (kv's DefaultLayerID,
// history's SummaryLayerID), the stored name its DefaultStorageID. The
// command links none of those packages, which bring the model client
// (see deps_test.go); names_test.go checks the table against them.
var builtinLayers = []builtinLayer{
	{"working_memory", "working-memory"},
	{"kv_memory", "kv-memory"},
	{"entity_memory", "entities"},
	{"episodic_memory", "episodic-memory"},
	{"semantic_memory", "semantic"},
	{"history_summary", "history_summary"},
}

// builtinIDs are the IDs of builtinLayers, for messages.
func builtinIDs() string {
	ids := make([]string, len(builtinLayers))
	for i, b := range builtinLayers {
		ids[i] = b.id
	}
	return strings.Join(ids, ", ")
}

// layerRef is a layer named on the command line: its ID and the name its
// data is stored under.
type layerRef struct {
	id, stored string
	// builtin is true for a layer memlayer ships.
	builtin bool
}

// String returns the layer as messages name it: its ID, and the stored
// name when it differs.
func (r layerRef) String() string {
	if r.stored == r.id {
		return r.id
	}
	return fmt.Sprintf("%s (stored as %s)", r.id, r.stored)
}

// refOf returns the layer whose ID or stored name is name, and whether
// name is a built-in layer's stored name that differs from its ID, a
// deprecated alias. Any other name is a layer of the application's own,
// stored under its ID.
func refOf(name string) (r layerRef, alias bool) {
	for _, b := range builtinLayers {
		if name == b.id || name == b.stored {
			return layerRef{id: b.id, stored: b.stored, builtin: true}, name != b.id
		}
	}
	return layerRef{id: name, stored: name}, false
}

// layerID returns the ID of the layer whose data is stored under stored:
// a built-in layer's ID, else stored itself.
func layerID(stored string) string {
	r, _ := refOf(stored)
	return r.id
}

// resolveLayer returns the layer named name on the command line. A
// built-in layer's stored name is accepted, with a note on stderr.
func resolveLayer(name string, stderr io.Writer) layerRef {
	r, alias := refOf(name)
	if alias {
		fmt.Fprintf(stderr, "memlayer: note: %q is the deprecated name of layer %s, whose data stays stored under it: use %s\n", name, r.id, r.id)
	}
	return r
}

// checkKnown returns nil when r is a built-in layer or the store holds a
// record of it in some scope, and else a usage error that lists the
// built-in layers: so a misspelt layer is not taken for an empty one.
func checkKnown(ctx context.Context, st storage.Store, r layerRef) error {
	if r.builtin {
		return nil
	}
	// Every key of a layer starts so (see storage.LayerPrefix).
	keys, err := st.List(ctx, "layers/"+storage.Escape(r.stored)+"/")
	if err != nil {
		return fmt.Errorf("layer %s: %w", storage.Quote(r.stored), err)
	}
	if len(keys) > 0 {
		return nil
	}
	return fmt.Errorf("%w: unknown layer %q%s: the built-in layers are %s, and the store holds no record of a layer of that name",
		errUsage, r.id, unknownHint(r.id), builtinIDs())
}

// unknownHint returns what the error for an unknown layer name adds: the
// built-in layer it may mean, or why it is no layer ID.
func unknownHint(name string) string {
	if alt, _ := refOf(strings.ReplaceAll(name, "-", "_")); alt.builtin {
		return fmt.Sprintf(" (did you mean %s?)", alt.id)
	}
	if err := (layer.Spec{ID: name}).Validate(); err != nil {
		return fmt.Sprintf(" (%v)", err)
	}
	return ""
}

// byID returns m, keyed by stored layer names, keyed by layer IDs: a
// built-in layer's entry under its ID, unless m has an entry under that ID
// too. m is not modified.
func byID[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return m
	}
	out := maps.Clone(m)
	for stored, v := range m {
		if id := layerID(stored); id != stored {
			if _, taken := m[id]; !taken {
				delete(out, stored)
				out[id] = v
			}
		}
	}
	return out
}

// countKinds are the kinds of inspect.Erased.Counts that end with a
// layer's stored name.
var countKinds = []string{"layer.", "quarantine.", "index."}

// erasedByID returns e with the kinds of its counts naming layers by ID
// (see inspect.Erased.Counts); its keys stay the stored keys.
func erasedByID(e *inspect.Erased) *inspect.Erased {
	out := *e
	out.Counts = make(map[string]int, len(e.Counts))
	for kind, n := range e.Counts {
		for _, p := range countKinds {
			if stored, ok := strings.CutPrefix(kind, p); ok {
				kind = p + layerID(stored)
				break
			}
		}
		out.Counts[kind] += n
	}
	return &out
}

// quarantinedView is a quarantined record as quarantined prints it with
// -json: its layer by ID, and the stored name when it differs.
type quarantinedView struct {
	inspect.Quarantined
	StorageID string `json:"storage_id,omitempty"`
}

// quarantinedByID returns the views of qs.
func quarantinedByID(qs []inspect.Quarantined) []quarantinedView {
	out := make([]quarantinedView, len(qs))
	for i, q := range qs {
		out[i].Quarantined = q
		if id := layerID(q.LayerID); id != q.LayerID {
			out[i].LayerID, out[i].StorageID = id, q.LayerID
		}
	}
	return out
}
