package agentloop

import (
	"context"
	"reflect"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Span names of the GenAI operations, per OpenTelemetry's GenAI semantic
// conventions: the operation, then what it acts on.
const (
	opChat        = "chat"
	opExecuteTool = "execute_tool"
	opInvokeAgent = "invoke_agent"
)

// Span names of memlayer's own I/O.
const (
	spanStep       = "memlayer.step"
	spanHook       = "memlayer.hook"
	spanLoad       = "memlayer.checkpoint.load"
	spanCheckpoint = "memlayer.checkpoint.save"
	spanAudit      = "memlayer.audit.commit"
	spanSearch     = "memlayer.search"
	spanIndex      = "memlayer.index"
	spanUnindex    = "memlayer.unindex"
)

// Attribute keys of memlayer's I/O spans.
const (
	attrEstimated = attribute.Key("memlayer.usage.estimated")
	attrK         = attribute.Key("memlayer.search.k")
	attrHits      = attribute.Key("memlayer.search.hits")
	attrDocs      = attribute.Key("memlayer.index.documents")
	attrEntries   = attribute.Key("memlayer.audit.entries")
)

// providers maps langchaingo's model packages to the gen_ai.provider.name
// each reports.
var providers = map[string]string{
	lc + "openai":          semconv.GenAIProviderNameOpenAI.Value.AsString(),
	lc + "anthropic":       semconv.GenAIProviderNameAnthropic.Value.AsString(),
	lc + "googleai":        semconv.GenAIProviderNameGCPGemini.Value.AsString(),
	lc + "googleai/vertex": semconv.GenAIProviderNameGCPVertexAI.Value.AsString(),
	lc + "googleai/palm":   semconv.GenAIProviderNameGCPVertexAI.Value.AsString(),
	lc + "bedrock":         semconv.GenAIProviderNameAWSBedrock.Value.AsString(),
	lc + "mistral":         semconv.GenAIProviderNameMistralAI.Value.AsString(),
	lc + "cohere":          semconv.GenAIProviderNameCohere.Value.AsString(),
	lc + "watsonx":         semconv.GenAIProviderNameIBMWatsonxAI.Value.AsString(),
	// Providers the conventions do not list go by their own names.
	lc + "ollama":      "ollama",
	lc + "huggingface": "huggingface",
	lc + "cloudflare":  "cloudflare",
	lc + "llamafile":   "llamafile",
}

// lc is the path of langchaingo's model packages.
const lc = "github.com/tmc/langchaingo/llms/"

// genAI is what an agent's model spans say of its model, per the GenAI
// semantic conventions. It is fixed when the agent is made.
type genAI struct {
	// model is gen_ai.request.model, "" when unknown.
	model string
	// provider is gen_ai.provider.name, "" when unknown.
	provider string
	// chat is the model call's span name: "chat {model}", or "chat".
	chat string
	// agent is the run's span name: "invoke_agent {agent name}".
	agent string
	// toolNames caches "execute_tool {name}" by tool name (see toolSpan).
	toolNames sync.Map
	toolCount int
	toolMu    sync.Mutex
}

// maxToolNames bounds the span names genAI caches: a model may send any
// name.
const maxToolNames = 256

// newGenAI reads cfg's model name and provider: cfg.ModelName, else the
// model Config.CallOptions set; cfg.ModelProvider, else the provider of
// the langchaingo package cfg.Model comes from.
func newGenAI(cfg *Config) *genAI {
	g := &genAI{model: cfg.ModelName, provider: cfg.ModelProvider, agent: opInvokeAgent + " " + cfg.Name}
	if g.model == "" {
		var o llms.CallOptions
		for _, opt := range cfg.CallOptions {
			opt(&o)
		}
		g.model = o.Model
	}
	if g.provider == "" {
		g.provider = providerOf(cfg.Model)
	}
	g.chat = opChat
	if g.model != "" {
		g.chat += " " + g.model
	}
	return g
}

// providerOf returns the gen_ai.provider.name of a langchaingo model, ""
// for any other.
func providerOf(m llms.Model) string {
	t := reflect.TypeOf(m)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return ""
	}
	return providers[t.PkgPath()]
}

// toolSpan returns the span name of a call of the tool name, "execute_tool
// {name}", cached so that naming the span allocates nothing once a tool
// has been called.
func (g *genAI) toolSpan(name string) string {
	if s, ok := g.toolNames.Load(name); ok {
		return s.(string)
	}
	s := opExecuteTool + " " + name
	g.toolMu.Lock()
	defer g.toolMu.Unlock()
	if g.toolCount < maxToolNames {
		if _, loaded := g.toolNames.LoadOrStore(name, s); !loaded {
			g.toolCount++
		}
	}
	return s
}

// runAttrs are the attributes of a run's span.
func (g *genAI) runAttrs(in *RunInput, name string) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(name), semconv.GenAIConversationID(in.ThreadID),
		attrThread.String(in.ThreadID), attrResource.String(in.ResourceID), attrDepth.Int(0),
	}
}

// chatAttrs are the attributes a model call's span starts with.
func (g *genAI) chatAttrs(threadID string, step int) []attribute.KeyValue {
	kvs := make([]attribute.KeyValue, 0, 5)
	kvs = append(kvs, semconv.GenAIOperationNameChat)
	if g.model != "" {
		kvs = append(kvs, semconv.GenAIRequestModel(g.model))
	}
	if g.provider != "" {
		kvs = append(kvs, semconv.GenAIProviderNameKey.String(g.provider))
	}
	return append(kvs, semconv.GenAIConversationID(threadID), attrStep.Int(step))
}

// answered sets a model call's outcome on its span: the tokens (with
// whether memlayer estimated them, when the provider reported none) and
// why the model stopped.
func answered(span trace.Span, u Usage, estimated bool, stop string) {
	if !span.IsRecording() {
		return
	}
	kvs := [4]attribute.KeyValue{
		semconv.GenAIUsageInputTokens(u.PromptTokens), semconv.GenAIUsageOutputTokens(u.CompletionTokens),
		attrEstimated.Bool(estimated),
	}
	n := 3
	if stop != "" {
		kvs[3], n = semconv.GenAIResponseFinishReasons(stop), 4
	}
	span.SetAttributes(kvs[:n]...)
}

// toolAttrs are the attributes of a tool call's span.
func toolAttrs(c *call, step int) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(c.name), semconv.GenAIToolCallID(c.ID),
		semconv.GenAIToolType("function"), attrStep.Int(step),
	}
}

// child starts a span of memlayer's own I/O under ctx's span, when that
// span records (otherwise there is no trace to join, and nothing is
// allocated); attrs are built only then.
func (t *telemetry) child(ctx context.Context, name string, attrs func() []attribute.KeyValue) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, noSpan
	}
	return t.start(ctx, name, attrs)
}

// noSpan is the span of I/O that no trace records.
var noSpan = trace.SpanFromContext(context.Background())

// layerOf returns the layer whose key or collection name is key: the
// second part of a "layers/{id}/…" name, else its first part.
func layerOf(key string) string {
	owner, rest, _ := strings.Cut(key, "/")
	if owner == "layers" {
		owner, _, _ = strings.Cut(rest, "/")
	}
	return owner
}
