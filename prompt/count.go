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

// Estimate is the default [Counter]: a cheap estimate that needs no
// tokenizer data, the count of a [layer.Query] without a Counter
// ([layer.Query.Count]), so layers and the prompt compiler share one
// implementation. Its rule is
//
//	tokens = ceil((wordBytes + 2·punctBytes) / 4) + nonASCIIRunes
//
// where wordBytes are ASCII letters, digits and spaces, punctBytes every
// other ASCII byte (punctuation, brackets, quotes, tabs, newlines), and
// every non-ASCII rune counts as a whole token (invalid UTF-8 bytes count
// one each). Punctuation counts double because BPE vocabularies split it
// into short tokens, which makes JSON and code denser in tokens than
// prose.
//
// Measured against tiktoken's cl100k_base and o200k_base vocabularies
// (pkoukk/tiktoken-go v0.1.8 with its offline loader), on text cut into
// chunks of about 1500 bytes: English Markdown (22.6k tokens) is
// over-counted by 7–8% in total, Go source (32.5k) by 12%, JSON (5.3k) by
// 15–16%; single chunks range from 0.72× to 1.40× the exact count. Five
// short German, French, Japanese, Chinese and Russian sentences were
// over-counted 1.27× (cl100k) and 1.77× (o200k). So the estimate errs on
// the safe side in total, but a single item can be under-counted by up
// to about a quarter: keep a margin in [Request.Reserve], or plug in an
// exact [Counter] when budgets must be tight.
var Estimate Counter = CounterFunc(layer.Query{}.Count)

// MessageOverhead is the number of tokens [CountMessage] adds to every
// message for its role and framing, about what chat APIs add per message.
const MessageOverhead = 3

// CountMessage returns the tokens msg costs in a prompt: MessageOverhead
// plus the count of every part's text (a tool call's name and arguments, a
// tool response's name and content, an image's URL and detail). Binary
// parts count a quarter of their byte size. A nil c means [Estimate].
func CountMessage(c Counter, msg llms.MessageContent) int {
	if c == nil {
		c = Estimate
	}
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
	if c == nil {
		c = Estimate
	}
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
