package thread

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/memlayer/memlayer/internal/textcut"
	"github.com/memlayer/memlayer/storage"
)

// DefaultRetainMessages is the retention a run applies by default: a
// thread keeps its last 200 messages, and every message the summary does
// not cover yet.
const DefaultRetainMessages = 200

// ElideAbove is the size, in bytes, above which a retained message's
// text, a tool call's arguments or a tool result is elided once the
// history summary covers the message (see Step.Retain).
// Most requests, arguments and results are smaller and are never
// rewritten; payloads (a document, a scratchpad dump) are cut, so the
// messages retention keeps hold at most about ElideAbove bytes each
// beyond the window.
const ElideAbove = 4 << 10

// elidedPreview is how much of an elided text or result is kept.
const elidedPreview = 256

// Elided describes stored text that was cut when the history summary
// came to cover its message: the text's size and SHA-256 before the cut.
// The hash lets an auditor match the stub with a copy kept elsewhere (an
// export taken earlier, the episodic log's copy of a result).
type Elided struct {
	// Bytes is the size of the text before it was elided.
	Bytes int `json:"bytes"`
	// SHA256 is the hex SHA-256 of the text before it was elided.
	SHA256 string `json:"sha256"`
}

func elided(s string) *Elided {
	sum := sha256.Sum256([]byte(s))
	return &Elided{Bytes: len(s), SHA256: hex.EncodeToString(sum[:])}
}

// segRef names a segment of a thread and the index of its first
// message; big says it may hold a text over ElideAbove (its record is
// larger than that, or is not known).
type segRef struct {
	Name  string
	First int
	big   bool
}

// segFirst returns the index of the first message of the segment named
// name: its name is segPrefix, the index in ten digits, a dot and a
// nonce.
func segFirst(name string) (int, bool) {
	digits, _, ok := strings.Cut(strings.TrimPrefix(name, segPrefix), ".")
	if !ok || !strings.HasPrefix(name, segPrefix) {
		return 0, false
	}
	first, err := strconv.Atoi(digits)
	return first, err == nil && first >= 0
}

// summaryRecord is a summary as stored: the Summary, and, with
// retention (Step.Retain), the segments of the messages
// it covers that are kept, so retention finds them without listing the
// store (a scan of the whole keyspace on Redis). Tracked says Kept is
// that list; a summary stored before it was kept, or with retention
// off, lacks it, and the next retention lists the segments once.
type summaryRecord struct {
	Summary
	// Kept lists the segments, space-separated, each as its first
	// message's index, a dot and its nonce ("1234.4a0303266d97" for
	// seg.0000001234.4a0303266d97), or as its whole name.
	Kept    string `json:"kept,omitempty"`
	Tracked bool   `json:"tracked,omitempty"`
}

// segName returns the name of the segment of first message first and
// nonce nonce, as Writer.Write names it.
func segName(first int, nonce string) string {
	b := make([]byte, 0, len(segPrefix)+12+len(nonce))
	b = append(b, segPrefix...)
	for n := 1_000_000_000; n > 1 && first < n; n /= 10 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, int64(first), 10)
	b = append(b, '.')
	return string(append(b, nonce...))
}

// keptRefs returns the segments a summaryRecord.Kept lists, leaving out
// what does not name a segment.
func keptRefs(kept string) []segRef {
	var out []segRef
	for _, e := range strings.Fields(kept) {
		name := e
		if !strings.HasPrefix(e, segPrefix) {
			digits, nonce, _ := strings.Cut(e, ".")
			first, err := strconv.Atoi(digits)
			if err != nil || first < 0 || nonce == "" {
				continue
			}
			name = segName(first, nonce)
		}
		if first, ok := segFirst(name); ok {
			out = append(out, segRef{Name: name, First: first})
		}
	}
	return out
}

// keptList returns segs as summaryRecord.Kept lists them.
func keptList(segs []segRef) string {
	b := make([]byte, 0, 20*len(segs))
	for _, s := range segs {
		if strings.ContainsFunc(s.Name, unicode.IsSpace) {
			continue // not one this package writes; an erase removes it
		}
		if len(b) > 0 {
			b = append(b, ' ')
		}
		if nonce, ok := s.shortNonce(); ok {
			b = append(strconv.AppendInt(b, int64(s.First), 10), '.')
			b = append(b, nonce...)
		} else {
			b = append(b, s.Name...)
		}
	}
	return string(b)
}

// shortNonce returns the nonce of a segment whose name is the one this
// package writes for its first message (segPrefix, the index zero-padded
// to ten digits, '.', the nonce), which keptList then shortens to
// "<first>.<nonce>"; ok is false for any other name.
func (s segRef) shortNonce() (nonce string, ok bool) {
	digits, nonce, _ := strings.Cut(strings.TrimPrefix(s.Name, segPrefix), ".")
	n, err := strconv.Atoi(digits)
	return nonce, err == nil && n == s.First && nonce != "" && (len(digits) == 10 || len(digits) > 10 && digits[0] != '0')
}

// elide returns m with its text, arguments and results over ElideAbove
// cut, each marked with what was cut, and whether anything was. Texts and
// results keep their first elidedPreview bytes; arguments become a JSON
// object, {"_elided":"<n> bytes"}, which providers accept if the message
// is ever sent.
func (m Message) elide() (Message, bool) {
	changed := false
	if len(m.Text) > ElideAbove && m.TextElided == nil {
		m.TextElided, m.Text, changed = elided(m.Text), textcut.Prefix(m.Text, elidedPreview)+"…", true
	}
	var calls, results bool
	m.ToolCalls, calls = elideEach(m.ToolCalls, (*ToolCall).elide)
	m.ToolResults, results = elideEach(m.ToolResults, (*ToolResult).elide)
	return m, changed || calls || results
}

// elideEach returns a copy of in with elide applied to each element, and
// whether it cut any. An empty in is returned as it is.
func elideEach[T any](in []T, elide func(*T) bool) ([]T, bool) {
	if len(in) == 0 {
		return in, false
	}
	changed := false
	out := slices.Clone(in)
	for i := range out {
		if elide(&out[i]) {
			changed = true
		}
	}
	return out, changed
}

// elide cuts the call's arguments when over ElideAbove, and reports
// whether it did.
func (c *ToolCall) elide() bool {
	if len(c.Arguments) <= ElideAbove || c.Elided != nil {
		return false
	}
	c.Elided, c.Arguments = elided(c.Arguments), `{"_elided":"`+strconv.Itoa(len(c.Arguments))+` bytes"}`
	return true
}

// elide cuts the result's content when over ElideAbove, and reports
// whether it did.
func (r *ToolResult) elide() bool {
	if len(r.Content) <= ElideAbove || r.Elided != nil {
		return false
	}
	r.Elided, r.Content = elided(r.Content), textcut.Prefix(r.Content, elidedPreview)+"…"
	return true
}

// elideSegments rewrites the named segments of the thread whose messages
// the summary now covers (all before index covers), eliding what is over
// ElideAbove. It runs after the head that records the summary is
// written, and is best effort, like the deletion of the records that head
// no longer names: each rewrite is a compare-and-swap on the version
// read, so a segment deleted meanwhile (by retention or an erase) is
// never written again, and a failure leaves the segment whole. A segment
// keeps its name, its messages and their order; only their texts
// shrink, so a reader holding an older head reads a valid segment either
// way (a run that loaded that head, and so loses its compare-and-swap,
// may show the model stubs where compaction would have shown
// references). A segment that runs past covers is left whole.
func (w *Writer) elideSegments(ctx context.Context, names []string, covers int) {
	for _, name := range names {
		w.elideSegment(ctx, name, covers)
	}
}

// elideSegment is elideSegments of one segment.
func (w *Writer) elideSegment(ctx context.Context, name string, covers int) {
	key := storage.ThreadKey(w.threadID, name)
	it, err := w.store.Get(ctx, key)
	if err != nil {
		return
	}
	var s segmentRecord
	if err := json.Unmarshal(it.Value, &s); err != nil || s.First+len(s.Messages) > covers {
		return
	}
	changed := false
	for i, m := range s.Messages {
		var c bool
		if s.Messages[i], c = m.elide(); c {
			changed = true
		}
	}
	if !changed {
		return
	}
	if data, err := encode(s); err == nil {
		_, _ = w.store.Put(ctx, key, data, it.Version)
	}
}

// retain applies Step.Retain when a summary covering
// messages up to covers is stored: of the segments, those the summary
// covers are kept from the start of the one holding message cutoff on.
// segs are the segments of the messages the summary did not cover, kept
// those it covered that were kept; when list (a thread stored before the
// summary record listed them, or with retention off) the covered ones
// are listed from the store, once, and all elided. It returns the new
// retention point, the segments left uncovered and kept, and adds the
// covered ones before the point to drop (deleted once the head that no
// longer reaches them is written) and those newly covered and kept to
// elide (see elideSegments).
func (w *Writer) retain(ctx context.Context, cutoff, covers, retained int, segs []segRef, kept string, list bool, drop []string) (int, []segRef, string, []string, []string, error) {
	var covered, window, elide []segRef
	if list {
		var err error
		if elide, err = w.listCovered(ctx, covers, segs); err != nil {
			return retained, segs, kept, drop, nil, err
		}
		kept = ""
	}
	for _, s := range segs {
		if s.First < covers {
			elide = append(elide, s)
		} else {
			window = append(window, s)
		}
	}
	covered = append(keptRefs(kept), elide...)
	point := retentionPoint(covered, retained, cutoff)
	var keep []segRef
	for _, s := range covered {
		if s.First < point {
			drop = append(drop, s.Name)
		} else {
			keep = append(keep, s)
		}
	}
	var rewrite []string
	for _, s := range elide {
		if s.First >= point && s.big {
			rewrite = append(rewrite, s.Name)
		}
	}
	return point, window, keptList(keep), drop, rewrite, nil
}

// listCovered lists from the store the segments that hold messages
// before covers, other than segs, for retain to elide.
func (w *Writer) listCovered(ctx context.Context, covers int, segs []segRef) ([]segRef, error) {
	prefix := storage.ThreadPrefix(w.threadID)
	keys, err := w.store.List(ctx, prefix+segPrefix)
	if err != nil {
		return nil, err
	}
	var out []segRef
	for _, k := range keys {
		name, err := storage.Unescape(strings.TrimPrefix(k, prefix))
		if err != nil {
			continue
		}
		if first, ok := segFirst(name); ok && first < covers && !slices.ContainsFunc(segs, func(s segRef) bool { return s.Name == name }) {
			out = append(out, segRef{Name: name, First: first, big: true})
		}
	}
	return out, nil
}

// retentionPoint returns the new retention point: the first message of
// the last covered segment that starts at or before cutoff, never
// before retained.
func retentionPoint(covered []segRef, retained, cutoff int) int {
	point := retained
	for _, s := range covered {
		if s.First <= cutoff {
			point = max(point, s.First)
		}
	}
	return point
}
