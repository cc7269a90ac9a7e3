package episodicmemory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FormatVersion is the newest version of the records this package
// writes (the head, segments, digest records and snapshots) and the
// newest it reads. A segment or snapshot that holds a note ([KindNote])
// is version 2, which builds from before notes refuse with [ErrVersion]
// rather than set aside as corrupt. A snapshot of a stored log is version
// 3: it names a position in the log (see [Layer.Snapshot]) instead of
// copying the episodes. Every other record is version 1, as before.
// Records of a later version are refused with ErrVersion; records
// without a version, or that do not decode, are [ErrCorrupt].
//
// # The stored log
//
// A scope's log lives under storage.LayerKey(id, scopeKey, name), with
// these names:
//
//	head                       {"version":1,"next":12,"digested":8,"dropped":0,"base":0,"lastDigest":0,"raw":5,"rawTokens":830,"counted":true}
//	seg/<seq, 20 digits>       {"version":1,"seq":5,"episodes":[Episode, ...]}
//	digest/<seq, 20 digits>    {"version":1,"from":0,"to":8,"prev":-1,"digests":[Digest, ...]}
//	quarantine/<unix-nanos>    a record that could not be read, set aside
//
// The head is the only record ever rewritten, always with
// compare-and-swap, and stays about the same size however long the log
// grows. Its raw, rawTokens and counted (optional; a head without them
// reads as before) count the episodes of the segments not yet folded,
// so that a step decides whether to compact without reading them. Its
// cap (optional) is the capacity's ledger of the index (see Capacity).
// A step writes its episodes, once, as segment seg/<next> (create-only,
// so two writers never share a number), then advances next on the head
// past it; a writer that finds the number taken advances the head for
// the segment's writer and takes the next number. So every segment
// below next is written, and a writer stopped between its two writes
// loses nothing. Segments below digested are folded: their episodes'
// digests are in the digest records, a chain from lastDigest back
// through prev, each covering [from, to). Segments below dropped have
// been deleted (the retention limit), and nothing below base (set by
// Clear and Restore) is part of the log.
const FormatVersion = markVersion

const (
	// baseVersion is the version of every record but those holding a
	// note and marks.
	baseVersion = 1
	// noteVersion is the version of a segment or snapshot holding a note.
	noteVersion = 2
	// markVersion is the version of a mark.
	markVersion = 3
)

// versionOf is the version a segment or snapshot of eps is written with
// (see FormatVersion).
func versionOf(eps []Episode) int {
	if slices.ContainsFunc(eps, func(e Episode) bool { return e.Kind == KindNote }) {
		return noteVersion
	}
	return baseVersion
}

// head is the log's head record.
type head struct {
	Version  int   `json:"version"`
	Next     int64 `json:"next"`     // the next segment number to claim
	Digested int64 `json:"digested"` // segments below are folded into digest records
	Dropped  int64 `json:"dropped"`  // segments below are deleted
	Base     int64 `json:"base"`     // nothing below is part of the log
	// LastDigest is the first segment of the newest digest record; -1
	// when there is none.
	LastDigest int64 `json:"lastDigest"`
	// Raw and RawTokens count the raw episodes, those of segments
	// [Digested, Next), and their tokens (see rawTokens), when Counted is
	// set: a writer decides whether to compact from them without reading
	// the segments. A head without them (written before they were, or
	// by a writer that does not keep them) gets them from the first
	// writer that reads the raw episodes.
	Raw       int  `json:"raw,omitempty"`
	RawTokens int  `json:"rawTokens,omitempty"`
	Counted   bool `json:"counted,omitempty"`
	// Cap is the capacity's ledger of the log's index (see Capacity):
	// nil on a head written before it was kept, or without the store's
	// index.
	Cap *ledger `json:"cap,omitempty"`
}

// count adds n raw episodes of toks tokens to the head's counts (n and
// toks are negative for episodes folded), when it keeps them. Counts
// that would fall below zero (records changed by hand, say) are dropped:
// the next writer to read the raw episodes counts them again.
func (h *head) count(n, toks int) {
	if !h.Counted {
		return
	}
	h.Raw += n
	h.RawTokens += toks
	if h.Raw < 0 || h.RawTokens < 0 {
		h.uncount()
	}
}

// uncount drops the head's counts.
func (h *head) uncount() { h.Raw, h.RawTokens, h.Counted = 0, 0, false }

// setCount sets the head's counts to n raw episodes of toks tokens.
func (h *head) setCount(n, toks int) { h.Raw, h.RawTokens, h.Counted = n, toks, true }

func emptyHead() head { return head{Version: baseVersion, LastDigest: -1} }

type segment struct {
	Version  int       `json:"version"`
	Seq      int64     `json:"seq"`
	Episodes []Episode `json:"episodes"`
}

type digestRecord struct {
	Version int      `json:"version"`
	From    int64    `json:"from"`
	To      int64    `json:"to"`
	Prev    int64    `json:"prev"` // the previous record's From; -1 when none
	Digests []Digest `json:"digests"`
}

// snapshot is what Snapshot writes: the digests and the raw episodes of
// the layer's view, oldest first.
type snapshot struct {
	Version  int       `json:"version"`
	Digests  []Digest  `json:"digests"`
	Episodes []Episode `json:"episodes"`
}

// mark is what Snapshot writes for a stored log: the log's scope and its
// head when the snapshot was taken, which name every record of the view
// then (segments and digest records are never rewritten), and the
// episodes not yet appended (a failed write), which no record holds.
type mark struct {
	Version int       `json:"version"`
	Scope   string    `json:"scope"`
	Head    head      `json:"head"`
	Pending []Episode `json:"pending,omitempty"`
}

// segName and digestName name a segment and a digest record.
func segName(seq int64) string    { return fmt.Sprintf("seg/%020d", seq) }
func digestName(seq int64) string { return fmt.Sprintf("digest/%020d", seq) }

// parseName returns the kind ("seg" or "digest") and number of a record
// name, or "" when it is neither.
func parseName(name string) (string, int64) {
	kind, num, ok := strings.Cut(name, "/")
	if !ok || kind != "seg" && kind != "digest" || len(num) != 20 {
		return "", 0
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return "", 0
	}
	return kind, n
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Every field is a string, a number, a bool or a clamped time.
		panic("episodicmemory: encode: " + err.Error())
	}
	return b
}

// versioned is a record: its Version field is set from the data.
type versioned interface{ version() int }

func (h *head) version() int         { return h.Version }
func (s *segment) version() int      { return s.Version }
func (r *digestRecord) version() int { return r.Version }
func (s *snapshot) version() int     { return s.Version }
func (m *mark) version() int         { return m.Version }

// decode reads one record of the current or an older version into v, in
// one pass when it decodes; a record that does not is told apart by its
// version (a newer one is ErrVersion, not ErrCorrupt).
func decode(data []byte, v versioned) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return fmt.Errorf("%w: not a JSON object", ErrCorrupt)
	}
	err := json.Unmarshal(data, v)
	ver := v.version()
	if err != nil {
		var peek struct {
			Version int `json:"version"`
		}
		if json.Unmarshal(data, &peek) != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		ver = peek.Version
	}
	switch {
	case ver > FormatVersion:
		return fmt.Errorf("%w: version %d, this build reads up to %d", ErrVersion, ver, FormatVersion)
	case ver < 1:
		return fmt.Errorf("%w: no version, or version %d", ErrCorrupt, ver)
	case err != nil:
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return nil
}

func decodeHead(data []byte) (head, error) {
	h := emptyHead()
	h.Version = 0 // set from the data
	if err := decode(data, &h); err != nil {
		return head{}, err
	}
	if !ordered(0, h.Base, h.Digested, h.Next, 1<<62) || !ordered(0, h.Dropped, h.Next) || !ordered(-1, h.LastDigest) || h.LastDigest >= h.Next {
		return head{}, fmt.Errorf("%w: head out of order: %+v", ErrCorrupt, h)
	}
	h.count(0, 0) // counts below zero are dropped, not trusted
	if h.Cap != nil && !h.Cap.valid() {
		h.Cap = nil // not trusted: counted afresh from the next write
	}
	return h, nil
}

// ordered reports whether xs never decrease.
func ordered(xs ...int64) bool {
	for i := 1; i < len(xs); i++ {
		if xs[i] < xs[i-1] {
			return false
		}
	}
	return true
}

func decodeSegment(data []byte, seq int64) (segment, error) {
	var s segment
	if err := decode(data, &s); err != nil {
		return segment{}, err
	}
	if s.Seq != seq {
		return segment{}, fmt.Errorf("%w: segment %d holds seq %d", ErrCorrupt, seq, s.Seq)
	}
	if err := checkEpisodes(s.Episodes, seq, fmt.Sprintf("segment %d, ", seq)); err != nil {
		return segment{}, err
	}
	return s, nil
}

func decodeDigestRecord(data []byte, from int64) (digestRecord, error) {
	var r digestRecord
	if err := decode(data, &r); err != nil {
		return digestRecord{}, err
	}
	if r.From != from || r.To <= r.From || r.Prev < -1 || r.Prev >= r.From {
		return digestRecord{}, fmt.Errorf("%w: digest record %d covers [%d, %d) after %d", ErrCorrupt, from, r.From, r.To, r.Prev)
	}
	inRecord := func(seq int64) bool { return seq >= r.From && seq < r.To }
	if err := checkDigests(r.Digests, inRecord, fmt.Sprintf("digest record %d, ", from)); err != nil {
		return digestRecord{}, err
	}
	return r, nil
}

// decodeSnapshot reads a snapshot that copies the view (versions 1 and
// 2); a mark is ErrCorrupt here (see decodeMark).
func decodeSnapshot(data []byte) (snapshot, error) {
	var s snapshot
	if err := decode(data, &s); err != nil {
		return snapshot{}, err
	}
	if s.Version == markVersion {
		return snapshot{}, fmt.Errorf("%w: a mark, not a copy of the view", ErrCorrupt)
	}
	if err := checkEpisodes(s.Episodes, -1, ""); err != nil {
		return snapshot{}, err
	}
	if err := checkDigests(s.Digests, func(seq int64) bool { return seq == 0 }, ""); err != nil {
		return snapshot{}, err
	}
	return s, nil
}

// decodeMark reads a snapshot: a mark (ok true), or else a copy of the
// view (see decodeSnapshot).
func decodeMark(data []byte) (m mark, ok bool, err error) {
	var ver struct {
		Version int `json:"version"`
	}
	if json.Unmarshal(bytes.TrimSpace(data), &ver) != nil || ver.Version != markVersion {
		return mark{}, false, nil
	}
	if err := decode(data, &m); err != nil {
		return mark{}, false, err
	}
	h := m.Head
	if m.Scope == "" || h.Version != baseVersion {
		return mark{}, false, fmt.Errorf("%w: mark of scope %q, head version %d", ErrCorrupt, m.Scope, h.Version)
	}
	if _, err := decodeHead(encode(h)); err != nil {
		return mark{}, false, err
	}
	if err := checkEpisodes(m.Pending, -1, "pending "); err != nil {
		return mark{}, false, err
	}
	return m, true, nil
}

// checkEpisodes rejects the first of eps this package would not have
// written, naming it after prefix ("segment 5, ", "pending "), and puts
// the others in segment seq.
func checkEpisodes(eps []Episode, seq int64, prefix string) error {
	for i := range eps {
		if err := checkEpisode(&eps[i]); err != nil {
			return fmt.Errorf("%w: %sepisode %d: %w", ErrCorrupt, prefix, i, err)
		}
		eps[i].seq = seq
	}
	return nil
}

// checkDigests rejects the first of ds this package would not have
// written (no reference, a segment inSeq refuses, a time out of range),
// naming it after prefix ("digest record 5, ").
func checkDigests(ds []Digest, inSeq func(int64) bool, prefix string) error {
	for i, d := range ds {
		if d.Ref == "" || !inSeq(d.Seq) {
			return fmt.Errorf("%w: %sdigest %d: ref %q, seq %d", ErrCorrupt, prefix, i, d.Ref, d.Seq)
		}
		if !inYears(d.Time) {
			return fmt.Errorf("%w: %sdigest %d: time out of range", ErrCorrupt, prefix, i)
		}
	}
	return nil
}

// inYears reports whether t is in the years JSON can hold (see clampTime).
func inYears(t time.Time) bool {
	y := t.Year()
	return y >= 0 && y <= 9999
}

// checkEpisode rejects an episode this package would not have written.
func checkEpisode(e *Episode) error {
	switch {
	case e.Ref == "":
		return fmt.Errorf("no ref")
	case !slices.Contains(kinds, e.Kind):
		return fmt.Errorf("kind %q", e.Kind)
	case e.Size < 0 || e.Size > 0 && e.Size < len(e.Result):
		return fmt.Errorf("size %d for a result of %d bytes", e.Size, len(e.Result))
	case !inYears(e.Time):
		return fmt.Errorf("time out of range")
	}
	return nil
}
