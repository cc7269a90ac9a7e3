package layer_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// renamed is a layer with a StorageID and one function, "echo".
type renamed struct{ spec layer.Spec }

func (r renamed) Spec() layer.Spec { return r.spec }
func (renamed) Recall(context.Context, layer.Query) ([]layer.Item, error) {
	return nil, nil
}
func (renamed) Functions() []layer.Function {
	return []layer.Function{{Name: "echo", Call: func(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil }}}
}

// Two layers may not share stored data: a StorageID that is another
// layer's ID or StorageID is a duplicate.
func TestStackStorageIDUnique(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b layer.Spec
	}{
		{"storage id is an id", layer.Spec{ID: "notes", StorageID: "old-notes"}, layer.Spec{ID: "old-notes"}},
		{"id is a storage id", layer.Spec{ID: "old-notes"}, layer.Spec{ID: "notes", StorageID: "old-notes"}},
		{"same storage id", layer.Spec{ID: "a", StorageID: "s"}, layer.Spec{ID: "b", StorageID: "s"}},
	} {
		_, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{renamed{tt.a}, renamed{tt.b}}})
		if !errors.Is(err, layer.ErrInvalidSpec) {
			t.Errorf("%s: NewStack = %v, want ErrInvalidSpec", tt.name, err)
		}
	}
	if _, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{renamed{layer.Spec{ID: "a", StorageID: "a"}}, renamed{layer.Spec{ID: "b"}}}}); err != nil {
		t.Errorf("a StorageID equal to its own ID: %v", err)
	}
}

// A renamed layer's tools answer to their names under the StorageID
// (deprecated), which are not offered.
func TestStackDeprecatedToolName(t *testing.T) {
	spec := layer.Spec{ID: "new_notes", StorageID: "old-notes"}
	s, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{renamed{spec}}, Env: layer.Env{ThreadID: "t", Store: storage.NewMemoryStore()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	old, ok := layer.DeprecatedToolName(spec, "echo")
	if !ok || old != "old-notes_echo" {
		t.Fatalf("DeprecatedToolName = %q, %v", old, ok)
	}
	for _, name := range []string{"new_notes_echo", old} {
		if out, err := s.CallTool(t.Context(), name, `{"x":1}`); err != nil || out != `{"x":1}` {
			t.Errorf("CallTool(%s) = %q, %v", name, out, err)
		}
	}
	for _, f := range s.Tools() {
		if f.Name != "new_notes_echo" {
			t.Errorf("offered %q", f.Name)
		}
	}
	if _, ok := layer.DeprecatedToolName(layer.Spec{ID: "a"}, "echo"); ok {
		t.Error("a layer without StorageID has a deprecated tool name")
	}
}
