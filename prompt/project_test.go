package prompt

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
)

// unit counts every text as 1 token per byte, so costs in tests are easy
// to read.
var unit = CounterFunc(func(s string) int { return len(s) })

func human(text string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeHuman, text) }
func ai(text string) llms.MessageContent    { return llms.TextParts(llms.ChatMessageTypeAI, text) }

func call(ids ...string) llms.MessageContent {
	m := llms.MessageContent{Role: llms.ChatMessageTypeAI}
	for _, id := range ids {
		m.Parts = append(m.Parts, llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"}})
	}
	return m
}

func result(id, content string) llms.MessageContent {
	return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id, Name: "f", Content: content}}}
}

// label names a message for comparisons: its text, or call:ID / result:ID
// for each tool part.
func label(m llms.MessageContent) string {
	var parts []string
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			parts = append(parts, p.Text)
		case llms.ToolCall:
			parts = append(parts, "call:"+p.ID)
		case llms.ToolCallResponse:
			parts = append(parts, "result:"+p.ToolCallID)
		}
	}
	return strings.Join(parts, "+")
}

func labels(ms []llms.MessageContent) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, label(m))
	}
	return out
}

func itemTexts(rs []layer.Recalled) []string {
	var out []string
	for _, r := range rs {
		for _, it := range r.Items {
			out = append(out, it.Text)
		}
	}
	return out
}

// tenMessages is noetic's projector fixture: msg-0 … msg-9, same cost each.
func tenMessages() []llms.MessageContent {
	var ms []llms.MessageContent
	for i := range 10 {
		ms = append(ms, human(fmt.Sprintf("msg-%d", i)))
	}
	return ms
}

var msgCost = CountMessage(unit, human("msg-0")) // every msg-N costs the same

// TestProjectNoetic mirrors noetic's projector checklist V1–V4. noetic's
// windowSize N (keep the last N history items) maps to a ProjectHistory
// cap of N messages' cost; windowSize 0 ("no window") maps to +Inf.
func TestProjectNoetic(t *testing.T) {
	t.Run("V1 system then layers then history", func(t *testing.T) {
		c, err := New(Config{Instructions: "SYSTEM"})
		if err != nil {
			t.Fatal(err)
		}
		sys, err := c.Compile([]layer.Recalled{
			{ID: "early", Items: []layer.Item{{Text: "EARLY"}}},
			{ID: "late", Items: []layer.Item{{Text: "LATE"}}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sys != "SYSTEM\n\nEARLY\n\nLATE" {
			t.Errorf("system prompt = %q", sys)
		}
	})

	history := []struct {
		name string
		msgs []llms.MessageContent
		cap  int
		want []string
	}{
		{"V2 window 3", tenMessages(), 3 * msgCost, []string{"msg-7", "msg-8", "msg-9"}},
		{"V2 window 3 with slack", tenMessages(), 4*msgCost - 1, []string{"msg-7", "msg-8", "msg-9"}},
		{"V2 window 0 keeps everything", tenMessages(), layer.Unbounded, labels(tenMessages())},
		{"V2 window 100 keeps everything", tenMessages(), 100 * msgCost, labels(tenMessages())},
		{"V2 empty input", nil, 1000, nil},
		{"V2 truncate with a big budget keeps all 5", tenMessages()[:5], 1e6, labels(tenMessages()[:5])},
	}
	for _, tt := range history {
		t.Run(tt.name, func(t *testing.T) {
			got := labels(ProjectHistory(tt.msgs, tt.cap, unit))
			if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("V3 two layer items and window 2", func(t *testing.T) {
		layers := ProjectLayers([]layer.Recalled{
			{ID: "a", Items: []layer.Item{{Text: "dev-1"}}},
			{ID: "b", Items: []layer.Item{{Text: "dev-2"}}},
		}, 1000, unit)
		hist := ProjectHistory(tenMessages(), 2*msgCost, unit)
		got := append(itemTexts(layers), labels(hist)...)
		if want := []string{"dev-1", "dev-2", "msg-8", "msg-9"}; !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	})

	huge := strings.Repeat("x", 5000)
	item := func(text string) layer.Item { return layer.Item{Text: text} }
	v4 := []struct {
		name  string
		items []layer.Item
		cap   int
		want  []string
	}{
		{"V4 huge then small", []layer.Item{item(huge), item("small")}, 1000, []string{"small"}},
		{"V4 cost minus one", []layer.Item{item("abcde")}, 4, nil},
		{"V4 cost exactly", []layer.Item{item("abcde")}, 5, []string{"abcde"}},
		{"V4 cost plus one", []layer.Item{item("abcde")}, 6, []string{"abcde"}},
		{"V4 fits, huge, fits", []layer.Item{item("one"), item(huge), item("three")}, 100, []string{"one", "three"}},
		{"V4 equal cost, room for one", []layer.Item{item("first"), item("secnd")}, 7, []string{"first"}},
		{"given token counts win over the counter", []layer.Item{{Text: "short", Tokens: 50}, item("tiny")}, 20, []string{"tiny"}},
	}
	for _, tt := range v4 {
		t.Run(tt.name, func(t *testing.T) {
			got := itemTexts(ProjectLayers([]layer.Recalled{{ID: "l", Items: tt.items}}, tt.cap, unit))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestProjectLayersAcrossLayers(t *testing.T) {
	in := []layer.Recalled{
		{ID: "a", Items: []layer.Item{{Text: "aaaa"}, {Text: "aaaaaaaaaa"}}},
		{ID: "b", Items: []layer.Item{{Text: "bbb"}}},
		{ID: "c", Items: []layer.Item{{Text: "cc"}}},
	}
	before := fmt.Sprint(in)
	got := ProjectLayers(in, 10, unit)
	// In the order given: a(4) fits, a(10) skipped, b(3) fits, c(2) fits.
	if ids, texts := []string{got[0].ID, got[1].ID, got[2].ID}, itemTexts(got); len(got) != 3 ||
		!slices.Equal(ids, []string{"a", "b", "c"}) || !slices.Equal(texts, []string{"aaaa", "bbb", "cc"}) {
		t.Errorf("got %+v", got)
	}
	if fmt.Sprint(in) != before {
		t.Errorf("input modified: %v", in)
	}
	// A layer whose items are all dropped disappears.
	if got := ProjectLayers(in, 2, unit); len(got) != 1 || got[0].ID != "c" {
		t.Errorf("cap 2: got %+v, want only c", got)
	}
	for _, bad := range []int{-1, math.MinInt} {
		if got := ProjectLayers(in, bad, unit); len(got) != 0 {
			t.Errorf("cap %v: got %+v, want nothing", bad, got)
		}
	}
	if got := ProjectLayers(in, layer.Unbounded, nil); len(itemTexts(got)) != 4 {
		t.Errorf("cap layer.Unbounded: got %+v, want all 4 items", got)
	}
}

func TestProjectHistoryToolPairs(t *testing.T) {
	conv := []llms.MessageContent{
		human("q1"),
		call("c1", "c2"),
		result("c1", strings.Repeat("r", 40)),
		result("c2", "ok"),
		ai("a1"),
	}
	whole := 0
	for _, m := range conv {
		whole += CountMessage(unit, m)
	}
	tail := CountMessage(unit, conv[4])
	tests := []struct {
		name string
		msgs []llms.MessageContent
		cap  int
		want []string
	}{
		{"everything fits", conv, whole, []string{"q1", "call:c1+call:c2", "result:c1", "result:c2", "a1"}},
		{"no room for the question", conv, whole - 1, []string{"call:c1+call:c2", "result:c1", "result:c2", "a1"}},
		// Room for the results but not their call: the pair goes as a whole.
		{"pair does not fit", conv, whole - CountMessage(unit, conv[0]) - 1, []string{"a1"}},
		{"only the answer", conv, tail, []string{"a1"}},
		{"nothing", conv, tail - 1, nil},
		{"unanswered call is stripped", []llms.MessageContent{human("q"), call("c9"), ai("a")}, 1e6, []string{"q", "a"}},
		{"orphan result is stripped", []llms.MessageContent{result("c7", "x"), human("q")}, 1e6, []string{"q"}},
		{"result before its call is stripped", []llms.MessageContent{result("c1", "x"), call("c1"), human("q")}, 1e6, []string{"q"}},
		{"partly answered call keeps its text and answered part", []llms.MessageContent{
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextContent{Text: "thinking"}, call("c1").Parts[0], call("c2").Parts[0]}},
			result("c2", "x"),
		}, 1e6, []string{"thinking+call:c2", "result:c2"}},
		{"duplicate result is stripped", []llms.MessageContent{call("c1"), result("c1", "x"), result("c1", "y")}, 1e6, []string{"call:c1", "result:c1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fmt.Sprint(tt.msgs)
			got := ProjectHistory(tt.msgs, tt.cap, unit)
			if l := labels(got); !slices.Equal(l, tt.want) && !(len(l) == 0 && len(tt.want) == 0) {
				t.Errorf("got %q, want %q", l, tt.want)
			}
			if fmt.Sprint(tt.msgs) != before {
				t.Errorf("input modified")
			}
			assertPaired(t, got)
		})
	}
}

// assertPaired fails if a tool call and its result are not both present,
// call first.
func assertPaired(t testing.TB, msgs []llms.MessageContent) {
	t.Helper()
	calls := map[string]int{}
	results := map[string]int{}
	for i, m := range msgs {
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				if _, dup := calls[p.ID]; dup {
					t.Errorf("call %q twice", p.ID)
				}
				calls[p.ID] = i
			case llms.ToolCallResponse:
				if _, dup := results[p.ToolCallID]; dup {
					t.Errorf("result %q twice", p.ToolCallID)
				}
				results[p.ToolCallID] = i
			}
		}
	}
	for id, ci := range calls {
		if ri, ok := results[id]; !ok || ri <= ci {
			t.Errorf("call %q at %d has no later result", id, ci)
		}
	}
	for id := range results {
		if _, ok := calls[id]; !ok {
			t.Errorf("result %q has no call", id)
		}
	}
}

func TestEstimate(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"abcd", 1},
		{"abcde", 2},
		{strings.Repeat("x", 400), 100},
		{"日本語", 3},
		{"café", 2},     // "caf" 1 + "é" 1
		{"\xff\xfe", 2}, // invalid bytes count one each
		{"ab日本cd語", 4},  // 4 ASCII bytes -> 1, three runes -> 3
	}
	for _, tt := range tests {
		if got := Estimate.Count(tt.text); got != tt.want {
			t.Errorf("Estimate(%q) = %d, want %d", tt.text, got, tt.want)
		}
	}
}

func TestCountMessage(t *testing.T) {
	m := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
		llms.TextContent{Text: "abc"},
		llms.ToolCall{ID: "x", FunctionCall: &llms.FunctionCall{Name: "fn", Arguments: "{}"}},
		llms.ToolCall{ID: "y"}, // no function: counts nothing
		llms.ToolCallResponse{ToolCallID: "x", Name: "fn", Content: "done"},
		llms.ImageURLContent{URL: "http://i", Detail: "low"},
		llms.BinaryContent{Data: make([]byte, 8)},
	}}
	want := MessageOverhead + 3 + (2 + 2) + (2 + 4) + (8 + 3) + 2
	if got := CountMessage(unit, m); got != want {
		t.Errorf("CountMessage = %d, want %d", got, want)
	}
	if got := CountMessage(nil, human("abcdefgh")); got != MessageOverhead+2 {
		t.Errorf("CountMessage(nil counter) = %d, want %d", got, MessageOverhead+2)
	}
}

func TestProjectLayersWithin(t *testing.T) {
	in := []layer.Recalled{
		{ID: "a", Items: []layer.Item{{Text: "aaaa"}, {Text: "aaaaaa"}, {Text: "aa"}}},
		{ID: "b", Items: []layer.Item{{Text: "bbbbbbbbbb"}}},
		{ID: "c", Items: []layer.Item{{Text: "ccc"}}},
	}
	tests := []struct {
		name    string
		budgets map[string]int
		cap     int
		want    []string
	}{
		{"no per-layer caps", nil, 100, []string{"aaaa", "aaaaaa", "aa", "bbbbbbbbbb", "ccc"}},
		// a: 4 fits its 7, 6 would make 10 > 7 (skipped), 2 fits (6); b over its 5; c uncapped.
		{"per-layer caps skip items on their own", map[string]int{"a": 7, "b": 5}, 100, []string{"aaaa", "aa", "ccc"}},
		{"total cap still applies", map[string]int{"a": 100}, 8, []string{"aaaa", "aa"}},
		{"zero budget keeps nothing of that layer", map[string]int{"b": 0}, 100, []string{"aaaa", "aaaaaa", "aa", "ccc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := itemTexts(ProjectLayersWithin(in, tt.budgets, tt.cap, unit))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
