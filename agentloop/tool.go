package agentloop

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	jsonschemago "github.com/google/jsonschema-go/jsonschema"

	"github.com/memlayer/memlayer/internal/toolargs"

	"github.com/tmc/langchaingo/tools"
)

// MaxToolNameLen is the longest tool name accepted, the limit of the
// OpenAI and Anthropic tool APIs.
const MaxToolNameLen = 64

// Tool is a function the model can call. Its arguments are a JSON object
// described by Parameters, a JSON Schema sent to the model verbatim and
// checked before Call runs.
//
// Call may be invoked concurrently with itself and with other tools of the
// same step (see Exclusive). Its string result is what the model sees; an
// error is shown to the model as the tool result ("error: ..."), and the
// run continues, so the error text should say what to fix.
//
// The layers' own functions (memorize, the scratchpad's update, ...) run
// one at a time in the order the model called them, beside the agent's
// tools, so what they write (a fact's ID) does not depend on scheduling.
// A tool made with [NewContextTool] that writes to the run's layers runs
// concurrently like any agent tool: make it Exclusive when the order of
// its writes matters.
type Tool struct {
	// Name is what the model calls the tool: [a-zA-Z0-9_-]{1,64}, unique
	// among the agent's tools and the layers' tools.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// Parameters is the JSON Schema of the arguments object. Nil means
	// {"type":"object"} (any object).
	Parameters json.RawMessage
	// Exclusive makes every call of this tool run alone, after the calls
	// before it in the step have finished and before the ones after it
	// start. Use it for tools whose effects other calls of the same step
	// may depend on. Other calls run concurrently, up to
	// Config.ToolConcurrency at a time.
	Exclusive bool
	// Call runs the tool with the raw JSON arguments (an object that
	// passed Parameters).
	Call func(ctx context.Context, args json.RawMessage) (string, error)
	// CallContext, when set, is called instead of Call, with the
	// [ToolContext] the call belongs to: the way a tool reaches the current
	// run's layers (see [NewContextTool]). A tool needs Call or CallContext.
	CallContext func(ctx context.Context, run *ToolContext, args json.RawMessage) (string, error)

	// paramsErr is why NewTool could not infer Parameters; New reports it.
	paramsErr error
}

// NewTool returns a typed tool: the arguments are decoded into an In and
// the result is returned as is when it is a string and as JSON otherwise.
// A tool that needs the current run's memory is made with [NewContextTool].
//
// parameters is the JSON Schema of In. Nil means the schema inferred from
// In by github.com/google/jsonschema-go: a struct's
// exported fields under their JSON names, with their types; fields
// without omitempty or omitzero are required; a field's jsonschema tag is
// its description; other properties are refused. An In that is not a
// struct or a map with string keys (any, json.RawMessage) accepts any
// object. A type the inference refuses (a func or chan field, a cycle)
// makes [New] fail with [ErrInvalidTool]. The inferred schema is compiled
// and checked like an explicit one.
func NewTool[In, Out any](name, description string, parameters json.RawMessage, fn func(ctx context.Context, in In) (Out, error)) Tool {
	call := typedCall(name, func(ctx context.Context, _ *ToolContext, in In) (Out, error) { return fn(ctx, in) })
	t := Tool{
		Name:        name,
		Description: description,
		Parameters:  parameters,
		Call:        func(ctx context.Context, args json.RawMessage) (string, error) { return call(ctx, nil, args) },
	}
	t.inferParams(reflect.TypeFor[In]())
	return t
}

// inferParams sets t.Parameters, when empty, to the JSON Schema [NewTool]
// infers for arguments of type in (see there); it stays empty when in
// accepts any object. An inference error is kept for [New] to report.
func (t *Tool) inferParams(in reflect.Type) {
	for in.Kind() == reflect.Pointer {
		in = in.Elem()
	}
	if len(t.Parameters) > 0 || in.Kind() != reflect.Struct && in.Kind() != reflect.Map || in == reflect.TypeFor[json.RawMessage]() {
		return
	}
	s, err := jsonschemago.ForType(in, nil)
	if err == nil {
		t.Parameters, err = json.Marshal(s)
	}
	if err != nil {
		t.Parameters, t.paramsErr = nil, fmt.Errorf("infer the parameters of %v: %w", in, err)
	}
}

// langchainParams is the schema offered for a langchaingo tools.Tool: one
// string field.
var langchainParams = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"The input for the tool."}},"required":["input"]}`)

// FromLangchain adapts a langchaingo [tools.Tool], whose input is a single
// string. The model is offered one string parameter, "input"; the tool
// receives the value of that field. If the model sends an object without a
// string "input" field, the tool receives the raw JSON arguments instead,
// so tools that parse JSON themselves still work.
func FromLangchain(t tools.Tool) Tool {
	return Tool{
		Name:        t.Name(),
		Description: t.Description(),
		Parameters:  langchainParams,
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			var in struct {
				Input *string `json:"input"`
			}
			if json.Unmarshal(args, &in) == nil && in.Input != nil {
				return t.Call(ctx, *in.Input)
			}
			return t.Call(ctx, string(args))
		},
	}
}

// ValidateToolName reports whether name is acceptable to provider tool
// APIs: 1 to 64 bytes of [a-zA-Z0-9_-].
func ValidateToolName(name string) error {
	if name == "" || len(name) > MaxToolNameLen {
		return fmt.Errorf("%w: name %q must be 1 to %d bytes", ErrInvalidTool, name, MaxToolNameLen)
	}
	if strings.Trim(name, toolNameChars) != "" {
		return fmt.Errorf("%w: name %q: only a-z, A-Z, 0-9, '_' and '-' are allowed", ErrInvalidTool, name)
	}
	return nil
}

// toolNameChars are the characters providers accept in a tool name.
const toolNameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

// ValidateArgs checks tool arguments (JSON) against a JSON Schema with
// santhosh-tekuri/jsonschema. The compiled schemas are cached, at most
// 256 of them (the most recently used), so a process that
// validates against ever new schemas stays bounded. Its error lists
// every violation. It fits layer.StackConfig.ValidateArgs, for stacks
// built outside an Agent (an Agent's stacks are always validated). It is
// safe for concurrent use.
func ValidateArgs(schema json.RawMessage, args []byte) error {
	return toolargs.Validate(schema, args)
}
