package prompt

import (
	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
)

// ProjectLayers keeps the recalled items that fit in capTokens. Items are
// taken in the order given (the stack's slot order; recalled is not
// modified): an item that does not fit is skipped on its own and later
// items that fit are still kept; no item is ever cut. An item costs its
// Tokens when the layer set them, else c's count of its text (a nil c
// means [Estimate]). Layers left with no item are dropped. A capTokens of
// [layer.Unbounded] keeps everything; a negative cap keeps nothing.
//
// The separators the compiler puts between items and blocks are not
// counted; leave room for them in [Request.System] or [Request.Reserve].
func ProjectLayers(recalled []layer.Recalled, capTokens int, c Counter) []layer.Recalled {
	return ProjectLayersWithin(recalled, nil, capTokens, c)
}

// ProjectLayersWithin is [ProjectLayers] with a cap per layer as well:
// a layer's items are also kept within budgets[layer ID] (usually
// [Allocation.Layers]), for layers that do not trim their own recall to
// [layer.Query.Budget]. A layer missing from budgets has no cap of its
// own; the same skip-on-its-own rule applies to both caps.
func ProjectLayersWithin(recalled []layer.Recalled, budgets map[string]int, capTokens int, c Counter) []layer.Recalled {
	c = orEstimate(c)
	out := make([]layer.Recalled, 0, len(recalled))
	used := 0
	for _, r := range recalled {
		var kept []layer.Item
		own, capped := budgets[r.ID]
		layerUsed := 0
		for _, it := range r.Items {
			cost := itemTokens(c, it.Tokens, it.Text)
			// Compared as differences, which cannot overflow.
			if cost <= capTokens-used && (!capped || cost <= own-layerUsed) {
				used += cost
				layerUsed += cost
				kept = append(kept, it)
			}
		}
		if len(kept) > 0 {
			r.Items = kept
			out = append(out, r)
		}
	}
	return out
}

// ProjectHistory keeps the newest messages of msgs that fit in capTokens,
// counted with [CountMessage] (a nil c means [Estimate]).
//
// First, unpaired tool traffic is stripped: a tool call with no later
// response with its ID, and a tool response with no earlier call with its
// ID, are removed from their message, and a message left with no part is
// dropped. Then the longest suffix that fits is kept, where a cut is only
// allowed at a point that no call/response pair straddles: an AI message
// with tool calls and the tool messages answering it are kept or dropped
// together. The result is always a contiguous run of the newest
// messages, never a selection with holes, so the conversation still
// reads in order. msgs is not modified; kept messages share their Parts
// with msgs unless stripping changed them.
//
// A capTokens of [layer.Unbounded] keeps everything (after stripping); a
// negative cap keeps nothing. If the newest message (or the newest
// call/result group) alone does not fit, nothing is kept: a caller that
// must always send the latest user message should count it in
// [Request.System] or check for an empty result.
func ProjectHistory(msgs []llms.MessageContent, capTokens int, c Counter) []llms.MessageContent {
	c = orEstimate(c)
	msgs = stripUnpaired(msgs)
	if len(msgs) == 0 || capTokens < 0 {
		return nil
	}
	// Walk back from the newest message. pending holds the IDs of tool
	// responses in the suffix whose call has not been reached yet: a
	// cut there would split a pair.
	pending := map[string]bool{}
	used := 0
	start := len(msgs) // msgs[start:] is the best valid suffix so far
	for i := len(msgs) - 1; i >= 0; i-- {
		cost := CountMessage(c, msgs[i])
		if cost > capTokens-used {
			break
		}
		used += cost
		awaitCalls(pending, msgs[i].Parts)
		if len(pending) == 0 {
			start = i
		}
	}
	if start == len(msgs) {
		return nil
	}
	return msgs[start:]
}

// stripUnpaired returns msgs without unanswered tool calls and orphan
// tool responses (see ProjectHistory). It copies only when it must.
func stripUnpaired(msgs []llms.MessageContent) []llms.MessageContent {
	pr := toolPairs{called: map[string]partAt{}, answered: map[string]partAt{}}
	pr.pair(msgs)
	var out []llms.MessageContent
	for i, m := range msgs {
		kept, dropped := pr.keptParts(i, m.Parts)
		if dropped > 0 && out == nil {
			out = make([]llms.MessageContent, i, len(msgs))
			copy(out, msgs[:i])
		}
		// A message is dropped when stripping left it no part.
		if out != nil && (len(kept) > 0 || dropped == 0) {
			m.Parts = kept
			out = append(out, m)
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

// awaitCalls notes in pending the call IDs of the tool responses of
// parts, and clears those of its tool calls, in order.
func awaitCalls(pending map[string]bool, parts []llms.ContentPart) {
	for _, p := range parts {
		id, call, ok := toolPart(p)
		if ok && call {
			delete(pending, id)
		} else if ok {
			pending[id] = true
		}
	}
}

// toolPart returns the call ID a tool call or tool response carries and
// whether it is the call; ok is false for any other part.
func toolPart(p llms.ContentPart) (id string, call, ok bool) {
	switch p := p.(type) {
	case llms.ToolCall:
		return p.ID, true, true
	case llms.ToolCallResponse:
		return p.ToolCallID, false, true
	}
	return "", false, false
}

// partAt is where a part is: msgs[msg].Parts[part].
type partAt struct{ msg, part int }

// toolPairs pairs each call ID's first tool call with its first response
// in a later message; every other part carrying that ID is unpaired.
type toolPairs struct{ called, answered map[string]partAt }

// pair records in pr each call ID's first tool call in msgs and its
// first response in a later message.
func (pr toolPairs) pair(msgs []llms.MessageContent) {
	for i, m := range msgs {
		for j, p := range m.Parts {
			id, call, ok := toolPart(p)
			switch {
			case !ok:
			case call:
				setFirst(pr.called, id, partAt{i, j})
			case pr.calledBefore(id, i):
				setFirst(pr.answered, id, partAt{i, j})
			}
		}
	}
}

// calledBefore reports whether the first call of id is in a message
// before msgs[i].
func (pr toolPairs) calledBefore(id string, i int) bool {
	c, ok := pr.called[id]
	return ok && c.msg < i
}

// setFirst sets m[id] to at unless it is set.
func setFirst(m map[string]partAt, id string, at partAt) {
	if _, set := m[id]; !set {
		m[id] = at
	}
}

// keeps reports whether the part p at at is kept: a part that is not a
// tool call or response, or one of a pair.
func (pr toolPairs) keeps(at partAt, p llms.ContentPart) bool {
	id, call, ok := toolPart(p)
	if !ok {
		return true
	}
	want, answered := pr.answered[id]
	if call {
		want = pr.called[id]
	}
	return answered && want == at
}

// keptParts returns the parts of msgs[i] that are kept, and how many are
// dropped; parts itself when none is.
func (pr toolPairs) keptParts(i int, parts []llms.ContentPart) ([]llms.ContentPart, int) {
	drop := 0
	for j, p := range parts {
		if !pr.keeps(partAt{i, j}, p) {
			drop++
		}
	}
	if drop == 0 {
		return parts, 0
	}
	kept := make([]llms.ContentPart, 0, len(parts)-drop)
	for j, p := range parts {
		if pr.keeps(partAt{i, j}, p) {
			kept = append(kept, p)
		}
	}
	return kept, drop
}
