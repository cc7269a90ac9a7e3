package semanticmemory

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// FuzzMemory13_DecodeRecord decodes arbitrary bytes as a stored record:
// never a panic; what is accepted re-encodes to a record that decodes the
// same and that the layer loads; what is refused is ErrCorrupt or
// ErrVersion, and the layer quarantines (or, for ErrVersion, refuses)
// it instead of loading it.
func FuzzMemory13_DecodeRecord(f *testing.F) {
	f.Add([]byte(`{"v":1,"seq":0,"facts":[{"id":"f0","text":"The user likes tea.","kind":"preference","importance":0.5,"source":{"by":"model","thread":"t"},"created":"2026-11-23T12:00:00Z","updated":"2026-11-23T12:00:00Z","version":1}]}`))
	f.Add([]byte(`{"v":1,"seq":0,"facts":[{"id":"f0","text":"x","kind":"fact","version":2,"forgotten":true,"embedding":[0.5,1e30]}]}`))
	f.Add([]byte(`{"v":2,"seq":0,"facts":[]}`))
	f.Add([]byte(`{"v":1,"seq":1,"facts":[]}`))
	f.Add([]byte(`{"v":1,"seq":0,"facts":[{"id":"f 0","text":" a  b ","kind":"A","version":0,"importance":2}]}`))
	f.Add([]byte(`{"v":1,"seq":0,"reset":true,"facts":[]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"v":1,"seq":0,"facts":null} trailing`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := decodeRecord(data, 0)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrVersion) {
				t.Fatalf("error %v is neither ErrCorrupt nor ErrVersion", err)
			}
		} else {
			again, err := decodeRecord(encode(r), 0)
			if err != nil {
				t.Fatalf("re-encoded record refused: %v", err)
			}
			if !reflect.DeepEqual(normal(again), normal(r)) {
				t.Fatalf("round trip changed the record:\n%+v\n%+v", r, again)
			}
		}
		ctx := context.Background()
		store := storage.NewMemoryStore()
		tmpl, _ := New(Config{})
		key := storage.LayerKey(DefaultStorageID, storage.ResourceScope("u"), "r-0")
		store.Put(ctx, key, data, storage.NoVersion)
		store.Put(ctx, storage.LayerKey(DefaultStorageID, storage.ResourceScope("u"), "head"), []byte(`{"v":1,"base":0,"next":1}`), storage.NoVersion)
		l, ierr := tmpl.Init(ctx, layer.Env{ThreadID: "t", ResourceID: "u", Store: store})
		switch {
		case errors.Is(err, ErrVersion):
			if !errors.Is(ierr, ErrVersion) {
				t.Fatalf("Init over a newer record = %v", ierr)
			}
		case err != nil:
			if ierr != nil {
				t.Fatalf("Init over a corrupt record = %v, want quarantine", ierr)
			}
			if _, gerr := store.Get(ctx, key); !errors.Is(gerr, storage.ErrNotFound) {
				t.Fatalf("corrupt record not quarantined: %v", gerr)
			}
		default:
			if ierr != nil {
				t.Fatalf("Init over a good record = %v", ierr)
			}
			if _, err := l.Recall(ctx, layer.Query{Text: "tea x", Budget: layer.Unbounded}); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// normal clears what JSON does not tell apart (nil and empty slices).
func normal(r record) record {
	if len(r.Facts) == 0 {
		r.Facts = nil
	}
	for i := range r.Facts {
		if len(r.Facts[i].Embedding) == 0 {
			r.Facts[i].Embedding = nil
		}
	}
	return r
}
