package agentloop

import (
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// The roles of a [StoredMessage].
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// StoredMessage is one message of a thread's history as a [Checkpoint]
// stores it: memlayer's own record, encoded with encoding/json, so what
// is stored does not depend on how langchaingo encodes its types. Run
// turns it into an llms.MessageContent: the text (when there is some, or
// when there is nothing else) as a TextContent, then one ToolCall of
// type "function" per call, then one ToolCallResponse per result.
type StoredMessage struct {
	// Role is RoleUser, RoleAssistant or RoleTool.
	Role string `json:"role"`
	// Text is the message's text: the user's message or the model's
	// answer.
	Text string `json:"text,omitempty"`
	// ToolCalls are the tool calls of an assistant message.
	ToolCalls []StoredToolCall `json:"tool_calls,omitempty"`
	// ToolResults are the results of a tool message (the loop stores one
	// per message).
	ToolResults []StoredToolResult `json:"tool_results,omitempty"`
	// TextElided, when set, says Text was elided (see
	// HistoryConfig.RetainMessages): Text is its start.
	TextElided *Elided `json:"text_elided,omitempty"`
}

// StoredToolCall is a tool call in a [StoredMessage].
type StoredToolCall struct {
	// ID is unique in the thread.
	ID string `json:"id"`
	// Name is the tool's name as offered to the model.
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments object.
	Arguments string `json:"arguments"`
	// Elided, when set, says the arguments were elided (see
	// HistoryConfig.RetainMessages): Arguments is {"_elided":"<n> bytes"}.
	Elided *Elided `json:"elided,omitempty"`
}

// StoredToolResult is a tool result in a [StoredMessage].
type StoredToolResult struct {
	// CallID is the ID of the call it answers.
	CallID string `json:"call_id"`
	// Name is the tool's name.
	Name string `json:"name,omitempty"`
	// Content is the result as the history keeps it.
	Content string `json:"content"`
	// Elided, when set, says the result was elided (see
	// HistoryConfig.RetainMessages): Content is its start.
	Elided *Elided `json:"elided,omitempty"`
}

// storedMessage returns m as a checkpoint stores it. Parts other than
// text, tool calls and tool results (the loop makes no others) and roles
// other than user, assistant and tool are refused.
func storedMessage(m llms.MessageContent) (StoredMessage, error) {
	var s StoredMessage
	switch m.Role {
	case llms.ChatMessageTypeHuman:
		s.Role = RoleUser
	case llms.ChatMessageTypeAI:
		s.Role = RoleAssistant
	case llms.ChatMessageTypeTool:
		s.Role = RoleTool
	default:
		return s, fmt.Errorf("role %q cannot be stored", m.Role)
	}
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llms.TextContent:
			s.Text += p.Text
		case llms.ToolCall:
			c := StoredToolCall{ID: p.ID}
			if p.FunctionCall != nil {
				c.Name, c.Arguments = p.FunctionCall.Name, p.FunctionCall.Arguments
			}
			s.ToolCalls = append(s.ToolCalls, c)
		case llms.ToolCallResponse:
			s.ToolResults = append(s.ToolResults, StoredToolResult{CallID: p.ToolCallID, Name: p.Name, Content: p.Content})
		default:
			return s, fmt.Errorf("a %T part cannot be stored", p)
		}
	}
	return s, nil
}

// content returns the message as langchaingo's.
func (s StoredMessage) content() (llms.MessageContent, error) {
	var m llms.MessageContent
	switch s.Role {
	case RoleUser:
		m.Role = llms.ChatMessageTypeHuman
	case RoleAssistant:
		m.Role = llms.ChatMessageTypeAI
	case RoleTool:
		m.Role = llms.ChatMessageTypeTool
	default:
		return m, fmt.Errorf("unknown role %q", s.Role)
	}
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

// legacyMessage is a message as checkpoint versions 1 and 2 stored it:
// langchaingo v0.1.14's JSON of an llms.MessageContent, read here
// without langchaingo. A message with parts is the parts; one without is
// its "text".
type legacyMessage struct {
	Role  string `json:"role"`
	Text  string `json:"text"`
	Parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ToolCall struct {
			ID       string `json:"id"`
			Function *struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_call"`
		ToolResponse struct {
			ToolCallID string `json:"tool_call_id"`
			Name       string `json:"name"`
			Content    string `json:"content"`
		} `json:"tool_response"`
	} `json:"parts"`
}

// stored migrates a legacy message. It refuses what version 3 cannot
// hold, which the loop never wrote: images, binary parts, other roles.
func (l legacyMessage) stored() (StoredMessage, error) {
	roles := map[string]string{"human": RoleUser, "ai": RoleAssistant, "tool": RoleTool}
	s := StoredMessage{Role: roles[l.Role]}
	if s.Role == "" {
		return s, fmt.Errorf("role %q cannot be migrated", l.Role)
	}
	if len(l.Parts) == 0 {
		s.Text = l.Text
	}
	for _, p := range l.Parts {
		switch p.Type {
		case "text", "":
			s.Text += p.Text
		case "tool_call":
			c := StoredToolCall{ID: p.ToolCall.ID}
			if f := p.ToolCall.Function; f != nil {
				c.Name, c.Arguments = f.Name, f.Arguments
			}
			s.ToolCalls = append(s.ToolCalls, c)
		case "tool_response":
			r := p.ToolResponse
			s.ToolResults = append(s.ToolResults, StoredToolResult{CallID: r.ToolCallID, Name: r.Name, Content: r.Content})
		default:
			return s, fmt.Errorf("a %q part cannot be migrated", p.Type)
		}
	}
	return s, nil
}
