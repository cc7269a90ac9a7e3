package thread

import "fmt"

// The roles of a [Message].
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one message of a thread's history as a [Checkpoint] stores
// it: memlayer's own record, encoded with encoding/json. What is stored
// does not depend on how any model library encodes its types.
type Message struct {
	// Role is RoleUser, RoleAssistant or RoleTool.
	Role string `json:"role"`
	// Text is the message's text: the user's message or the model's
	// answer.
	Text string `json:"text,omitempty"`
	// ToolCalls are the tool calls of an assistant message.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolResults are the results of a tool message (the loop stores one
	// per message).
	ToolResults []ToolResult `json:"tool_results,omitempty"`
	// TextElided, when set, says Text was elided (see [ElideAbove]):
	// Text is its start.
	TextElided *Elided `json:"text_elided,omitempty"`
}

// ToolCall is a tool call in a [Message].
type ToolCall struct {
	// ID is unique in the thread.
	ID string `json:"id"`
	// Name is the tool's name as offered to the model.
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments object.
	Arguments string `json:"arguments"`
	// Elided, when set, says the arguments were elided (see
	// [ElideAbove]): Arguments is {"_elided":"<n> bytes"}.
	Elided *Elided `json:"elided,omitempty"`
}

// ToolResult is a tool result in a [Message].
type ToolResult struct {
	// CallID is the ID of the call it answers.
	CallID string `json:"call_id"`
	// Name is the tool's name.
	Name string `json:"name,omitempty"`
	// Content is the result as the history keeps it.
	Content string `json:"content"`
	// Elided, when set, says the result was elided (see [ElideAbove]):
	// Content is its start.
	Elided *Elided `json:"elided,omitempty"`
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

// migrate returns a legacy message as version 3 stores it. It refuses
// what version 3 cannot hold, which the loop never wrote: images, binary
// parts, other roles.
func (l legacyMessage) migrate() (Message, error) {
	roles := map[string]string{"human": RoleUser, "ai": RoleAssistant, "tool": RoleTool}
	s := Message{Role: roles[l.Role]}
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
			c := ToolCall{ID: p.ToolCall.ID}
			if f := p.ToolCall.Function; f != nil {
				c.Name, c.Arguments = f.Name, f.Arguments
			}
			s.ToolCalls = append(s.ToolCalls, c)
		case "tool_response":
			r := p.ToolResponse
			s.ToolResults = append(s.ToolResults, ToolResult{CallID: r.ToolCallID, Name: r.Name, Content: r.Content})
		default:
			return s, fmt.Errorf("a %q part cannot be migrated", p.Type)
		}
	}
	return s, nil
}
