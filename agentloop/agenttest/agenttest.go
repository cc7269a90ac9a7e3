// Package agenttest provides a scripted [llms.Model] for tests and
// examples: a model whose every answer is computed by Go code from the
// prompt it is given. Unlike langchaingo's llms/fake it can call tools,
// and because a step sees the whole request (the system prompt with the
// layers' memory, the history, the tool definitions), a script can prove
// that memory reached the model: find an ID in the system prompt with a
// regular expression, and use it in the next tool call.
//
// A [Model] is safe for concurrent use; it records every request.
package agenttest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"
)

// ErrExhausted is returned when a [Model] is called more times than it
// has steps.
var ErrExhausted = errors.New("agenttest: script exhausted")

// Request is one GenerateContent call as the model saw it.
type Request struct {
	// N counts calls to the model, from 0.
	N        int
	Messages []llms.MessageContent
	Options  llms.CallOptions
}

// System returns the text of the request's system messages.
func (r Request) System() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == llms.ChatMessageTypeSystem {
			b.WriteString(text(m))
		}
	}
	return b.String()
}

// Sent returns every part of every message of the request (text, tool
// calls, tool results), each formatted with %v on a line of its own:
// what a test searches to tell whether a text reached the model at all.
func (r Request) Sent() string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, part := range m.Parts {
			fmt.Fprintf(&b, "%v\n", part)
		}
	}
	return b.String()
}

// LastUser returns the text of the last user message.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llms.ChatMessageTypeHuman {
			return text(r.Messages[i])
		}
	}
	return ""
}

// ToolResults returns the tool results that follow the last AI message:
// the results of the model's previous step, or nil when the last message
// is not a tool result.
func (r Request) ToolResults() []llms.ToolCallResponse {
	var out []llms.ToolCallResponse
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == llms.ChatMessageTypeTool; i-- {
		for _, p := range r.Messages[i].Parts {
			if tr, ok := p.(llms.ToolCallResponse); ok {
				out = append([]llms.ToolCallResponse{tr}, out...)
			}
		}
	}
	return out
}

// ToolNames returns the names of the tools offered in the request.
func (r Request) ToolNames() []string {
	out := make([]string, 0, len(r.Options.Tools))
	for _, t := range r.Options.Tools {
		if t.Function != nil {
			out = append(out, t.Function.Name)
		}
	}
	return out
}

// HasTool reports whether a tool of that name is offered.
func (r Request) HasTool(name string) bool { return slices.Contains(r.ToolNames(), name) }

func text(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// Step computes one answer from a request.
type Step func(ctx context.Context, r Request) (*llms.ContentChoice, error)

// Model is a scripted llms.Model. The zero value is not usable; call
// [New] or [NewFunc].
type Model struct {
	mu       sync.Mutex
	steps    []Step
	fn       Step
	requests []Request
}

// New returns a model that answers the n-th call with steps[n] and fails
// with ErrExhausted after the last step.
func New(steps ...Step) *Model { return &Model{steps: steps} }

// NewFunc returns a model that answers every call with fn: a policy that
// decides from the request alone.
func NewFunc(fn Step) *Model { return &Model{fn: fn} }

// Requests returns a copy of every request received so far.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

// Reset forgets the recorded requests and restarts the script.
func (m *Model) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = nil
}

// GenerateContent implements llms.Model. Tool calls without an ID get
// "call_<n>_<i>". When the call options carry a streaming func, the
// answer's text is streamed to it word by word.
func (m *Model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	req, step, err := m.record(msgs, opts)
	if err != nil {
		return nil, err
	}
	n := req.N
	choice, err := step(ctx, req)
	if err != nil {
		return nil, err
	}
	if choice == nil {
		choice = &llms.ContentChoice{}
	}
	complete(choice, n)
	if opts.StreamingFunc != nil {
		if err := stream(ctx, opts.StreamingFunc, choice.Content); err != nil {
			return nil, err
		}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}, nil
}

// stream sends text to fn word by word.
func stream(ctx context.Context, fn func(context.Context, []byte) error, text string) error {
	if text == "" {
		return nil
	}
	for _, w := range strings.SplitAfter(text, " ") {
		if err := fn(ctx, []byte(w)); err != nil {
			return err
		}
	}
	return nil
}

// record records a request and returns it with the step that answers
// it. ErrExhausted means the scripted steps ran out.
func (m *Model) record(msgs []llms.MessageContent, opts llms.CallOptions) (Request, Step, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.requests)
	req := Request{N: n, Messages: slices.Clone(msgs), Options: opts}
	m.requests = append(m.requests, req)
	if m.fn != nil {
		return req, m.fn, nil
	}
	if n >= len(m.steps) {
		return req, nil, fmt.Errorf("%w: call %d, %d steps", ErrExhausted, n, len(m.steps))
	}
	return req, m.steps[n], nil
}

// complete fills in what the answer to call n left out, as a provider
// would: an ID "call_<n>_<i>" for each tool call without one, and a stop
// reason, "tool_calls" when there are calls and "stop" otherwise.
func complete(choice *llms.ContentChoice, n int) {
	for i := range choice.ToolCalls {
		if choice.ToolCalls[i].ID == "" {
			choice.ToolCalls[i].ID = "call_" + strconv.Itoa(n) + "_" + strconv.Itoa(i)
		}
	}
	switch {
	case choice.StopReason != "":
	case len(choice.ToolCalls) > 0:
		choice.StopReason = "tool_calls"
	default:
		choice.StopReason = "stop"
	}
}

// Call implements the deprecated part of llms.Model.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// Text returns an answer without tool calls.
func Text(s string) *llms.ContentChoice { return &llms.ContentChoice{Content: s} }

// Calls returns an answer that calls the given tools.
func Calls(calls ...llms.ToolCall) *llms.ContentChoice {
	return &llms.ContentChoice{ToolCalls: calls}
}

// Call returns a tool call of name with args encoded as JSON (a string or
// json.RawMessage is used as is).
func Call(name string, args any) llms.ToolCall {
	var s string
	switch a := args.(type) {
	case string:
		s = a
	case json.RawMessage:
		s = string(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			panic(fmt.Sprintf("agenttest: Call(%q): %v", name, err))
		}
		s = string(b)
	}
	return llms.ToolCall{Type: "function", FunctionCall: &llms.FunctionCall{Name: name, Arguments: s}}
}

// Reply returns a Step that always gives choice (a copy of it).
func Reply(choice *llms.ContentChoice) Step {
	return func(context.Context, Request) (*llms.ContentChoice, error) {
		c := *choice
		c.ToolCalls = slices.Clone(choice.ToolCalls)
		return &c, nil
	}
}

// Interface guard.
var _ llms.Model = (*Model)(nil)
