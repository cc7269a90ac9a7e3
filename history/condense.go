package history

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
)

// DefaultCondensePrompt is the prompt a [ModelSummarizer] sends with a
// summary that passes its MaxTokens ("%d" is MaxTokens). It asks for the
// same summary at growing spans: the newest lines as they are, older
// turns in a line each, the oldest in one line of IDs and names.
const DefaultCondensePrompt = `The summary below is longer than its budget of %d tokens. Rewrite it within the budget, telling older parts more coarsely:
keep the newest lines as they are;
tell each older turn in one line, as: - Turn: <request> → <ID> "<name>", <ID> | answer: <outcome>
fold the oldest turns into one first line, as: Entities seen earlier: <ID> "<name>"; <ID> "<name>"
Keep every ID with its name while there is room; drop the IDs without a name first. Answer with the summary only.`

// condense returns text within MaxTokens: as it is when it fits (or
// MaxTokens is zero), else as the model rewrites it at coarser
// resolutions, fitted with [Fit] where its answer still passes the
// budget. An empty answer leaves the fitting to [Fit].
func (s *ModelSummarizer) condense(ctx context.Context, text string) (string, error) {
	count := layer.Query{Counter: s.Counter}.Count
	if s.MaxTokens <= 0 || count(text) <= s.MaxTokens {
		return text, nil
	}
	prompt := fmt.Sprintf(cmp.Or(s.CondensePrompt, DefaultCondensePrompt), s.MaxTokens)
	resp, err := s.model.GenerateContent(ctx, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, prompt),
		llms.TextParts(llms.ChatMessageTypeHuman, text),
	})
	if err != nil {
		return "", fmt.Errorf("history: condense the summary: %w", err)
	}
	if short, ok := answer(resp); ok {
		text = strings.TrimSpace(short)
	}
	return Fit(text, s.MaxTokens, s.Counter), nil
}
