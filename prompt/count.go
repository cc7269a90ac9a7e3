package prompt

import (
	"encoding/json"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
)

// Counter counts tokens in text. Implementations must be safe for
// concurrent use and deterministic: the same text always counts the same.
type Counter interface {
	Count(text string) int
}

// CounterFunc is an adapter to use an ordinary function as a [Counter].
type CounterFunc func(text string) int

// Count returns f(text).
func (f CounterFunc) Count(text string) int { return f(text) }

// Estimate is the default [Counter], [layer.EstimateTokens].
// Layers and the prompt compiler share it, so their counts agree.
var Estimate Counter = CounterFunc(layer.EstimateTokens)

// orEstimate returns c, or Estimate when c is nil.
func orEstimate(c Counter) Counter {
	if c == nil {
		return Estimate
	}
	return c
}

// MessageOverhead is the number of tokens [CountMessage] adds to every
// message for its role and framing, about what chat APIs add per message.
const MessageOverhead = 3

// CountMessage returns the tokens msg costs in a prompt: MessageOverhead
// plus the count of every part's text (a tool call's name and arguments, a
// tool response's name and content, an image's URL and detail). Binary
// parts count a quarter of their byte size. A nil c means [Estimate].
func CountMessage(c Counter, msg llms.MessageContent) int {
	c = orEstimate(c)
	n := MessageOverhead
	for _, p := range msg.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			n += c.Count(p.Text)
		case llms.ToolCall:
			if p.FunctionCall != nil {
				n += c.Count(p.FunctionCall.Name) + c.Count(p.FunctionCall.Arguments)
			}
		case llms.ToolCallResponse:
			n += c.Count(p.Name) + c.Count(p.Content)
		case llms.ImageURLContent:
			n += c.Count(p.URL) + c.Count(p.Detail)
		case llms.BinaryContent:
			n += (len(p.Data) + 3) / 4
		}
	}
	return n
}

// CountTools returns the tokens the tool definitions of a request cost:
// c's count of their JSON encoding, as llms.WithTools sends them (names,
// descriptions and parameter schemas). No tools cost nothing. A nil c
// means [Estimate]. Providers bill the definitions as prompt tokens, so a
// budget that leaves them out lets requests pass the context window.
func CountTools(c Counter, tools []llms.Tool) int {
	if len(tools) == 0 {
		return 0
	}
	c = orEstimate(c)
	b, err := json.Marshal(tools)
	if err != nil {
		// A parameter schema that does not encode is not sent either;
		// count what the names and descriptions take.
		n := 0
		for _, t := range tools {
			if t.Function != nil {
				n += c.Count(t.Function.Name) + c.Count(t.Function.Description)
			}
		}
		return n
	}
	return c.Count(string(b))
}

// itemTokens is what one layer item costs: its own count when the layer
// gave one, else c's count of its text.
func itemTokens(c Counter, tokens int, text string) int {
	if tokens > 0 {
		return tokens
	}
	return c.Count(text)
}

// Interface guards.
var _ Counter = CounterFunc(nil)
