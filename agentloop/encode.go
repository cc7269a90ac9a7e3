package agentloop

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// appendMessage appends m encoded as llms.MessageContent.MarshalJSON
// would encode it (the same JSON value; only key order and escaping may
// differ), so llms.MessageContent.UnmarshalJSON reads it back. It writes
// the part types the loop produces (text, tool calls, tool responses)
// directly, in one pass, and falls back to the parts' own MarshalJSON for
// others: langchaingo's encoder marshals every part through a map and
// re-compacts each level, which made checkpoints the largest cost of a
// step.
func appendMessage(b []byte, m llms.MessageContent) ([]byte, error) {
	b = append(b, `{"role":`...)
	b = appendString(b, string(m.Role))
	if len(m.Parts) == 1 {
		if tp, ok := m.Parts[0].(llms.TextContent); ok {
			b = append(b, `,"text":`...)
			b = appendString(b, tp.Text)
			return append(b, '}'), nil
		}
	}
	if m.Parts == nil {
		return append(b, `,"parts":null}`...), nil
	}
	b = append(b, `,"parts":[`...)
	for i, part := range m.Parts {
		if i > 0 {
			b = append(b, ',')
		}
		switch p := part.(type) {
		case llms.TextContent:
			b = append(b, `{"type":"text","text":`...)
			b = appendString(b, p.Text)
			b = append(b, '}')
		case llms.ToolCall:
			b = append(b, `{"type":"tool_call","tool_call":{"id":`...)
			b = appendString(b, p.ID)
			b = append(b, `,"type":`...)
			b = appendString(b, p.Type)
			b = append(b, `,"function":`...)
			if p.FunctionCall == nil {
				b = append(b, "null"...)
			} else {
				b = append(b, `{"name":`...)
				b = appendString(b, p.FunctionCall.Name)
				b = append(b, `,"arguments":`...)
				b = appendString(b, p.FunctionCall.Arguments)
				b = append(b, '}')
			}
			b = append(b, "}}"...)
		case llms.ToolCallResponse:
			b = append(b, `{"type":"tool_response","tool_response":{"tool_call_id":`...)
			b = appendString(b, p.ToolCallID)
			b = append(b, `,"name":`...)
			b = appendString(b, p.Name)
			b = append(b, `,"content":`...)
			b = appendString(b, p.Content)
			b = append(b, "}}"...)
		default:
			pb, err := json.Marshal(part)
			if err != nil {
				return nil, err
			}
			b = append(b, pb...)
		}
	}
	return append(b, "]}"...), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Like encoding/json, it
// replaces invalid UTF-8 with U+FFFD and escapes control characters and
// U+2028/U+2029; it does not HTML-escape <, > and &.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
