package episodicmemory_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/storage"
)

// TestEpisodic24_NoteIsAnEpisode: a routed write logged with Note is an
// episode of kind note, numbered after the step's episodes, recalled with
// its kind and text, read back by its reference, and still there for a
// new run on the same store; an empty note is an error and logs nothing.
func TestEpisodic24_NoteIsAnEpisode(t *testing.T) {
	st := storage.NewMemoryStore()
	l := bound(t, episodicmemory.Config{}, st, "t1", "")
	store(t, l, pageStep(0))
	ctx := context.Background()
	if err := l.Note(ctx, 1, "outcome", "The About page went live after review."); err != nil {
		t.Fatal(err)
	}
	if err := l.Note(ctx, 1, "outcome", " \n"); err == nil {
		t.Error("an empty note was logged")
	}
	eps := episodes(t, l)
	if len(eps) != 2 {
		t.Fatalf("%d episodes, want the page call and the note: %+v", len(eps), eps)
	}
	n := eps[1]
	if n.Kind != episodicmemory.KindNote || n.Tool != "outcome" || n.Step != 1 || !strings.HasPrefix(n.Ref, "note-") || n.Ref == eps[0].Ref {
		t.Fatalf("note episode %+v", n)
	}
	want := "[" + n.Ref + "] step 1 note (outcome): The About page went live after review."
	if got := n.Digest(); got != want {
		t.Errorf("digest %q, want %q", got, want)
	}
	if block := recall(t, l, "Is the About page live?"); !strings.Contains(block, want) {
		t.Errorf("recall lacks the note:\n%s", block)
	}
	// The segment holding the note is version 2, which earlier builds
	// refuse instead of setting it aside as corrupt; the others stay 1.
	keys, err := st.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var twos []string
	for _, k := range keys {
		it, _ := st.Get(ctx, k)
		var v struct{ Version int }
		if err := json.Unmarshal(it.Value, &v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if v.Version == 2 {
			twos = append(twos, k)
		} else if v.Version != 1 {
			t.Errorf("%s is version %d", k, v.Version)
		}
	}
	if len(keys) != 3 || len(twos) != 1 || !strings.HasSuffix(twos[0], "1") {
		t.Errorf("records %v, of which %v at version 2; want the head, two segments and the second (the note's) alone at 2", keys, twos)
	}
	again := bound(t, episodicmemory.Config{}, st, "t1", "")
	e, whole, err := again.Read(ctx, n.Ref)
	if err != nil || !whole || e.Result != n.Result || e.Kind != episodicmemory.KindNote {
		t.Errorf("a new run reads the note as %+v (whole %v, %v)", e, whole, err)
	}
}
