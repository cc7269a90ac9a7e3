package thread

import (
	"encoding/json"
	"fmt"
	"time"
)

// Usage counts tokens, as a thread's runs reported or estimated them.
type Usage struct {
	PromptTokens     int  `json:"prompt_tokens"`
	CompletionTokens int  `json:"completion_tokens"`
	TotalTokens      int  `json:"total_tokens"`
	Estimated        bool `json:"estimated,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
		Estimated:        u.Estimated || v.Estimated,
	}
}

// Info is a stored thread's head, without its messages.
type Info struct {
	ThreadID   string    `json:"thread_id"`
	ResourceID string    `json:"resource_id,omitempty"`
	Agent      string    `json:"agent,omitempty"`
	Steps      int       `json:"steps"`
	Messages   int       `json:"messages"`
	Usage      Usage     `json:"usage"`
	UpdatedAt  time.Time `json:"updated_at"`
	// Version is the version of the stored format (1 to 4).
	Version int `json:"version"`
}

// ReadInfo decodes a head of any version: the record stored under
// storage.ThreadKey(threadID, HeadName).
func ReadInfo(data []byte) (Info, error) {
	version, err := probeVersion(data)
	if err != nil {
		return Info{}, fmt.Errorf("malformed head: %w", err)
	}
	if version < Version {
		c, err := decodeLegacy(data)
		if err != nil {
			return Info{}, err
		}
		return Info{ThreadID: c.ThreadID, ResourceID: c.ResourceID, Agent: c.Agent, Steps: c.Steps,
			Messages: len(c.Messages), Usage: c.Usage, UpdatedAt: c.UpdatedAt, Version: version}, nil
	}
	var h headRecord
	if err := json.Unmarshal(data, &h); err != nil {
		return Info{}, fmt.Errorf("malformed head: %w", err)
	}
	return Info{ThreadID: h.ThreadID, ResourceID: h.ResourceID, Agent: h.Agent, Steps: h.Steps,
		Messages: h.Messages, Usage: h.Usage, UpdatedAt: h.UpdatedAt, Version: h.Version}, nil
}
