package agentloop_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread/threadtest"
)

// Frozen threads: see package threadtest.

// nonce is the random part of a version-4 record name.
var nonce = regexp.MustCompile(`\.[0-9a-f]{12}\b`)

// readFrozen returns the frozen thread of a version
// (threadtest.Frozen).
func readFrozen(t *testing.T, version int) []byte { return threadtest.Frozen(t, version) }

// putFrozen stores a frozen file as thread threadID (threadtest.Put).
func putFrozen(t *testing.T, store storage.Store, threadID string, data []byte) {
	threadtest.Put(t, store, threadID, data)
}

// frozenForm returns a stored version-4 thread as a frozen file holds
// it.
func frozenForm(t *testing.T, store storage.Store, threadID string) []byte {
	t.Helper()
	keys, err := store.List(t.Context(), storage.ThreadPrefix(threadID))
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]json.RawMessage{}
	for _, k := range keys {
		it, err := store.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		name, err := storage.Unescape(strings.TrimPrefix(k, storage.ThreadPrefix(threadID)))
		if err != nil {
			t.Fatal(err)
		}
		if name == audit.Name || strings.HasPrefix(name, audit.Name+".") {
			continue // the audit's turns, of package audit's format
		}
		records[nonce.ReplaceAllString(name, ".frozen")] = nonce.ReplaceAll(it.Value, []byte(".frozen"))
	}
	out, err := json.MarshalIndent(records, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}
