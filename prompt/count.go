package prompt

import (
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
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
// tokenizer data. Its rule is
//
//	tokens = ceil(asciiBytes / 4) + nonASCIIRunes
//
// ASCII text (English prose, code, JSON) averages about four bytes per
// token in the BPE vocabularies of current chat models (cl100k, o200k), the
// same ratio noetic and langchaingo's offline fallback use. Every
// non-ASCII rune counts as a whole token: CJK characters are about one
// token each, and accented letters are over-counted, which errs on the
// safe side (the prompt comes out shorter than its budget, never longer).
// Invalid UTF-8 bytes count one token each. The estimate was not measured
// against a real tokenizer here (no tokenizer data is available offline);
// plug in an exact [Counter] (for example one built on tiktoken-go with an
// embedded vocabulary) when budgets must be tight.
var Estimate Counter = CounterFunc(estimate)

func estimate(text string) int {
	ascii, other := 0, 0
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			ascii++
			i++
			continue
		}
		_, n := utf8.DecodeRuneInString(text[i:])
		other++
		i += n
	}
	return (ascii+3)/4 + other
}

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

// itemTokens is what one layer item costs: its own count when the layer
// gave one, else c's count of its text.
func itemTokens(c Counter, tokens int, text string) int {
	if tokens > 0 {
		return tokens
	}
	return c.Count(text)
}
