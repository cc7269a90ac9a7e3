package episodicmemory_test

import (
	"strings"
	"testing"

	"github.com/memlayer/memlayer/episodicmemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// TestTrust305_RefsOfThreadsDoNotCollide: two threads of one
// resource-scoped log whose provider gives no call ID (the agent numbers
// calls "call_<n>_<i>" in every thread; the layer "call-<step>-<i>") each
// read their own episode by the call ID they saw, and either reads the
// other's by the reference its recall shows; a thread-scoped log keeps
// the call ID as the reference. With and without a store.
func TestTrust305_RefsOfThreadsDoNotCollide(t *testing.T) {
	for _, withStore := range []bool{true, false} {
		name := "store"
		if !withStore {
			name = "in-memory"
		}
		t.Run(name, func(t *testing.T) {
			var st storage.Store
			if withStore {
				st = storage.NewMemoryStore()
			}
			cfg := episodicmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}}
			one := bound(t, cfg, st, "thread-1", "user")
			two := one
			if withStore {
				two = bound(t, cfg, st, "thread-2", "user")
			}
			turn := func(id, content string) layer.Turn {
				c := layer.ToolCall{ID: id, Name: "cms_getPage", Arguments: `{"id":"p"}`}
				return layer.Turn{Step: 0, ToolCalls: []layer.ToolCall{c}, Results: []layer.ToolResult{{ToolCall: c, Content: content}}}
			}
			store(t, one, turn("call_1_0", `{"id":"p","title":"RESULTONE"}`))
			store(t, one, turn("", `{"id":"q","title":"NOIDONE"}`))
			if withStore {
				store(t, two, turn("call_1_0", `{"id":"p","title":"RESULTTWO"}`))
				store(t, two, turn("", `{"id":"q","title":"NOIDTWO"}`))
				// A fresh load of thread 1 sees both threads' episodes.
				one = bound(t, cfg, st, "thread-1", "user")
			}
			read := func(l *episodicmemory.Layer, ref string) string {
				t.Helper()
				e, _, err := l.Read(t.Context(), ref)
				if err != nil {
					t.Fatalf("Read(%q): %v", ref, err)
				}
				return e.Result
			}
			if got := read(one, "call_1_0"); !strings.Contains(got, "RESULTONE") {
				t.Errorf("thread 1 reading its own call_1_0 got %s", got)
			}
			if got := read(one, "call-0-0"); !strings.Contains(got, "NOIDONE") {
				t.Errorf("thread 1 reading its own call-0-0 got %s", got)
			}
			if !withStore {
				return
			}
			if got := read(two, "call_1_0"); !strings.Contains(got, "RESULTTWO") {
				t.Errorf("thread 2 reading its own call_1_0 got %s", got)
			}
			// Every reference the recall shows names one episode.
			block := recall(t, one, "p q")
			refs := map[string]bool{}
			for _, line := range strings.Split(block, "\n") {
				if i := strings.Index(line, "["); i >= 0 {
					if j := strings.Index(line[i:], "]"); j > 0 {
						ref := line[i+1 : i+j]
						if refs[ref] {
							t.Errorf("reference %s shown twice:\n%s", ref, block)
						}
						refs[ref] = true
					}
				}
			}
			for ref := range refs {
				if strings.HasPrefix(ref, "call_1_0") {
					got := read(one, ref)
					if _, whole, _ := two.Read(t.Context(), ref); !whole {
						continue
					}
					if other := read(two, ref); other != got {
						t.Errorf("reference %s reads %s in thread 1 and %s in thread 2", ref, got, other)
					}
				}
			}
			if len(refs) < 4 {
				t.Errorf("recall shows %d references, want the 4 episodes:\n%s", len(refs), block)
			}
		})
	}
	// A thread-scoped log keeps the call ID as the reference.
	l := bound(t, episodicmemory.Config{}, storage.NewMemoryStore(), "t", "")
	c := layer.ToolCall{ID: "call_1_0", Name: "cms_getPage", Arguments: `{}`}
	store(t, l, layer.Turn{ToolCalls: []layer.ToolCall{c}, Results: []layer.ToolResult{{ToolCall: c, Content: "X"}}})
	if !strings.Contains(recall(t, l, "x"), "[call_1_0]") {
		t.Errorf("thread-scoped reference changed:\n%s", recall(t, l, "x"))
	}
}
