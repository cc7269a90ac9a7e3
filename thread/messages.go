package thread

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/memlayer/memlayer/storage"
)

// MessageQuery pages a thread's messages for [Catalog.Messages]. The zero
// value returns the first DefaultMessageLimit messages still stored.
type MessageQuery struct {
	// From is the index in the thread of the first message to return. A
	// negative From counts from the end: -20 asks for the last 20. A From
	// before the first message still stored starts at it.
	From int
	// Limit is the most messages a page holds: DefaultMessageLimit when
	// zero, at most MaxMessageLimit.
	Limit int
}

// The page sizes of [Catalog.Messages].
const (
	DefaultMessageLimit = 50
	MaxMessageLimit     = 1000
)

// MessagePage is one page of a thread's messages, oldest first, as
// stored: redacted as the run stored them, never compacted or
// summarized; covered messages that retention kept may be elided (see
// [Elided]).
type MessagePage struct {
	Messages []Message `json:"messages"`
	// First is the index in the thread of Messages[0].
	First int `json:"first"`
	// Next is the From of the next page; it is Total after the last.
	Next int `json:"next"`
	// Total is how many messages the thread has had.
	Total int `json:"total"`
	// Retained is the index of the first message still stored: retention
	// deleted those before it (see [Step].Retain).
	Retained int `json:"retained"`
}

// Messages returns a page of a thread's messages. A message's index
// never changes, so paging by Next is stable while runs append. It reads
// the head, then the segments from the newest back to the page's first:
// a page near the end costs a few reads, one near the start as many as
// the thread has steps. A thread with no head gives an empty page if it
// has metadata, else an error that is storage.ErrNotFound.
func (c Catalog) Messages(ctx context.Context, threadID string, q MessageQuery) (MessagePage, error) {
	if err := CheckThreadID(threadID); err != nil {
		return MessagePage{}, fmt.Errorf("thread: messages: %w", err)
	}
	limit, err := pageLimit(q.Limit, DefaultMessageLimit, MaxMessageLimit)
	if err != nil {
		return MessagePage{}, fmt.Errorf("thread: messages: %w", err)
	}
	for attempt := 1; ; attempt++ {
		p, err := c.messages(ctx, threadID, q.From, limit)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, errVanished) || attempt == LoadAttempts {
			return MessagePage{}, fmt.Errorf("thread: messages of %s: %w", storage.Quote(threadID), err)
		}
	}
}

// messages reads one page, from the head as it is now.
func (c Catalog) messages(ctx context.Context, threadID string, from, limit int) (MessagePage, error) {
	it, err := c.Store.Get(ctx, storage.ThreadKey(threadID, HeadName))
	if errors.Is(err, storage.ErrNotFound) {
		_, version, merr := c.readMeta(ctx, threadID)
		if merr == nil && version == storage.NoVersion {
			merr = storage.ErrNotFound
		}
		return MessagePage{}, merr
	}
	if err != nil {
		return MessagePage{}, err
	}
	version, err := probeVersion(it.Value)
	if err != nil {
		return MessagePage{}, fmt.Errorf("malformed head: %w", err)
	}
	if version < Version {
		return legacyPage(it.Value, from, limit)
	}
	h, err := decodeHead(it.Value)
	if err != nil {
		return MessagePage{}, err
	}
	p := pageOf(h.Messages, h.Retained, from, limit)
	p.Messages, err = reader{ctx: ctx, store: c.Store, threadID: threadID}.span(h, p.First, p.Next)
	return p, err
}

// legacyPage returns a page of a checkpoint of version 1 to 3, which
// holds every message.
func legacyPage(head []byte, from, limit int) (MessagePage, error) {
	cp, err := decodeLegacy(head)
	if err != nil {
		return MessagePage{}, err
	}
	p := pageOf(len(cp.Messages), 0, from, limit)
	p.Messages = slices.Clone(cp.Messages[p.First:p.Next])
	return p, nil
}

// pageOf returns the bounds of the page of a thread of total messages,
// the first retained stored, that starts at from (negative: from the
// end) and holds at most limit.
func pageOf(total, retained, from, limit int) MessagePage {
	if from < 0 {
		from += total
	}
	first := min(max(from, retained), total)
	return MessagePage{First: first, Next: min(first+limit, total), Total: total, Retained: retained}
}

// span returns the messages from index first up to end of the thread
// whose head is h, walking back from its tail.
func (r reader) span(h headRecord, first, end int) ([]Message, error) {
	var segs [][]Message
	at, name := h.Messages, h.Tail
	for at > first {
		s, _, err := r.segment(name, at)
		if err != nil {
			return nil, err
		}
		if s.First < end {
			lo, hi := max(first, s.First)-s.First, min(end, at)-s.First
			segs = append(segs, s.Messages[lo:hi])
		}
		at, name = s.First, s.Prev
	}
	out := make([]Message, 0, end-first)
	for i := len(segs) - 1; i >= 0; i-- {
		out = append(out, segs[i]...)
	}
	return out, nil
}
