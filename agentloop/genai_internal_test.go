package agentloop

import (
	"context"
	"strconv"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/storage"
)

// TestGenAINames: the model's span name and attributes come from
// ModelName, else CallOptions' llms.WithModel; the provider from
// ModelProvider, else the langchaingo package of the model; neither is
// guessed for any other model.
func TestGenAINames(t *testing.T) {
	oa, err := openai.New(openai.WithToken("t"), openai.WithBaseURL("http://127.0.0.1:1/v1"))
	if err != nil {
		t.Fatal(err)
	}
	an, err := anthropic.New(anthropic.WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                  string
		cfg                   Config
		chat, model, provider string
	}{
		{"scripted, nothing said", Config{Model: agenttest.New()}, "chat", "", ""},
		{"openai, model from the call options", Config{Model: oa, CallOptions: []llms.CallOption{llms.WithModel("gpt-4o")}}, "chat gpt-4o", "gpt-4o", "openai"},
		{"anthropic, model named", Config{Model: an, ModelName: "claude-sonnet-4-5"}, "chat claude-sonnet-4-5", "claude-sonnet-4-5", "anthropic"},
		{"name wins over the call options", Config{Model: oa, ModelName: "a", CallOptions: []llms.CallOption{llms.WithModel("b")}}, "chat a", "a", "openai"},
		{"provider named", Config{Model: agenttest.New(), ModelProvider: "x_ai", ModelName: "grok-4"}, "chat grok-4", "grok-4", "x_ai"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGenAI(&tc.cfg)
			if g.chat != tc.chat || g.model != tc.model || g.provider != tc.provider {
				t.Errorf("chat %q model %q provider %q, want %q %q %q", g.chat, g.model, g.provider, tc.chat, tc.model, tc.provider)
			}
			kvs := g.chatAttrs("t1", 3)
			got := map[string]string{}
			for _, kv := range kvs {
				got[string(kv.Key)] = kv.Value.String()
			}
			if got["gen_ai.operation.name"] != "chat" || got["gen_ai.request.model"] != tc.model || got["gen_ai.provider.name"] != tc.provider || got["gen_ai.conversation.id"] != "t1" {
				t.Errorf("attributes %v", got)
			}
		})
	}
}

// TestGenAIToolSpanNames: a tool call's span is "execute_tool {name}";
// the names are cached, at most maxToolNames of them, however many names
// a model makes up.
func TestGenAIToolSpanNames(t *testing.T) {
	g := newGenAI(&Config{Model: agenttest.New()})
	if got := g.toolSpan("lookup"); got != "execute_tool lookup" {
		t.Fatalf("span name %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = g.toolSpan("lookup") }); n != 0 {
		t.Errorf("naming a known tool's span allocates %v times", n)
	}
	for i := range 2 * maxToolNames {
		if got, want := g.toolSpan("t"+strconv.Itoa(i)), "execute_tool t"+strconv.Itoa(i); got != want {
			t.Fatalf("span name %q, want %q", got, want)
		}
	}
	n := 0
	g.toolNames.Range(func(any, any) bool { n++; return true })
	if n != maxToolNames || g.toolCount != maxToolNames {
		t.Errorf("%d names cached (count %d), want %d", n, g.toolCount, maxToolNames)
	}
}

// TestIOSpansCostNothingUntraced: without a recording span (no provider
// installed), a search through the run's store allocates no more than
// one on the store itself; under a recording span it gets its span.
func TestIOSpansCostNothingUntraced(t *testing.T) {
	tel, err := newTelemetry(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := storage.NewMemoryStore()
	ctx := context.Background()
	coll := storage.IndexName("episodic-memory", storage.ThreadScope("t"), "log")
	if err := mem.Index(ctx, coll, storage.Document{ID: "a", Text: "create the about page"}); err != nil {
		t.Fatal(err)
	}
	wrapped, ok := tel.store(mem, nil).(storage.Searcher)
	if !ok {
		t.Fatal("the wrapped store is not a Searcher")
	}
	q := storage.Query{Text: "about page", K: 3}
	search := func(s storage.Searcher) func() {
		return func() {
			if hits, err := s.Search(ctx, coll, q); err != nil || len(hits) != 1 {
				t.Fatalf("Search = %v, %v", hits, err)
			}
		}
	}
	bare, through := testing.AllocsPerRun(50, search(mem)), testing.AllocsPerRun(50, search(wrapped))
	if through > bare {
		t.Errorf("a search through the run's store allocates %v times, on the store %v", through, bare)
	}
}
