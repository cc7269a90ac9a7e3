package thread

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/memlayer/memlayer/layer"
)

// Version is the format version of the threads this build writes.
// Threads of a newer version are refused; older ones load, and the next
// write of their thread is in this version. The package documentation
// describes each version.
const Version = 4

// HeadName is the name of a thread's head record (a whole checkpoint
// before version 4) under storage.ThreadKey.
const HeadName = "checkpoint"

// ErrCheckpoint means a stored thread cannot be read or written.
var ErrCheckpoint = errors.New("thread: checkpoint")

// Checkpoint is a stored thread as [Load] returns it. Versions 1 to 3
// stored it as this JSON under storage.ThreadKey(threadID, HeadName);
// version 4 stores a head record there and the messages, summary and
// layer snapshots in records of their own.
type Checkpoint struct {
	// Messages is the part of the thread's history that the Summary does
	// not cover, from message First on, without system prompts: what a
	// run loads and the window is cut from. A full [Load] returns every
	// retained message.
	Messages   []Message `json:"messages,omitempty"`
	Version    int       `json:"version"`
	Agent      string    `json:"agent,omitempty"`
	ThreadID   string    `json:"thread_id"`
	ResourceID string    `json:"resource_id,omitempty"`
	// Layers is the layers' state after the step.
	Layers layer.Snapshot `json:"layers"`
	// Steps and Usage add up every run of the thread.
	Steps     int       `json:"steps"`
	Usage     Usage     `json:"usage"`
	UpdatedAt time.Time `json:"updated_at"`
	// Compacted is how many messages of the thread, from the first, have
	// been compacted: a run compacts only the messages after them. Compaction is recorded here and never read
	// from a message's text, so a tool result that looks like a
	// reference is still compacted. From version 4 the stored messages
	// stay as they were written and compaction is applied when they are
	// loaded.
	Compacted int `json:"compacted,omitempty"`
	// First is the index in the thread of Messages[0], and Total the
	// number of messages in the thread.
	First int `json:"-"`
	Total int `json:"-"`
	// Summary is the thread's rolling summary of its messages before
	// First (zero when there is none).
	Summary Summary `json:"-"`
}

// decodeLegacy decodes a checkpoint of version 1 to 3 into the current
// one.
func decodeLegacy(data []byte) (*Checkpoint, error) {
	var c Checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	if c.Version < 1 || c.Version >= 4 {
		return nil, fmt.Errorf("version %d, this build reads up to %d", c.Version, Version)
	}
	if c.Version < 3 {
		var err error
		if c.Messages, err = decodeLegacyMessages(data, c.Version); err != nil {
			return nil, err
		}
	}
	if c.Version == 1 {
		c.Compacted = legacyCompacted(c.Messages)
	}
	c.Version = Version
	c.Compacted = min(max(c.Compacted, 0), len(c.Messages))
	return &c, nil
}

// decodeLegacyMessages decodes the messages of a checkpoint of version 1
// or 2 into the current form.
func decodeLegacyMessages(data []byte, version int) ([]Message, error) {
	var old struct {
		Messages []legacyMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return nil, fmt.Errorf("malformed: %w", err)
	}
	msgs := make([]Message, len(old.Messages))
	for i, m := range old.Messages {
		var err error
		if msgs[i], err = m.migrate(); err != nil {
			return nil, fmt.Errorf("version %d, message %d: %w", version, i, err)
		}
	}
	return msgs, nil
}

// legacyCompacted is the compaction watermark of a version-1 checkpoint:
// the messages up to the last one holding a tool result that starts with
// the marker version 1 wrote. Version 1 compacted every earlier message
// when a run started, so those were all compacted.
func legacyCompacted(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, r := range msgs[i].ToolResults {
			if strings.HasPrefix(r.Content, v1Compacted) {
				return i + 1
			}
		}
	}
	return 0
}

// v1Compacted starts a tool result that version 1 compacted.
const v1Compacted = "[compacted] "
