// Package threadtest gives tests the frozen threads of every version of
// package thread's format, and stores them.
//
// A frozen thread of versions 1 to 3 is one checkpoint record. From
// version 4 it is a JSON object of record name to record, the head under
// thread.HeadName, with the random part of each record name written as
// "frozen".
package threadtest

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

//go:embed testdata/checkpoint_v*.json
var frozen embed.FS

// Frozen returns the frozen thread of a format version, 1 to
// thread.Version.
func Frozen(t testing.TB, version int) []byte {
	t.Helper()
	data, err := frozen.ReadFile(fmt.Sprintf("testdata/checkpoint_v%d.json", version))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Titled returns the frozen thread of the current format version as
// this build writes it: version 4 with the head's optional title (see
// thread.Catalog), which builds before it ignore. Frozen(t, 4) is the
// same thread as those builds wrote it, without one.
func Titled(t testing.TB) []byte {
	t.Helper()
	data, err := frozen.ReadFile("testdata/checkpoint_v4_titled.json")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Put stores a frozen thread (from Frozen) as thread threadID, each
// record compacted.
func Put(t testing.TB, store storage.Store, threadID string, data []byte) {
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
