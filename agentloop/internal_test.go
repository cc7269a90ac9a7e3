package agentloop

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// countingStore counts what is handed to Put.
type countingStore struct {
	storage.Store
	puts  int
	bytes int
	keys  []string
}

func (s *countingStore) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	s.puts++
	s.bytes += len(value)
	s.keys = append(s.keys, key)
	return s.Store.Put(ctx, key, value, ifVersion)
}

// TestHistory01_StepWritesItsSegment: a step writes its own messages as
// a segment, the layers whose snapshot changed and a head; what loads
// back is every message once and the layers' latest state, and a
// snapshot that is not valid JSON is refused (when it changed).
func TestHistory01_StepWritesItsSegment(t *testing.T) {
	store := &countingStore{Store: storage.NewMemoryStore()}
	a := &Agent{cfg: Config{Name: "n\"ame", Store: store}}
	r := &run{
		a: a, threadID: "t/1", resourceID: "r",
		res:    &Result{Steps: 2, Usage: Usage{PromptTokens: 3, TotalTokens: 3}},
		thread: &threadState{w: thread.NewWriter(store, "t/1", nil), steps: 5, usage: Usage{CompletionTokens: 1, TotalTokens: 1, Estimated: true}, compacted: 2},
		msgs: []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeHuman, "hi <b> & \u2028"),
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: `{"a":1}`}}}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c", Name: "f", Content: "ok"}}},
		},
	}
	ctx := t.Context()
	snap := layer.Snapshot{Version: 1, Layers: map[string]json.RawMessage{"b": json.RawMessage(` {"x": [1, 2]} `), "a": json.RawMessage(`"s"`)}}
	check := func(round int) {
		t.Helper()
		l, err := a.load(ctx, "t/1")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		c := l.Checkpoint
		if !reflect.DeepEqual(c.Messages, stored(t, r.msgs)) || c.Total != len(r.msgs) || c.Steps != 7 || c.Agent != "n\"ame" || c.ResourceID != "r" ||
			c.Usage != (Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4, Estimated: true}) || c.Compacted != 2 {
			t.Errorf("round %d: loaded %+v", round, c)
		}
		for id, raw := range snap.Layers {
			if string(c.Layers.Layers[id]) != string(raw) {
				t.Errorf("round %d: layer %s = %s, want %s", round, id, c.Layers.Layers[id], raw)
			}
		}
		if len(c.Layers.Layers) != len(snap.Layers) {
			t.Errorf("round %d: %d layers", round, len(c.Layers.Layers))
		}
	}
	if err := r.writeThread(ctx, snap); err != nil {
		t.Fatal(err)
	}
	check(0)
	// The next step: one message, no layer changed: a segment and a head.
	r.msgs = append(r.msgs, llms.TextParts(llms.ChatMessageTypeAI, "done"))
	store.puts = 0
	if err := r.writeThread(ctx, snap); err != nil {
		t.Fatal(err)
	}
	check(1)
	if store.puts != 2 {
		t.Errorf("a step with no layer change made %d puts, want 2 (segment, head): %v", store.puts, store.keys)
	}
	snap.Layers["bad"] = json.RawMessage(`{`)
	if err := r.writeThread(ctx, snap); err == nil || !strings.Contains(err.Error(), "layer bad: snapshot is not valid JSON") {
		t.Errorf("invalid layer snapshot: %v", err)
	}
	delete(snap.Layers, "bad")
	snap.Layers["a"] = json.RawMessage(`"s`)
	if err := r.writeThread(ctx, snap); err == nil {
		t.Errorf("layer snapshot gone invalid accepted")
	}
	// After refusals, with messages added in between, the thread still
	// has every message once and the layers' latest state; refused
	// writes left no record behind.
	r.msgs = append(r.msgs, llms.TextParts(llms.ChatMessageTypeHuman, "more"))
	snap.Layers["a"] = json.RawMessage(`{"new":true}`)
	snap.Layers["c"] = json.RawMessage(`[]`)
	if err := r.writeThread(ctx, snap); err != nil {
		t.Fatal(err)
	}
	check(2)
	keys, _ := store.List(ctx, storage.ThreadPrefix("t/1"))
	// head, 3 segments, layers a, b, c.
	if len(keys) != 7 {
		t.Errorf("%d records stored, want 7: %v", len(keys), keys)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stored returns msgs as a checkpoint stores them.
func stored(t *testing.T, msgs []llms.MessageContent) []thread.Message {
	t.Helper()
	out := make([]thread.Message, len(msgs))
	for i, m := range msgs {
		var err error
		if out[i], err = storedMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func FuzzCompactReference(f *testing.F) {
	for _, s := range []string{"", "short", `{"page":{"id":"pg_1","title":"About"}}`, strings.Repeat("é", 200), "a\nb\tc", "\xff\xfe"} {
		f.Add("createPage", s)
	}
	f.Fuzz(func(t *testing.T, name, content string) {
		ref := compactReference(name, content)
		if !strings.HasPrefix(ref, compactedPrefix) {
			t.Fatalf("no prefix: %q", ref)
		}
		body := strings.TrimPrefix(ref, compactedPrefix+"earlier result of "+name)
		if strings.ContainsAny(body, "\n\r") {
			t.Fatalf("not one line: %q", ref)
		}
		if len(body) > maxPreview+64 {
			t.Fatalf("reference of %d bytes", len(body))
		}
		if utf8.ValidString(content) && !utf8.ValidString(body) {
			t.Fatalf("split a rune: %q", body)
		}
		// compactHistory gives the same reference, and turns long
		// arguments into a small JSON object, without changing the
		// parts it was given.
		call := llms.ToolCall{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: content}}
		msgs := []llms.MessageContent{
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "c", Name: name, Content: content}}},
		}
		orig := slices.Clone(msgs)
		compactHistory(msgs)
		if got := msgs[1].Parts[0].(llms.ToolCallResponse).Content; got != ref {
			t.Fatalf("compactHistory: %q, want %q", got, ref)
		}
		args := msgs[0].Parts[0].(llms.ToolCall).FunctionCall.Arguments
		if len(content) > maxKeptArgs && (!json.Valid([]byte(args)) || args[0] != '{' || len(args) > 64) {
			t.Fatalf("compacted arguments %q", args)
		}
		if len(content) <= maxKeptArgs && args != content {
			t.Fatalf("short arguments changed: %q", args)
		}
		if orig[0].Parts[0].(llms.ToolCall).FunctionCall.Arguments != content || orig[1].Parts[0].(llms.ToolCallResponse).Content != content {
			t.Fatalf("compactHistory changed the parts it was given")
		}
		// capResult keeps at most limit bytes of the result, whole runes
		// only, and gives the original size.
		for _, limit := range []int{0, 1, 2, 3, 5, len(content) / 2, len(content)} {
			got := capResult(content, limit, "c1")
			if len(content) <= limit {
				if got != content {
					t.Fatalf("capResult(%d) changed a short result: %q", limit, got)
				}
				continue
			}
			const mark = "\n[agentloop: result truncated: "
			i := strings.LastIndex(got, mark)
			if i < 0 {
				t.Fatalf("capResult(%q, %d) = %q: no note", content, limit, got)
			}
			kept, note := got[:i], got[i+len(mark):]
			if len(kept) > limit || !strings.HasPrefix(content, kept) || !strings.HasPrefix(note, strconv.Itoa(len(content))+" bytes") || !strings.HasSuffix(note, "; full result: call c1]") {
				t.Fatalf("capResult(%q, %d) = %q", content, limit, got)
			}
			if utf8.ValidString(content) && !utf8.ValidString(kept) {
				t.Fatalf("capResult split a rune: %q", kept)
			}
		}
	})
}

// FuzzStoredMessage: every message the loop stores (a user's text, an
// assistant's text and tool calls, a tool result) comes back from its
// JSON record exactly, invalid UTF-8 aside (encoding/json replaces it).
func FuzzStoredMessage(f *testing.F) {
	f.Add("hello", "id", "name", `{"a":1}`, "content")
	f.Add("", "", "", "", "")
	f.Add("\x00\x1f\"\\<>&\u2028\u2029 é 中", "c\n1", "n\t", "{\"x\":\"\\u0000\"}", "\r")
	f.Fuzz(func(t *testing.T, text, id, name, args, content string) {
		call := llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
		msgs := []llms.MessageContent{
			llms.TextParts(llms.ChatMessageTypeHuman, text),
			llms.TextParts(llms.ChatMessageTypeAI, text),
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextContent{Text: text}, call, call}},
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id, Name: name, Content: content}}},
		}
		valid := true
		for _, s := range []string{text, id, name, args, content} {
			valid = valid && utf8.ValidString(s)
		}
		for i, m := range msgs {
			if i == 2 && text == "" {
				continue // an empty text part is not stored beside calls
			}
			s, err := storedMessage(m)
			if err != nil {
				t.Fatal(err)
			}
			data := mustMarshal(t, s)
			var back thread.Message
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatalf("message %d: %v: %s", i, err, data)
			}
			got, err := fromStored(back)
			if err != nil {
				t.Fatal(err)
			}
			if valid && !reflect.DeepEqual(got, m) {
				t.Fatalf("message %d:\n got %+v\nwant %+v\n(%s)", i, got, m, data)
			}
		}
	})
}
