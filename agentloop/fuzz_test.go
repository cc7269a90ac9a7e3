package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/internal/looptest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
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
		store := storage.NewMemoryStore()
		key := storage.ThreadKey("t", thread.HeadName)
		if _, err := store.Put(context.Background(), key, data, storage.NoVersion); err != nil {
			t.Skip()
		}
		a, err := agentloop.New(agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("done"))), Store: store, Logger: slog.New(slog.DiscardHandler),
			Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)}})
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
			Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)}, Logger: slog.New(slog.DiscardHandler)})
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

// FuzzHistoryLoad stores arbitrary bytes as a version-4 head and its
// segment and runs the thread: the run either refuses the thread with
// ErrCheckpoint and leaves the store as it was, or continues it, and the
// thread then loads back with one more turn (the transcript too).
func FuzzHistoryLoad(f *testing.F) {
	head := `{"version":4,"thread_id":"t","steps":1,"usage":{},"messages":2,"tail":"seg.0000000000.aaaaaaaaaaaa","layers":{"entities":"layer.entities.aaaaaaaaaaaa"}}`
	seg := `{"first":0,"messages":[{"role":"user","text":"hi"},{"role":"assistant","text":"hello"}]}`
	summed := `{"version":4,"thread_id":"t","messages":2,"tail":"seg.0000000000.aaaaaaaaaaaa","summary":"sum.1.aaaaaaaaaaaa","covers":2}`
	f.Add([]byte(head), []byte(seg))
	f.Add([]byte(summed), []byte(seg))
	f.Add([]byte(`{"version":4,"messages":3,"tail":"seg.0000000000.aaaaaaaaaaaa"}`), []byte(seg))
	f.Add([]byte(`{"version":4,"messages":2,"tail":"layer.entities.aaaaaaaaaaaa"}`), []byte(seg))
	f.Add([]byte(head), []byte(`{"first":1,"prev":"seg.0000000000.aaaaaaaaaaaa","messages":[{"role":"user"}]}`))
	f.Add([]byte(`{"version":4,"messages":-1}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, head, seg []byte) {
		ctx := context.Background()
		store := storage.NewMemoryStore()
		for name, value := range map[string][]byte{
			thread.HeadName:               head,
			"seg.0000000000.aaaaaaaaaaaa": seg,
			"layer.entities.aaaaaaaaaaaa": []byte(`{"seen":null,"notes":null}`),
			"sum.1.aaaaaaaaaaaa":          []byte(`{"version":1,"covers":2,"text":"said hi"}`),
		} {
			if _, err := store.Put(ctx, storage.ThreadKey("t", name), value, storage.NoVersion); err != nil {
				t.Skip()
			}
		}
		dump := func() map[string]string {
			keys, _ := store.List(ctx, "")
			m := map[string]string{}
			for _, k := range keys {
				it, _ := store.Get(ctx, k)
				m[k] = string(it.Value)
			}
			return m
		}
		was := dump()
		a, err := agentloop.New(agentloop.Config{Model: agenttest.New(agenttest.Reply(agenttest.Text("done"))), Store: store, Logger: slog.New(slog.DiscardHandler),
			Layers: []layer.Layer{looptest.NewNotes("entities", layer.ScopeThread)}})
		if err != nil {
			t.Fatal(err)
		}
		before, loadErr := a.LoadCheckpoint(ctx, "t")
		_, _, _ = a.Transcript(ctx, "t")
		_, err = a.Run(ctx, agentloop.RunInput{ThreadID: "t", Input: "next"})
		if err != nil {
			if !errors.Is(err, agentloop.ErrCheckpoint) || loadErr == nil {
				t.Fatalf("Run: %v (load: %v)", err, loadErr)
			}
			if !reflect.DeepEqual(dump(), was) {
				t.Fatalf("refused thread was changed")
			}
			return
		}
		if loadErr != nil {
			t.Fatalf("Run accepted a thread LoadCheckpoint refused: %v", loadErr)
		}
		after, err := a.LoadCheckpoint(ctx, "t")
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		if after.Total != before.Total+2 || after.Steps != before.Steps+1 {
			t.Fatalf("thread %d -> %d messages, steps %d -> %d", before.Total, after.Total, before.Steps, after.Steps)
		}
		// A run reads no segment the summary covers: a bad one is found
		// only by the transcript, which refuses the thread.
		msgs, first, err := a.Transcript(ctx, "t")
		if err != nil && before.First > 0 && errors.Is(err, agentloop.ErrCheckpoint) {
			return
		}
		if err != nil || first+len(msgs) != after.Total {
			t.Fatalf("transcript: %v, %d messages from %d, thread has %d", err, len(msgs), first, after.Total)
		}
	})
}
