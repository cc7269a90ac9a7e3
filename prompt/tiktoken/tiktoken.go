// Package tiktoken counts tokens exactly for OpenAI-style models, with
// the BPE vocabularies of github.com/pkoukk/tiktoken-go. The
// vocabularies are embedded (github.com/pkoukk/tiktoken-go-loader, about
// 6.7 MB in the binary), so counting never touches the network.
//
// Hand the counter to the agent and every budget is exact: the prompt
// compiler and every layer's Recall count with it.
//
//	c, err := tiktoken.ForModel("gpt-4o")
//	...
//	agent, err := agentloop.New(agentloop.Config{Model: m, Counter: c, ...})
//
// Importing the package sets tiktoken-go's process-wide BPE loader to the
// offline one, which also makes langchaingo's llms.CountTokens work
// offline.
package tiktoken

import (
	"fmt"

	tk "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/memlayer/memlayer/prompt"
)

func init() { tk.SetBpeLoader(loader.NewOfflineLoader()) }

// counter counts the tokens of a text with one encoding. Special tokens
// such as "<|endoftext|>" in the text count as the ordinary text they
// are.
type counter struct{ enc *tk.Tiktoken }

func (c counter) Count(text string) int { return len(c.enc.EncodeOrdinary(text)) }

// New returns an exact [prompt.Counter] for a named encoding:
// "cl100k_base" (gpt-4, gpt-3.5-turbo), "o200k_base" (gpt-4o, o1) and the
// others tiktoken-go knows. Loading a vocabulary takes 50–200 ms; keep
// the counter and share it (it is safe for concurrent use).
func New(encoding string) (prompt.Counter, error) {
	enc, err := tk.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("tiktoken: encoding %q: %w", encoding, err)
	}
	return counter{enc}, nil
}

// ForModel returns an exact [prompt.Counter] for an OpenAI model name
// ("gpt-4o", "gpt-4o-mini", "gpt-4"), or an error for a model tiktoken-go
// does not know.
func ForModel(model string) (prompt.Counter, error) {
	enc, err := tk.EncodingForModel(model)
	if err != nil {
		return nil, fmt.Errorf("tiktoken: model %q: %w", model, err)
	}
	return counter{enc}, nil
}
