package main

import (
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/history"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/storage/sqlite"
	"github.com/memlayer/memlayer/workingmemory"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// shippedLayers returns the specs of the layers memlayer ships, each made
// with its package's defaults.
func shippedLayers(t *testing.T) []layer.Spec {
	t.Helper()
	spec := func(l interface{ Spec() layer.Spec }, err error) layer.Spec {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l.Spec()
	}
	return []layer.Spec{
		spec(workingmemory.New(workingmemory.Config{})),
		spec(kv.NewLayer(kv.LayerConfig{})),
		spec(entitymemory.New(entitymemory.Config{})),
		spec(episodicmemory.New(episodicmemory.Config{})),
		spec(semanticmemory.New(semanticmemory.Config{})),
		history.NewLayer(0).Spec(),
	}
}

// TestBuiltinLayersAreThePackages: the command's table of built-in layers
// is the layers' own: each package's default ID and the name its data is
// stored under (layer.Spec.StorageName), and the constants that name
// them. The usage names every layer that stores data.
func TestBuiltinLayersAreThePackages(t *testing.T) {
	var want []builtinLayer
	for _, s := range shippedLayers(t) {
		want = append(want, builtinLayer{id: s.ID, stored: s.StorageName()})
	}
	if !slices.Equal(builtinLayers, want) {
		t.Errorf("builtinLayers = %v, the packages' layers are %v", builtinLayers, want)
	}
	consts := []builtinLayer{
		{workingmemory.DefaultID, workingmemory.DefaultStorageID},
		{kv.DefaultLayerID, kv.DefaultStorageID},
		{entitymemory.DefaultID, entitymemory.DefaultStorageID},
		{episodicmemory.DefaultID, episodicmemory.DefaultStorageID},
		{semanticmemory.DefaultID, semanticmemory.DefaultStorageID},
		{history.SummaryLayerID, history.SummaryLayerID},
	}
	if !slices.Equal(builtinLayers, consts) {
		t.Errorf("builtinLayers = %v, the packages' constants are %v", builtinLayers, consts)
	}
	for _, b := range consts[:5] {
		if !strings.Contains(usage, b.id) {
			t.Errorf("the usage does not name layer %s", b.id)
		}
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(b.stored) + `\b`).MatchString(usage) {
			t.Errorf("the usage names layer %s by its stored name %s", b.id, b.stored)
		}
	}
}

// The frozen store's run (agentloop's testdata/names-v0.sqlite, written
// before the naming scheme): its thread and resource.
const (
	frozenThread   = "names-thread"
	frozenResource = "names-user"
)

// frozenCopy copies the frozen store of the names from before the naming
// scheme to a temporary directory and returns the copy's path and the
// open copy. The frozen file itself is only read.
func frozenCopy(t *testing.T) (string, storage.Store) {
	t.Helper()
	src, err := os.Open(filepath.Join("..", "..", "agentloop", "testdata", "names-v0.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	db := filepath.Join(t.TempDir(), "names-v0.sqlite")
	dst, err := os.Create(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return db, st
}

// TestStateTakesLayerIDs: on a store written before the naming scheme,
// state reads each built-in layer's records by its ID, and by the name
// its data is stored under with a deprecation note on stderr; both give
// the same records. Another scope's records stay out.
func TestStateTakesLayerIDs(t *testing.T) {
	db, _ := frozenCopy(t)
	thread, resource := storage.ThreadScope(frozenThread), storage.ResourceScope(frozenResource)
	for _, c := range []struct {
		id, stored   string
		scope, other string
	}{
		{workingmemory.DefaultID, workingmemory.DefaultStorageID, thread, resource},
		{entitymemory.DefaultID, entitymemory.DefaultStorageID, thread, resource},
		{episodicmemory.DefaultID, episodicmemory.DefaultStorageID, thread, resource},
		{kv.DefaultLayerID, kv.DefaultStorageID, resource, thread},
		{semanticmemory.DefaultID, semanticmemory.DefaultStorageID, resource, thread},
	} {
		for _, json := range []bool{false, true} {
			args := []string{"-store", db, "state"}
			if json {
				args = append(args, "-json")
			}
			code, byID, errs := memlayer(t, "", append(args, c.id, c.scope)...)
			if code != 0 || errs != "" || !strings.Contains(byID, "version") {
				t.Errorf("state %s %s (json %v): status %d, stdout %q, stderr %q", c.id, c.scope, json, code, byID, errs)
			}
			code, byStored, errs := memlayer(t, "", append(args, c.stored, c.scope)...)
			if code != 0 || byStored != byID {
				t.Errorf("state %s %s (json %v): status %d, stdout %q; by ID %q", c.stored, c.scope, json, code, byStored, byID)
			}
			if !strings.Contains(errs, "deprecated") || !strings.Contains(errs, "use "+c.id) {
				t.Errorf("state %s: stderr %q, want a deprecation note naming %s", c.stored, errs, c.id)
			}
		}
		code, out, errs := memlayer(t, "", "-store", db, "state", c.id, c.other)
		if code != 0 || errs != "" || !strings.Contains(out, "layer "+c.id+" (stored as "+c.stored+") has no records") {
			t.Errorf("state %s %s: status %d, stdout %q, stderr %q", c.id, c.other, code, out, errs)
		}
	}
	// The history summary stores nothing: it is known, and empty.
	code, out, errs := memlayer(t, "", "-store", db, "state", history.SummaryLayerID, thread)
	if code != 0 || errs != "" || !strings.Contains(out, "layer "+history.SummaryLayerID+" has no records") {
		t.Errorf("state %s: status %d, stdout %q, stderr %q", history.SummaryLayerID, code, out, errs)
	}
}

// TestStateUnknownLayer: a layer that is neither built in nor has a
// record in the store exits 2 with the built-in layers named, whatever
// the output format; a layer of the application's own is known by its
// records, in any scope.
func TestStateUnknownLayer(t *testing.T) {
	db, st := frozenCopy(t)
	before, err := st.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	thread := storage.ThreadScope(frozenThread)
	own := "my_plan" // a layer of the application's own
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"state", own, thread}, `unknown layer "my_plan"`},
		{[]string{"-json", "state", own, thread}, "the built-in layers are " + workingmemory.DefaultID},
		{[]string{"state", strings.ReplaceAll(history.SummaryLayerID, "_", "-"), thread}, "did you mean " + history.SummaryLayerID + "?"},
		{[]string{"state", "Working Memory", thread}, "must start with a-z"},
		{[]string{"state", "", thread}, `unknown layer ""`},
		{[]string{"state", workingmemory.DefaultID}, "state takes 2 argument(s), got 1"},
	} {
		code, out, errs := memlayer(t, "", append([]string{"-store", db}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("memlayer %q: status %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errs, c.want)
		}
	}
	// Known once it has a record, in another scope as well.
	key := storage.LayerKey(own, storage.ResourceScope(frozenResource), "state")
	if _, err := st.Put(t.Context(), key, []byte(`{"step":"draft"}`), storage.NoVersion); err != nil {
		t.Fatal(err)
	}
	code, out, errs := memlayer(t, "", "-store", db, "state", own, thread)
	if code != 0 || errs != "" || !strings.Contains(out, "layer "+own+" has no records") {
		t.Errorf("state of an own layer in an empty scope: status %d, stdout %q, stderr %q", code, out, errs)
	}
	code, out, errs = memlayer(t, "", "-store", db, "state", own, storage.ResourceScope(frozenResource))
	if code != 0 || errs != "" || !strings.Contains(out, `{"step":"draft"}`) {
		t.Errorf("state of an own layer: status %d, stdout %q, stderr %q", code, out, errs)
	}
	after, err := st.List(t.Context(), "")
	if err != nil || len(after) != len(before)+1 {
		t.Errorf("%d keys after, %d before and one put: %v", len(after), len(before), err)
	}
}

// TestShowNamesLayersByID: show lists a thread's layer snapshots by
// layer ID, as text and as JSON, though the store keeps them under the
// names from before the naming scheme.
func TestShowNamesLayersByID(t *testing.T) {
	db, _ := frozenCopy(t)
	ids := []string{entitymemory.DefaultID, episodicmemory.DefaultID, workingmemory.DefaultID}
	code, out, errs := memlayer(t, "", "-store", db, "show", frozenThread)
	if code != 0 || !strings.Contains(out, "layers:    "+strings.Join(ids, ", ")+"\n") {
		t.Errorf("show: status %d, stderr %q:\n%s", code, errs, out)
	}
	code, out, errs = memlayer(t, "", "-store", db, "-json", "show", frozenThread)
	var v threadView
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil {
		t.Fatalf("show -json: status %d, %v, stderr %q", code, err, errs)
	}
	for _, id := range ids {
		if len(v.Layers[id]) == 0 {
			t.Errorf("show -json: no snapshot of %s in %v", id, slices.Sorted(mapKeys(v.Layers)))
		}
	}
	if len(v.Layers) != len(ids) {
		t.Errorf("show -json: layers %v, want %v", slices.Sorted(mapKeys(v.Layers)), ids)
	}
}

// TestQuarantinedAndEraseNameLayersByID: quarantined prints a built-in
// layer's copy under its ID (with -json its stored name too, and the key
// as stored, which restore takes); delete and erase count records by
// layer ID, as text and as JSON, and their keys stay the stored ones.
func TestQuarantinedAndEraseNameLayersByID(t *testing.T) {
	ctx := t.Context()
	db, st := frozenCopy(t)
	scope := storage.ResourceScope(frozenResource)
	key := storage.LayerKey(kv.DefaultStorageID, scope, "state")
	it, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	qkey, err := storage.Quarantine(ctx, st, it, kv.DefaultStorageID, scope, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := memlayer(t, "", "-store", db, "quarantined")
	if code != 0 || !strings.Contains(out, kv.DefaultLayerID+"  "+scope) || !strings.Contains(out, qkey) {
		t.Errorf("quarantined: status %d, stderr %q:\n%s", code, errs, out)
	}
	code, out, errs = memlayer(t, "", "-store", db, "-json", "quarantined")
	var q quarantinedView
	if err := json.Unmarshal([]byte(out), &q); code != 0 || err != nil || q.LayerID != kv.DefaultLayerID ||
		q.StorageID != kv.DefaultStorageID || q.Key != qkey || q.ScopeKey != scope {
		t.Errorf("quarantined -json: status %d, %+v, %v, stderr %q", code, q, err, errs)
	}
	if code, out, errs := memlayer(t, "", "-store", db, "restore", q.Key); code != 0 || !strings.Contains(out, "to "+key) {
		t.Errorf("restore: status %d, %q, %q", code, out, errs)
	}

	code, out, errs = memlayer(t, "", "-store", db, "-y", "delete", frozenThread)
	if code != 0 || !strings.Contains(out, "layer."+workingmemory.DefaultID) || strings.Contains(out, "layer."+workingmemory.DefaultStorageID) ||
		!strings.Contains(out, "index."+episodicmemory.DefaultID) {
		t.Errorf("delete: status %d, stderr %q:\n%s", code, errs, out)
	}
	code, out, errs = memlayer(t, "", "-store", db, "-y", "-json", "erase", frozenResource)
	var e inspect.Erased
	if err := json.Unmarshal([]byte(out), &e); code != 0 || err != nil {
		t.Fatalf("erase -json: status %d, %v, stderr %q", code, err, errs)
	}
	if e.Counts["layer."+kv.DefaultLayerID] != 1 || e.Counts["layer."+kv.DefaultStorageID] != 0 || e.Counts["layer."+semanticmemory.DefaultID] == 0 ||
		!slices.Contains(e.Keys, key) {
		t.Errorf("erase -json: counts %v, keys %v", e.Counts, e.Keys)
	}
	if keys, err := st.List(ctx, "layers/"); err != nil || len(keys) != 0 {
		t.Errorf("layer records left: %v, %v", keys, err)
	}
}

// TestByIDKeepsEveryEntry: byID renames a built-in layer's entry to its
// ID, leaves another layer's entry as it is, and loses no entry when the
// map has one under the ID too.
func TestByIDKeepsEveryEntry(t *testing.T) {
	own := "my_plan"
	got := byID(map[string]int{workingmemory.DefaultStorageID: 1, own: 2, semanticmemory.DefaultStorageID: 3, semanticmemory.DefaultID: 4})
	want := map[string]int{workingmemory.DefaultID: 1, own: 2, semanticmemory.DefaultStorageID: 3, semanticmemory.DefaultID: 4}
	if !maps.Equal(got, want) {
		t.Errorf("byID = %v, want %v", got, want)
	}
	if got := byID[int](nil); got != nil {
		t.Errorf("byID(nil) = %v", got)
	}
}
