package agentloop_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/memlayer/memlayer/agentloop"
	"github.com/memlayer/memlayer/agentloop/agenttest"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// TestOperate20_SpansAndMetricsOfARun wires the OpenTelemetry SDK's
// in-memory span exporter and a manual metric reader, runs an agent with
// a layer and a tool over two steps, and checks the span tree (run >
// step > model, tool and hook), the attributes (IDs and names only: no
// prompt text or tool result in any of them) and the metrics.
func TestOperate20_SpansAndMetricsOfARun(t *testing.T) {
	const secret = "jane.secret@example.com"
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	wm, err := workingmemory.New(workingmemory.Config{})
	if err != nil {
		t.Fatal(err)
	}
	model := agenttest.New(
		agenttest.Reply(agenttest.Calls(agenttest.Call("lookup", `{}`))),
		agenttest.Reply(agenttest.Text("Found it.")),
	)
	a, err := agentloop.New(agentloop.Config{
		Model:          model,
		Layers:         []layer.Layer{wm, layer.Text(layer.Spec{ID: "rules"}, "Be brief.")},
		Tools:          []agentloop.Tool{agentloop.NewTool("lookup", "Look up.", nil, func(context.Context, struct{}) (string, error) { return "result for " + secret, nil })},
		Store:          storage.NewMemoryStore(),
		TracerProvider: tp,
		MeterProvider:  mp,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(t.Context(), agentloop.RunInput{ThreadID: "t1", ResourceID: "u1", Input: "Find " + secret}); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	count := map[string]int{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
		count[s.Name]++
		for _, kv := range s.Attributes {
			if strings.Contains(kv.Value.String(), "@") {
				t.Errorf("span %s attribute %s = %q holds text from the conversation", s.Name, kv.Key, kv.Value.String())
			}
		}
	}
	const runSpan, modelSpan, toolSpan = "invoke_agent agent", "chat", "execute_tool lookup"
	if count[runSpan] != 1 || count["memlayer.step"] != 2 || count[modelSpan] != 2 || count[toolSpan] != 1 || count["memlayer.hook"] == 0 ||
		count["memlayer.checkpoint.load"] != 1 || count["memlayer.checkpoint.save"] != 2 || count["memlayer.audit.commit"] != 1 {
		t.Fatalf("spans %v", count)
	}
	parent := func(s tracetest.SpanStub) string { return byID[s.Parent.SpanID().String()].Name }
	for _, s := range spans {
		want := map[string]string{"memlayer.step": runSpan, modelSpan: "memlayer.step", toolSpan: "memlayer.step", "memlayer.hook": "memlayer.step",
			"memlayer.checkpoint.load": runSpan, "memlayer.checkpoint.save": "memlayer.step", "memlayer.audit.commit": runSpan}[s.Name]
		if s.Name == "memlayer.hook" && parent(s) == runSpan && hasAttr(s.Attributes, "memlayer.hook", "init") {
			continue // Init's hooks run before the first step, under the run
		}
		if want != "" && parent(s) != want {
			t.Errorf("span %s has parent %q, want %s", s.Name, parent(s), want)
		}
	}
	run := spans[len(spans)-1]
	if run.Name != runSpan || !hasAttr(run.Attributes, "memlayer.thread_id", "t1") || !hasAttr(run.Attributes, "memlayer.resource_id", "u1") ||
		!hasAttr(run.Attributes, "gen_ai.operation.name", "invoke_agent") || !hasAttr(run.Attributes, "gen_ai.agent.name", "agent") ||
		!hasAttr(run.Attributes, "gen_ai.conversation.id", "t1") {
		t.Errorf("run span %s %v", run.Name, run.Attributes)
	}
	for _, s := range spans {
		switch s.Name {
		case modelSpan:
			// The scripted model reports no usage: memlayer's estimate, said so.
			if !hasAttr(s.Attributes, "gen_ai.operation.name", "chat") || !hasAttr(s.Attributes, "memlayer.usage.estimated", "true") ||
				!positive(s.Attributes, "gen_ai.usage.input_tokens") || !positive(s.Attributes, "gen_ai.usage.output_tokens") {
				t.Errorf("model span %v", s.Attributes)
			}
		case toolSpan:
			if !hasAttr(s.Attributes, "gen_ai.operation.name", "execute_tool") || !hasAttr(s.Attributes, "gen_ai.tool.name", "lookup") ||
				!has(s.Attributes, "gen_ai.tool.call.id") {
				t.Errorf("tool span %v", s.Attributes)
			}
		}
	}
	var hookWithLayer bool
	for _, s := range spans {
		if s.Name == "memlayer.hook" && hasAttr(s.Attributes, "memlayer.layer", workingmemory.DefaultID) && hasAttr(s.Attributes, "memlayer.hook", "recall") {
			hookWithLayer = true
		}
	}
	if !hookWithLayer {
		t.Error("no hook span names the scratchpad's recall")
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(t.Context(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			got[m.Name] = true
			if m.Name == "memlayer.layer.hook.duration" {
				h := m.Data.(metricdata.Histogram[float64])
				var recall uint64
				for _, dp := range h.DataPoints {
					hook, _ := dp.Attributes.Value("memlayer.hook")
					id, _ := dp.Attributes.Value("memlayer.layer")
					if hook.AsString() == "recall" && id.AsString() == workingmemory.DefaultID {
						recall += dp.Count
					}
				}
				if recall != 2 {
					t.Errorf("the scratchpad's recall recorded %d times, want 2 (one per step)", recall)
				}
			}
			if m.Name == "memlayer.layer.tokens" {
				var rules int64
				for _, dp := range m.Data.(metricdata.Histogram[int64]).DataPoints {
					if id, _ := dp.Attributes.Value("memlayer.layer"); id.AsString() == "rules" {
						rules += dp.Sum
					}
				}
				if rules <= 0 {
					t.Errorf("the rules layer's tokens were not recorded")
				}
			}
		}
	}
	for _, name := range []string{"memlayer.layer.hook.duration", "memlayer.model.duration", "memlayer.tool.duration", "memlayer.model.tokens", "memlayer.layer.tokens"} {
		if !got[name] {
			t.Errorf("metric %s not recorded (have %v)", name, got)
		}
	}
}

// has reports whether kvs has key, with a non-empty value.
func has(kvs []attribute.KeyValue, key string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key && kv.Value.String() != "" {
			return true
		}
	}
	return false
}

// positive reports whether kvs has key, with a positive integer value.
func positive(kvs []attribute.KeyValue, key string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key && kv.Value.AsInt64() > 0 {
			return true
		}
	}
	return false
}

func hasAttr(kvs []attribute.KeyValue, key, value string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == key && kv.Value.String() == value {
			return true
		}
	}
	return false
}
