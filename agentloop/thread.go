package agentloop

import (
	"context"
	"fmt"
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// loaded is a thread as a run loads it.
type loaded struct {
	*thread.Loaded
	msgs []llms.MessageContent // Checkpoint.Messages as langchaingo's
}

// maxLoadAttempts bounds the reads of a head whose records vanish while
// it is read (a newer run replaced and deleted them).
const maxLoadAttempts = thread.LoadAttempts

// load reads a thread: its head, the summary, the layers' snapshots and
// the messages the summary does not cover. A thread never stored is
// (nil, nil).
func (a *Agent) load(ctx context.Context, threadID string) (*loaded, error) {
	l, err := thread.Load(ctx, a.cfg.Store, threadID)
	if err != nil || l == nil {
		return nil, err
	}
	c := l.Checkpoint
	out := &loaded{Loaded: l, msgs: make([]llms.MessageContent, len(c.Messages))}
	for i, m := range c.Messages {
		if out.msgs[i], err = fromStored(m); err != nil {
			return nil, fmt.Errorf("%w: thread %s: message %d: %w", ErrCheckpoint, storage.Quote(threadID), c.First+i, err)
		}
	}
	return out, nil
}

// Transcript returns every stored message of a thread, oldest first, as
// the runs stored them: tool results capped at Config.MaxToolResultBytes
// but never compacted or summarized. It is the thread's full history for
// audit and for layers that keep their own log; the model is sent the
// window and the summary (see history.Config). Messages removed by
// history.Config.RetainMessages (by default, those the summary covers
// beyond the last thread.DefaultRetainMessages) are gone: first is the
// index in the thread of the first message returned; in the covered ones
// kept, long texts, arguments and results are elided (see
// thread.Elided). A thread never stored gives an error that is
// storage.ErrNotFound. Transcript reads every segment: its cost grows
// with the thread, unlike a run's.
func (a *Agent) Transcript(ctx context.Context, threadID string) (msgs []thread.Message, first int, err error) {
	c, err := thread.LoadAll(ctx, a.cfg.Store, threadID)
	if err != nil {
		return nil, 0, err
	}
	return c.Messages, c.First, nil
}

// writeThread writes a step: the messages not stored yet, the layers'
// snapshot and a summary made since the last write (see thread.Writer).
func (r *run) writeThread(ctx context.Context, snap layer.Snapshot) error {
	th := r.thread
	msgs, err := r.unsaved()
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	step := thread.Step{Messages: msgs, Snapshot: snap, Summary: th.pending,
		Agent: r.a.cfg.Name, ResourceID: r.resourceID, Steps: th.steps + r.res.Steps, Usage: th.usage.Add(r.res.Usage),
		Compacted: th.compacted, ReadBack: r.a.cfg.SaveTimeout}
	if th.pending != nil {
		step.Retain = r.a.cfg.History.RetainMessages
	}
	before := th.w.Saved()
	err = th.w.Write(ctx, step)
	th.saved = th.w.Saved()
	if err != nil {
		if th.saved > before {
			th.savedSteps = r.res.Steps // stored, then overwritten
		}
		return err
	}
	if th.pending != nil {
		th.summary, th.pending = *th.pending, nil
	}
	return nil
}

// unsaved returns the run's messages the stored thread does not have
// yet, as stored, redacted.
func (r *run) unsaved() ([]thread.Message, error) {
	from := r.thread.w.Saved() - r.base
	if from >= len(r.msgs) {
		return nil, nil
	}
	out := make([]thread.Message, 0, len(r.msgs)-from)
	for i := from; i < len(r.msgs); i++ {
		m, err := storedMessage(r.msgs[i])
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", r.base+i, err)
		}
		out = append(out, maskMessage(r.a.redact, m, &r.redacted))
	}
	return out, nil
}

// storedRole pairs a langchaingo role with its name in a stored thread.
type storedRole struct {
	chat   llms.ChatMessageType
	stored string
}

// storedRoles are the roles a thread stores; the loop makes no others.
var storedRoles = []storedRole{
	{llms.ChatMessageTypeHuman, thread.RoleUser},
	{llms.ChatMessageTypeAI, thread.RoleAssistant},
	{llms.ChatMessageTypeTool, thread.RoleTool},
}

// storedMessage returns m as a checkpoint stores it. Parts other than
// text, tool calls and tool results (the loop makes no others) and roles
// other than user, assistant and tool are refused.
func storedMessage(m llms.MessageContent) (thread.Message, error) {
	var s thread.Message
	i := slices.IndexFunc(storedRoles, func(r storedRole) bool { return r.chat == m.Role })
	if i < 0 {
		return s, fmt.Errorf("role %q cannot be stored", m.Role)
	}
	s.Role = storedRoles[i].stored
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			s.Text += p.Text
		case llms.ToolCall:
			c := thread.ToolCall{ID: p.ID}
			if p.FunctionCall != nil {
				c.Name, c.Arguments = p.FunctionCall.Name, p.FunctionCall.Arguments
			}
			s.ToolCalls = append(s.ToolCalls, c)
		case llms.ToolCallResponse:
			s.ToolResults = append(s.ToolResults, thread.ToolResult{CallID: p.ToolCallID, Name: p.Name, Content: p.Content})
		default:
			return s, fmt.Errorf("a %T part cannot be stored", p)
		}
	}
	return s, nil
}

// fromStored returns a stored message as langchaingo's: the text (when
// there is some, or when there is nothing else) as a TextContent, then one
// ToolCall of type "function" per call, then one ToolCallResponse per
// result.
func fromStored(s thread.Message) (llms.MessageContent, error) {
	var m llms.MessageContent
	i := slices.IndexFunc(storedRoles, func(r storedRole) bool { return r.stored == s.Role })
	if i < 0 {
		return m, fmt.Errorf("unknown role %q", s.Role)
	}
	m.Role = storedRoles[i].chat
	m.Parts = make([]llms.ContentPart, 0, 1+len(s.ToolCalls)+len(s.ToolResults))
	if s.Text != "" || len(s.ToolCalls)+len(s.ToolResults) == 0 {
		m.Parts = append(m.Parts, llms.TextContent{Text: s.Text})
	}
	for _, c := range s.ToolCalls {
		m.Parts = append(m.Parts, llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
	}
	for _, r := range s.ToolResults {
		m.Parts = append(m.Parts, llms.ToolCallResponse{ToolCallID: r.CallID, Name: r.Name, Content: r.Content})
	}
	return m, nil
}
