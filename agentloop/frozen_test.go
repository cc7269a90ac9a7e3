package agentloop_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// Frozen threads. Versions 1 to 3 are one checkpoint record; from
// version 4 a frozen file is a JSON object of record name to record,
// the head under "checkpoint", with the random part of each record name
// written as "frozen".

// nonce is the random part of a version-4 record name.
var nonce = regexp.MustCompile(`\.[0-9a-f]{12}\b`)

// readFrozen returns ../thread/testdata/checkpoint_v<version>.json.
func readFrozen(t *testing.T, version int) []byte {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("../thread/testdata/checkpoint_v%d.json", version))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// putFrozen stores a frozen file as thread threadID.
func putFrozen(t *testing.T, store storage.Store, threadID string, data []byte) {
	t.Helper()
	var records map[string]json.RawMessage
	if err := json.Unmarshal(data, &records); err != nil {
		t.Fatal(err)
	}
	if _, ok := records[thread.HeadName]; !ok {
		records = map[string]json.RawMessage{thread.HeadName: data}
	}
	for name, value := range records {
		var compact bytes.Buffer
		if err := json.Compact(&compact, value); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Put(t.Context(), storage.ThreadKey(threadID, name), compact.Bytes(), storage.NoVersion); err != nil {
			t.Fatal(err)
		}
	}
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
