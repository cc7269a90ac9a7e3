package workingmemory_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// Plan is a scratchpad state as a Go type.
type Plan struct {
	Goal  string   `json:"goal"`
	Steps []string `json:"steps,omitempty"`
	Done  bool     `json:"done,omitempty"`
}

// TestTrust320_SchemaFromGoType: Config.Schema given as a Go struct (or a
// pointer to one) is the state's type: the schema is inferred from it, as
// agentloop.NewTool does, and updates that do not fit the type are
// refused with ErrSchema, losing nothing. Before, the struct was
// marshalled as if it were a schema document and validated nothing. A
// JSON Schema written as a Go value (a map) is still a document.
func TestTrust320_SchemaFromGoType(t *testing.T) {
	ctx := t.Context()
	for _, schema := range []any{Plan{}, &Plan{Goal: "draft"}} {
		pad, err := workingmemory.New(workingmemory.Config{Schema: schema})
		if err != nil {
			t.Fatalf("New(Schema: %T): %v", schema, err)
		}
		st, err := layer.NewStack(layer.StackConfig{Layers: []layer.Layer{pad}, Env: layer.Env{ThreadID: "t", Store: storage.NewMemoryStore()}})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Init(ctx); err != nil {
			t.Fatal(err)
		}
		l, err := workingmemory.From(st, "")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Update(ctx, json.RawMessage(`{"goal":"ship","steps":["tests"]}`)); err != nil {
			t.Fatalf("%T: a fitting update: %v", schema, err)
		}
		for _, bad := range []string{`{"goal":7}`, `{"steps":"tests"}`, `{"done":"yes"}`, `{"colour":"red"}`} {
			if err := l.Update(ctx, json.RawMessage(bad)); !errors.Is(err, workingmemory.ErrSchema) {
				t.Errorf("%T: update %s: %v, want ErrSchema", schema, bad, err)
			}
		}
		p, err := workingmemory.StateAs[Plan](l)
		if err != nil || p.Goal != "ship" || len(p.Steps) != 1 || p.Done {
			t.Errorf("%T: state after the refused updates = %+v, %v", schema, p, err)
		}
		st.Close(ctx)
	}
	// A map is a schema document, as before.
	doc := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}
	pad, err := workingmemory.New(workingmemory.Config{Schema: doc, Template: map[string]any{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workingmemory.New(workingmemory.Config{Schema: doc, Template: map[string]any{"n": "x"}}); !errors.Is(err, workingmemory.ErrInvalidConfig) && !errors.Is(err, workingmemory.ErrSchema) {
		t.Errorf("a template failing a map schema: %v", err)
	}
	_ = pad
	// A type the inference refuses is a clear configuration error.
	type bad struct{ F func() }
	if _, err := workingmemory.New(workingmemory.Config{Schema: bad{}}); !errors.Is(err, workingmemory.ErrInvalidConfig) {
		t.Errorf("Schema of a struct with a func field: %v, want ErrInvalidConfig", err)
	}
}
