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
	if c == nil {
		c = Estimate
	}
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
	if c == nil {
		c = Estimate
	}
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
		for _, p := range msgs[i].Parts {
			switch p := p.(type) {
			case llms.ToolCallResponse:
				pending[p.ToolCallID] = true
			case llms.ToolCall:
				delete(pending, p.ID)
			}
		}
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
	// Pair each call ID's first call with its first response in a later
	// message; every other part carrying that ID is unpaired.
	type pos struct{ msg, part int }
	called := map[string]pos{}
	answered := map[string]pos{}
	for i, m := range msgs {
		for j, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				if _, dup := called[p.ID]; !dup {
					called[p.ID] = pos{i, j}
				}
			case llms.ToolCallResponse:
				if c, ok := called[p.ToolCallID]; ok && c.msg < i {
					if _, done := answered[p.ToolCallID]; !done {
						answered[p.ToolCallID] = pos{i, j}
					}
				}
			}
		}
	}
	keep := func(i, j int, p llms.ContentPart) bool {
		switch p := p.(type) {
		case llms.ToolCall:
			_, ok := answered[p.ID]
			return ok && called[p.ID] == pos{i, j}
		case llms.ToolCallResponse:
			a, ok := answered[p.ToolCallID]
			return ok && a == pos{i, j}
		}
		return true
	}
	var out []llms.MessageContent
	for i, m := range msgs {
		drop := 0
		for j, p := range m.Parts {
			if !keep(i, j, p) {
				drop++
			}
		}
		if drop == 0 {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = make([]llms.MessageContent, i, len(msgs))
			copy(out, msgs[:i])
		}
		if drop == len(m.Parts) {
			continue
		}
		parts := make([]llms.ContentPart, 0, len(m.Parts)-drop)
		for j, p := range m.Parts {
			if keep(i, j, p) {
				parts = append(parts, p)
			}
		}
		m.Parts = parts
		out = append(out, m)
	}
	if out == nil {
		return msgs
	}
	return out
}
