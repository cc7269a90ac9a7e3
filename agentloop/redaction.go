package agentloop

import (
	"slices"

	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/thread"
)

// maskMessage masks a stored message, keeping its tool-call IDs.
func maskMessage(rd *writepath.Redactor, m thread.Message, n *writepath.Counts) thread.Message {
	if rd == nil {
		return m
	}
	keep := make([]string, 0, len(m.ToolCalls)+len(m.ToolResults))
	for _, c := range m.ToolCalls {
		keep = append(keep, c.ID)
	}
	for _, r := range m.ToolResults {
		keep = append(keep, r.CallID)
	}
	m.Text = rd.Text(m.Text, keep, n)
	m.ToolCalls = slices.Clone(m.ToolCalls)
	for i, c := range m.ToolCalls {
		m.ToolCalls[i].Arguments = rd.Text(c.Arguments, keep, n)
	}
	m.ToolResults = slices.Clone(m.ToolResults)
	for i, r := range m.ToolResults {
		m.ToolResults[i].Content = rd.Text(r.Content, keep, n)
	}
	return m
}
