package audit_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/storage"
)

// TestCommitOf: entries sort into writes, routes and evictions, each in
// order; recalls and redactions are left out; a committed turn gives the
// same commit, sizes included, and a long text keeps its size though the
// turn cuts it.
func TestCommitOf(t *testing.T) {
	long := strings.Repeat("x", audit.MaxTextBytes+100)
	entries := []audit.Entry{
		{Op: audit.OpRecall, Layer: "facts", Tokens: 40},
		{Op: audit.OpRoute, Step: 1, Kind: "fact", Text: "a", Layer: "facts", Reason: "durable"},
		{Op: audit.OpWrite, Step: 1, Layer: "facts", Kind: "fact", Key: "f1", Version: 1, Text: "a", Bytes: 1},
		{Op: audit.OpRoute, Step: 2, Kind: "secret", Text: "b", Refused: true, Reason: "no secrets"},
		{Op: audit.OpRoute, Step: 3, Kind: "fact", Text: long, Layer: "facts"},
		{Op: audit.OpWrite, Step: 3, Layer: "facts", Kind: "fact", Key: "f1", Version: 2, Text: long, Bytes: len(long)},
		{Op: audit.OpSupersede, Step: 3, Layer: "facts", Kind: "fact", Key: "f1", Version: 2},
		{Op: audit.OpEvict, Step: 3, Layer: "facts", Key: "f0", Count: 1},
		{Op: audit.OpEvict, Step: 3, Layer: "people", Count: 4},
		{Op: audit.OpRedact, Step: 3, Kind: "email", Count: 1},
		{Op: audit.OpForget, Step: 4, Layer: "facts", Key: "f1"},
		{Op: audit.OpWrite, Step: 4, Layer: "people", Kind: "extracted", Count: 2, Source: "store"},
	}
	c := audit.CommitOf(entries)
	want := audit.Commit{
		Writes: []audit.Write{
			{Op: audit.OpWrite, Layer: "facts", Kind: "fact", Key: "f1", Version: 1, Bytes: 1, Step: 1},
			{Op: audit.OpWrite, Layer: "facts", Kind: "fact", Key: "f1", Version: 2, Bytes: len(long), Step: 3},
			{Op: audit.OpSupersede, Layer: "facts", Kind: "fact", Key: "f1", Version: 2, Step: 3},
			{Op: audit.OpForget, Layer: "facts", Key: "f1", Step: 4},
			{Op: audit.OpWrite, Layer: "people", Kind: "extracted", Count: 2, Source: "store", Step: 4},
		},
		Routes: []audit.Route{
			{Kind: "fact", Text: "a", Layer: "facts", Reason: "durable", Step: 1},
			{Kind: "secret", Text: "b", Refused: true, Reason: "no secrets", Step: 2},
			{Kind: "fact", Text: long, Layer: "facts", Step: 3},
		},
		Evictions: []audit.Eviction{{Layer: "facts", Key: "f0", Count: 1, Step: 3}, {Layer: "people", Count: 4, Step: 3}},
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("CommitOf =\n%+v\nwant\n%+v", c, want)
	}
	if r := c.Refused(); len(r) != 1 || r[0].Kind != "secret" {
		t.Fatalf("Refused = %+v", r)
	}
	if c.Empty() || !audit.CommitOf(entries[:1]).Empty() {
		t.Fatal("Empty is wrong")
	}
	log := audit.New(audit.Config{Store: storage.NewMemoryStore()})
	turn, err := log.Commit(t.Context(), "t1", entries)
	if err != nil {
		t.Fatal(err)
	}
	turns, err := log.Turns(t.Context(), "t1")
	if err != nil || len(turns) != 1 {
		t.Fatalf("Turns = %d, %v", len(turns), err)
	}
	got := turns[0].Commit()
	if got.Writes[1].Bytes != len(long) || len(got.Routes[2].Text) >= len(long) {
		t.Fatalf("stored turn: write bytes %d, route text %d bytes; want the size kept and the text cut", got.Writes[1].Bytes, len(got.Routes[2].Text))
	}
	if !reflect.DeepEqual(got, turn.Commit()) {
		t.Fatalf("stored turn's commit differs from the committed one")
	}
	if _, err := json.Marshal(got); err != nil {
		t.Fatal(err)
	}
}
