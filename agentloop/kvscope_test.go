package agentloop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory/kv"
)

// renderKeys lists a key-value memory's entries, one "key=value" a line.
func renderKeys(mem *kv.Scope) string {
	es, _ := mem.Entries()
	var b strings.Builder
	for _, e := range es {
		b.WriteString(e.Key + "=" + string(e.Value) + "\n")
	}
	return b.String()
}

// rememberPolicy: "remember K" makes the model call kv_set with key K;
// after a tool result, or for any other input, it answers.
func rememberPolicy(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
	if len(r.ToolResults()) > 0 {
		return agenttest.Text("noted"), nil
	}
	if k, ok := strings.CutPrefix(r.LastUser(), "remember "); ok {
		return agenttest.Calls(agenttest.Call("kv_set", map[string]string{"key": k, "value": "value of " + k})), nil
	}
	return agenttest.Text("hello"), nil
}

type kvSetIn struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// kvSet is a tool that sets a key in the calling run's key-value memory.
var kvSet = agentloop.NewContextTool("kv_set", "Remember a value.", nil, func(ctx context.Context, run *agentloop.ToolContext, in kvSetIn) (string, error) {
	mem, err := kv.From(run.Stack(), "")
	if err != nil {
		return "", err
	}
	return "ok", kv.Set(mem, in.Key, in.Value)
})

// TestTrust03_KVScopedPerUser: two users on one agent. A's key-value
// entries never show in B's prompt or checkpoint, and restoring A's
// checkpoint leaves B's entries.
func TestTrust03_KVScopedPerUser(t *testing.T) {
	ctx := t.Context()
	kvl, err := kv.NewLayer(kv.LayerConfig{Render: renderKeys})
	if err != nil {
		t.Fatal(err)
	}
	st := storage.NewMemoryStore()
	model := agenttest.NewFunc(rememberPolicy)
	a := mustAgent(t, agentloop.Config{Model: model, Store: st, Layers: []layer.Layer{kvl}, Tools: []agentloop.Tool{kvSet}, RestoreLayers: true})
	userA := agentloop.RunInput{ThreadID: "thread-a", ResourceID: "user-a"}
	userB := agentloop.RunInput{ThreadID: "thread-b", ResourceID: "user-b"}
	run := func(in agentloop.RunInput, input string) []string {
		t.Helper()
		n := len(model.Requests())
		in.Input = input
		if _, err := a.Run(ctx, in); err != nil {
			t.Fatal(err)
		}
		var systems []string
		for _, r := range model.Requests()[n:] {
			systems = append(systems, r.System())
		}
		return systems
	}

	run(userA, "remember a-secret")
	if sys := run(userA, "hello"); !strings.Contains(sys[0], "a-secret=") {
		t.Fatalf("A's own entry is not in A's prompt, the test proves nothing:\n%s", sys[0])
	}
	for _, sys := range run(userB, "remember b-note") {
		if strings.Contains(sys, "a-secret") {
			t.Errorf("A's entry in B's prompt:\n%s", sys)
		}
	}
	cp, err := a.LoadCheckpoint(ctx, userB.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	if snap := string(cp.Layers.Layers[kv.DefaultLayerID]); strings.Contains(snap, "a-secret") || !strings.Contains(snap, "b-note") {
		t.Errorf("B's checkpoint holds %s, want b-note and not a-secret", snap)
	}

	// A resumes: its checkpoint is restored (RestoreLayers). B's entries
	// stay, and B's still do not show to A.
	for _, sys := range run(userA, "hello") {
		if strings.Contains(sys, "b-note") {
			t.Errorf("B's entry in A's prompt:\n%s", sys)
		}
	}
	if sys := run(userB, "hello"); !strings.Contains(sys[0], "b-note=") || strings.Contains(sys[0], "a-secret") {
		t.Errorf("B's prompt after A's checkpoint was restored, want b-note and not a-secret:\n%s", sys[0])
	}
	// Each user's entries are stored under the user's thread only.
	for _, c := range []struct{ thread, has, not string }{{"thread-a", "a-secret", "b-note"}, {"thread-b", "b-note", "a-secret"}} {
		it, err := st.Get(ctx, storage.LayerKey(kv.DefaultStorageID, storage.ThreadScope(c.thread), "state"))
		if err != nil {
			t.Fatalf("%s: stored state: %v", c.thread, err)
		}
		if s := string(it.Value); !strings.Contains(s, c.has) || strings.Contains(s, c.not) {
			t.Errorf("%s: stored state %s, want %s and not %s", c.thread, s, c.has, c.not)
		}
	}
}

// TestTrust03_ChildToolActsOnChildKV: a tool called in a child agent gets
// the child's run, whose key-value memory is a child scope of the
// parent's: it reads the parent's entries, and its writes reach the
// parent only through MergeOnReturn.
func TestTrust03_ChildToolActsOnChildKV(t *testing.T) {
	for _, merge := range []bool{false, true} {
		t.Run(fmt.Sprint("merge=", merge), func(t *testing.T) {
			ctx := t.Context()
			kvl, err := kv.NewLayer(kv.LayerConfig{Render: renderKeys, MergeOnReturn: merge})
			if err != nil {
				t.Fatal(err)
			}
			var depths []string
			where := agentloop.NewContextTool("where", "Say where the call runs.", nil, func(ctx context.Context, run *agentloop.ToolContext, _ struct{}) (string, error) {
				depths = append(depths, fmt.Sprintf("%d %s %d", run.Depth(), run.ResourceID(), strings.Count(run.ThreadID(), "/child-")))
				return "ok", nil
			})
			var childSystem string
			model := agenttest.NewFunc(func(ctx context.Context, r agenttest.Request) (*llms.ContentChoice, error) {
				res := r.ToolResults()
				if strings.HasPrefix(r.System(), "child") {
					if len(res) == 0 {
						return agenttest.Calls(agenttest.Call("kv_set", map[string]string{"key": "child-note", "value": "x"}), agenttest.Call("where", "{}")), nil
					}
					childSystem = r.System()
					return agenttest.Text("done"), nil
				}
				switch {
				case len(res) == 0 && r.LastUser() == "delegate":
					return agenttest.Calls(agenttest.Call(agentloop.SpawnToolName, map[string]string{"instructions": "child", "input": "go"})), nil
				case len(res) > 0 && res[0].Name == agentloop.SpawnToolName:
					return agenttest.Calls(agenttest.Call("where", "{}")), nil
				}
				return rememberPolicy(ctx, r)
			})
			st := storage.NewMemoryStore()
			a := mustAgent(t, agentloop.Config{Model: model, Store: st, Layers: []layer.Layer{kvl}, Tools: []agentloop.Tool{kvSet, where}})
			user := agentloop.RunInput{ThreadID: "parent", ResourceID: "user-1"}
			user.Input = "remember parent-note"
			if _, err := a.Run(ctx, user); err != nil {
				t.Fatal(err)
			}
			user.Input = "delegate"
			if _, err := a.Run(ctx, user); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(childSystem, "parent-note=") || !strings.Contains(childSystem, "child-note=") {
				t.Errorf("the child's prompt, want its own entry and its parent's:\n%s", childSystem)
			}
			if want := []string{"1 user-1 1", "0 user-1 0"}; fmt.Sprint(depths) != fmt.Sprint(want) {
				t.Errorf("runs seen by the tool: %q, want %q", depths, want)
			}
			stored, err := kvl.Open(ctx, layer.Env{ThreadID: "parent", Store: st})
			if err != nil {
				t.Fatal(err)
			}
			if got := stored.Memory().Contains("child-note"); got != merge {
				t.Errorf("parent's stored memory has the child's entry: %v, want %v", got, merge)
			}
		})
	}
}
