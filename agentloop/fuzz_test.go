package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// FuzzCheckpoint stores arbitrary bytes as a thread's checkpoint and runs
// the thread: the run either refuses the checkpoint with ErrCheckpoint
// and leaves it as it was, or continues the thread and writes a
// checkpoint that loads back with the old history plus the new turn.
func FuzzCheckpoint(f *testing.F) {
	good := `{"version":1,"thread_id":"t","messages":[{"role":"human","text":"hi"},{"role":"ai","text":"hello"}],"layers":{"version":1,"layers":{}},"steps":1,"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	tools := `{"version":1,"messages":[{"role":"human","text":"x"},{"role":"ai","parts":[{"type":"tool_call","tool_call":{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}}]},{"role":"tool","parts":[{"type":"tool_response","tool_response":{"tool_call_id":"c1","name":"f","content":"big result"}}]}]}`
	for _, s := range []string{good, tools, `{"version":1}`, `{"version":2}`, `{}`, `null`, `[]`, `{"version":1,"messages":null}`, "\x00", `{"version":1,"messages":[{"role":"system","text":"x"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		store := storage.NewMemory()
		key := storage.ThreadKey("t", agentloop.CheckpointName)
		if _, err := store.Put(context.Background(), key, data, storage.NoVersion); err != nil {
			t.Skip()
		}
		a, err := agentloop.New(agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("done"))), Store: store, Logger: slog.New(slog.DiscardHandler),
			Layers: []layer.Layer{newNotes("entities", layer.ScopeThread)}})
		if err != nil {
			t.Fatal(err)
		}
		before, loadErr := a.LoadCheckpoint(context.Background(), "t")
		res, err := a.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: "next"})
		if err != nil {
			if !errors.Is(err, agentloop.ErrCheckpoint) || loadErr == nil {
				t.Fatalf("Run: %v (load: %v)", err, loadErr)
			}
			it, _ := store.Get(context.Background(), key)
			if !bytes.Equal(it.Value, data) {
				t.Fatalf("refused checkpoint was changed")
			}
			return
		}
		if loadErr != nil {
			t.Fatalf("Run accepted a checkpoint LoadCheckpoint refused: %v", loadErr)
		}
		after, err := a.LoadCheckpoint(context.Background(), "t")
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		if len(after.Messages) != len(before.Messages)+2 || len(res.Messages) != len(after.Messages) || after.Steps != before.Steps+1 {
			t.Fatalf("history %d -> %d (result %d), steps %d -> %d", len(before.Messages), len(after.Messages), len(res.Messages), before.Steps, after.Steps)
		}
	})
}

// FuzzToolArguments sends arbitrary argument text to a schema-checked
// tool, a langchaingo tool and a layer function: the run never fails
// because of it, every call gets exactly one result, and a tool only runs
// on arguments its schema accepts.
func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{`{"title":"About"}`, `{"title":""}`, `{}`, ``, `[]`, `null`, `"x"`, `{"title":1}`, `{"input":"x"}`, `{"text":"n"}`, `{`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		cms := newCMS()
		model := agenttest.New(
			agenttest.Reply(agenttest.Calls(agenttest.Call("createPage", args), agenttest.Call("upper", args), agenttest.Call("entities_note", args))),
			agenttest.Reply(agenttest.Text("done")),
		)
		a, err := agentloop.New(agentloop.Config{Model: model, Tools: append(cms.tools(), agentloop.FromLangchain(upper{})),
			Layers: []layer.Layer{newNotes("entities", layer.ScopeThread)}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		res, err := a.Run(context.Background(), agentloop.RunInput{ThreadID: "t", Input: "go"})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		got := toolContents(res.Messages)
		if len(got) != 3 {
			t.Fatalf("%d results", len(got))
		}
		var in struct {
			Title *string `json:"title"`
		}
		valid := json.Unmarshal([]byte(args), &in) == nil && strings.HasPrefix(strings.TrimSpace(args), "{") && in.Title != nil && *in.Title != ""
		if created := !strings.HasPrefix(got[0], "error: "); created != valid {
			t.Fatalf("createPage with %q: %q", args, got[0])
		}
		if len(cms.pages) > 0 != valid {
			t.Fatalf("createPage ran on %q: %v", args, valid)
		}
		for _, m := range res.Messages {
			if m.Role == llms.ChatMessageTypeTool && len(m.Parts) != 1 {
				t.Fatalf("tool message with %d parts", len(m.Parts))
			}
		}
	})
}
