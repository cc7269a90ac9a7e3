package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/storage"
)

// Example_traces exports a run's spans with OpenTelemetry's stdout
// exporter. The model call's span follows the GenAI semantic
// conventions ("chat gpt-4o", with the model, the provider and the
// tokens), as does each tool call's ("execute_tool lookup_order") and
// the run's ("invoke_agent support"). The exporter writes JSON with
// timestamps and IDs; the example prints each GenAI span's name and its
// gen_ai attributes. An OpenAI-compatible test server stands in for the
// provider.
func Example_traces() {
	srv := httptest.NewServer(scriptedOpenAI(
		`{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"tool_calls",
		  "message":{"role":"assistant","content":null,"tool_calls":[
		    {"id":"call_1","type":"function","function":{"name":"lookup_order","arguments":"{\"id\":\"A-17\"}"}}]}}],
		  "usage":{"prompt_tokens":120,"completion_tokens":18,"total_tokens":138}}`,
		`{"id":"c2","object":"chat.completion","created":2,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"stop",
		  "message":{"role":"assistant","content":"Order A-17 ships tomorrow."}}],
		  "usage":{"prompt_tokens":160,"completion_tokens":9,"total_tokens":169}}`,
	))
	defer srv.Close()
	model, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("t"))
	if err != nil {
		fmt.Println(err)
		return
	}

	var out bytes.Buffer
	exp, err := stdouttrace.New(stdouttrace.WithWriter(&out))
	if err != nil {
		fmt.Println(err)
		return
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	type order struct {
		ID string `json:"id"`
	}
	a, err := agentloop.New(agentloop.Config{
		Name:        "support",
		Model:       model,
		CallOptions: []llms.CallOption{llms.WithModel("gpt-4o")}, // names the model in the spans too
		Tools: []agentloop.Tool{agentloop.NewTool("lookup_order", "Look up an order.", nil,
			func(_ context.Context, o order) (string, error) {
				return `{"id":"` + o.ID + `","ships":"tomorrow"}`, nil
			})},
		Store:          storage.NewMemoryStore(),
		TracerProvider: tp,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := a.Run(context.Background(), agentloop.RunInput{ThreadID: "thread-1", Input: "When does order A-17 ship?"}); err != nil {
		fmt.Println(err)
		return
	}
	if err := printGenAISpans(&out); err != nil {
		fmt.Println(err)
	}
	// Output:
	// chat gpt-4o
	//   gen_ai.conversation.id = thread-1
	//   gen_ai.operation.name = chat
	//   gen_ai.provider.name = openai
	//   gen_ai.request.model = gpt-4o
	//   gen_ai.response.finish_reasons = ["tool_calls"]
	//   gen_ai.usage.input_tokens = 120
	//   gen_ai.usage.output_tokens = 18
	// execute_tool lookup_order
	//   gen_ai.operation.name = execute_tool
	//   gen_ai.tool.call.id = call_1
	//   gen_ai.tool.name = lookup_order
	//   gen_ai.tool.type = function
	// chat gpt-4o
	//   gen_ai.conversation.id = thread-1
	//   gen_ai.operation.name = chat
	//   gen_ai.provider.name = openai
	//   gen_ai.request.model = gpt-4o
	//   gen_ai.response.finish_reasons = ["stop"]
	//   gen_ai.usage.input_tokens = 160
	//   gen_ai.usage.output_tokens = 9
	// invoke_agent support
	//   gen_ai.agent.name = support
	//   gen_ai.conversation.id = thread-1
	//   gen_ai.operation.name = invoke_agent
}

// printGenAISpans reads the spans the stdout exporter wrote, one JSON
// object each, and prints those with gen_ai attributes: the name, then
// the gen_ai attributes by key. Times and IDs, which differ at every
// run, are left out.
func printGenAISpans(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var span struct {
			Name       string
			Attributes []struct {
				Key   string
				Value struct{ Value any }
			}
		}
		if err := dec.Decode(&span); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		var lines []string
		for _, kv := range span.Attributes {
			if strings.HasPrefix(kv.Key, "gen_ai.") {
				v, _ := json.Marshal(kv.Value.Value)
				lines = append(lines, "  "+kv.Key+" = "+strings.Trim(string(v), `"`))
			}
		}
		if len(lines) == 0 {
			continue
		}
		slices.Sort(lines)
		fmt.Println(span.Name)
		fmt.Println(strings.Join(lines, "\n"))
	}
}

// scriptedOpenAI answers OpenAI chat completions with responses, in
// order.
func scriptedOpenAI(responses ...string) http.Handler {
	var mu sync.Mutex
	n := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if n >= len(responses) {
			http.Error(w, "script exhausted", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, responses[n])
		n++
	})
}
