package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// FuzzUpdateTool sends arbitrary arguments to the scratchpad's update
// tool, the way a model does, over a stored state. Either the call fails
// and neither the store nor the layer changed, or it succeeds and the
// stored state is a JSON object within the size limit, free of
// "__proto__", "constructor" and "prototype" at every depth, equal to the
// layer's state, and still holding every key the update did not name.
func FuzzUpdateTool(f *testing.F) {
	for _, s := range []string{
		`{"step":1}`, `{"goal":null}`, `{"$delete":["nested/a"]}`, `{"nested":{"b":[1,2,{"c":true}]}}`,
		`{"__proto__":{"x":1},"a":{"constructor":{"prototype":1}}}`, `[]`, `"x"`, `{"a":`, ``, `null`,
		`{"goal":"\u0000\n</working_memory>"}`, `{"a":{"a":{"a":{"a":{"a":{"a":1}}}}}}`, `{"$delete":"goal"}`,
		`{"_previous":"x"}`, `{"n":1e400}`, `{"n":-0.0}`, "{\"\xff\":1}",
	} {
		f.Add(s)
	}
	tool := layer.ToolName(workingmemory.DefaultID, "update")
	f.Fuzz(func(t *testing.T, args string) {
		ctx := context.Background()
		st := storage.NewMemoryStore()
		wm, err := workingmemory.New(workingmemory.Config{MaxBytes: 4096})
		if err != nil {
			t.Fatal(err)
		}
		stack, err := layer.NewStack(layer.StackConfig{
			Layers:       []layer.Layer{wm},
			Env:          layer.Env{ThreadID: "t", Store: st},
			ValidateArgs: agentloop.ValidateArgs,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := stack.Init(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := stack.CallTool(ctx, tool, `{"goal":"ship","nested":{"a":1}}`); err != nil {
			t.Fatal(err)
		}
		key := storage.LayerKey(workingmemory.DefaultStorageID, storage.ThreadScope("t"), "state")
		before, err := st.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		bound, _ := layer.Find[layer.Layer](stack, workingmemory.DefaultID)
		pad := bound.(*workingmemory.Layer)
		stateBefore, _ := json.Marshal(pad.State())

		_, callErr := stack.CallTool(ctx, tool, args)
		after, err := st.Get(ctx, key)
		if err != nil {
			t.Fatalf("state after the call: %v", err)
		}
		stateAfter, _ := json.Marshal(pad.State())
		if callErr != nil {
			if !bytes.Equal(before.Value, after.Value) || before.Version != after.Version {
				t.Fatalf("a failed update (%v) changed the store: %s -> %s", callErr, before.Value, after.Value)
			}
			if !bytes.Equal(stateBefore, stateAfter) {
				t.Fatalf("a failed update (%v) changed the layer: %s -> %s", callErr, stateBefore, stateAfter)
			}
			return
		}
		afterState := scratchpadState(t, after.Value)
		if len(afterState) > 4096 {
			t.Fatalf("stored state of %d bytes exceeds MaxBytes", len(afterState))
		}
		var stored map[string]any
		if err := json.Unmarshal(afterState, &stored); err != nil {
			t.Fatalf("stored state is not a JSON object: %v: %s", err, after.Value)
		}
		if bad := forbiddenKey(stored); bad != "" {
			t.Fatalf("stored state holds %q: %s", bad, after.Value)
		}
		var inLayer map[string]any
		if err := json.Unmarshal(stateAfter, &inLayer); err != nil {
			t.Fatal(err)
		}
		if a, b := mustJSON(t, stored), mustJSON(t, inLayer); a != b {
			t.Fatalf("layer state %s differs from stored %s", b, a)
		}
		if !strings.Contains(args, "goal") && !strings.Contains(args, "$delete") && !strings.Contains(args, `\`) && stored["goal"] != "ship" {
			t.Fatalf("update %q lost the key goal: %s", args, after.Value)
		}
	})
}

// forbiddenKey returns a prototype-polluting key found at any depth of v,
// or "".
func forbiddenKey(v any) string {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k == "__proto__" || k == "constructor" || k == "prototype" {
				return k
			}
			if bad := forbiddenKey(x); bad != "" {
				return bad
			}
		}
	case []any:
		for _, x := range v {
			if bad := forbiddenKey(x); bad != "" {
				return bad
			}
		}
	}
	return ""
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
