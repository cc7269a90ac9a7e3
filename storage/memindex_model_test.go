package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/storage"
)

// TestMemoryIndexKeepsNoStaleState indexes, replaces (with the same text
// and with another) and removes documents at random, and after every
// change compares the index's answers with those of an index built
// afresh from the live documents in the order they were last given:
// text queries (the corpus a same-text replacement keeps) and filtered
// listings (the field-value sets) must agree exactly, scores included.
func TestMemoryIndexKeepsNoStaleState(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("page hero pricing careers draft published editor marker")
	var x storage.MemoryIndex
	var live []storage.Document // in the order each was last indexed
	const col = "c"
	for step := range 600 {
		id := fmt.Sprint("d", rng.IntN(40))
		i := slices.IndexFunc(live, func(d storage.Document) bool { return d.ID == id })
		switch op := rng.IntN(10); {
		case op < 2 && i >= 0:
			if err := x.Unindex(ctx, col, id); err != nil {
				t.Fatal(err)
			}
			live = slices.Delete(live, i, i+1)
		default:
			d := storage.Document{ID: id, Fields: map[string]string{"kind": words[rng.IntN(3)], "n": fmt.Sprint(step % 3)}}
			switch {
			case op < 6 && i >= 0: // the same text, new fields: a marker's update
				d.Text = live[i].Text
			case rng.IntN(4) > 0:
				d.Text = words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))]
			}
			if err := x.Index(ctx, col, d); err != nil {
				t.Fatal(err)
			}
			if i >= 0 {
				live = slices.Delete(live, i, i+1)
			}
			live = append(live, d)
		}
		var ref storage.MemoryIndex
		for _, d := range live {
			if err := ref.Index(ctx, col, d); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []storage.Query{
			{Text: words[step%len(words)], K: 50},
			{Text: "page pricing", Filter: map[string]string{"n": "1"}, K: 50},
			{Filter: map[string]string{"kind": words[step%3]}, K: 50},
			{Filter: map[string]string{"kind": words[step%3], "n": "2"}, K: 50, Oldest: true},
			{Filter: map[string]string{"kind": "none"}, K: 50},
			{K: 50},
		} {
			got, err := x.Search(ctx, col, q)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ref.Search(ctx, col, q)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("step %d, query %+v:\n got %v\nwant %v", step, q, got, want)
			}
		}
	}
}
