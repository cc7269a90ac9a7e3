package workingmemory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
)

// state is one immutable version of the scratchpad. Updates build a new
// state that shares the unchanged subtrees of the old one; nothing is
// ever modified in place, so readers need no lock and a rejected update
// cannot have touched anything.
//
// A state always has its canonical compact encoding (enc, what is
// stored). Its decoded value may be absent ("cold"): Init keeps only the
// encoding, which is all Recall, Snapshot and Metrics need, and the first
// update decodes it. An idle scratchpad so costs little more than its
// JSON, and a busy one keeps its tree for fast updates.
type state struct {
	version int64     // storage version; 0 = not stored
	enc     []byte    // canonical compact JSON; never modified
	entries int       // top-level keys, or 1 for non-empty text
	log     *writeLog // the writes that made it (stored with it); nil: none

	treeOnce sync.Once
	value    any // a string or an *object, once decoded

	blockOnce   sync.Once
	blockTag    string // the fence tag block was rendered with
	block       string // the rendered, fenced block; "" for an empty state
	blockTokens int    // block's tokens by the default estimate (layer.Query{}.Count)

	fitMu sync.Mutex
	fit   fitted // the last block fitted to a budget by the default estimate
}

// fitted is a block fitted to a budget (see Layer.fit), cached with the
// state: the prompt compiler asks again at every step, mostly with the
// same budget.
type fitted struct {
	tag    string
	budget int
	block  string
	tokens int
}

// fitted returns the block cached for tag and budget, if any.
func (s *state) fitted(tag string, budget int) (fitted, bool) {
	s.fitMu.Lock()
	defer s.fitMu.Unlock()
	return s.fit, s.fit.budget == budget && s.fit.tag == tag && budget > 0
}

// keepFit caches f.
func (s *state) keepFit(f fitted) {
	s.fitMu.Lock()
	defer s.fitMu.Unlock()
	s.fit = f
}

// newState returns the (decoded) state holding v.
func newState(v any, version int64) *state {
	s := &state{version: version, enc: jsonx.Append(nil, v, ""), value: v}
	s.treeOnce.Do(func() {})
	switch v := v.(type) {
	case *jsonx.Object:
		s.entries = len(v.Members)
	case string:
		if v != "" {
			s.entries = 1
		}
	}
	return s
}

// tree returns the decoded value, decoding the encoding on first use.
// The encoding is canonical (this package wrote it), so it decodes
// without error.
func (s *state) tree() any {
	s.treeOnce.Do(func() {
		v, err := jsonx.Decode(s.enc, 1<<16)
		if err != nil {
			panic("workingmemory: canonical state does not decode: " + err.Error())
		}
		s.value = v
	})
	return s.value
}

// empty reports whether the state shows nothing: "" or {}. Zero and false
// are values, not emptiness.
func (s *state) empty() bool {
	return s.entries == 0
}

// rendered returns the Recall block fenced with tag, rendering it once.
// States move only between a Layer and the Layers derived from it, which
// share its ID and so its tag; a state asked for another tag (not
// something this package does) is rendered again rather than served
// from the cache.
func (s *state) rendered(tag string) string {
	s.blockOnce.Do(func() {
		s.blockTag = tag
		s.block = s.render(tag)
		s.blockTokens = layer.Query{}.Count(s.block)
	})
	if s.blockTag != tag {
		return s.render(tag)
	}
	return s.block
}

// render fences the state's text (text as is, an object as 2-space
// indented JSON) with tag; "" for an empty state.
func (s *state) render(tag string) string {
	if s.empty() {
		return ""
	}
	if s.enc[0] == '"' {
		t, _ := s.tree().(string)
		return fence.Wrap(tag, t)
	}
	var b bytes.Buffer
	b.Grow(len(s.enc) * 2)
	_ = json.Indent(&b, s.enc, "", "  ") // enc is valid JSON
	return fence.Wrap(tag, b.String())
}

// writesKey is the reserved member of a stored object state that holds
// its write log. Like DeleteKey it is never part of a state: updates and
// stored states lose it at every depth.
const writesKey = "$writes"

// logSize is how many recent write IDs a stored state keeps.
const logSize = 16

// writeIDLen is the length of a write ID: 16 hex digits.
const writeIDLen = 16

// writeLog identifies the writes that made a stored state: seq counts
// them, and ids holds the IDs of the last logSize, oldest first, each
// writeIDLen bytes, concatenated. It is stored with the state, so a writer
// whose write was reported as failed can read the state back and see
// whether the write landed, even under later writes, and a retried update
// carrying the same ID is recognised and not applied twice.
type writeLog struct {
	seq int64
	ids string
}

// has reports whether the write id is in the log.
func (w *writeLog) has(id string) bool {
	if w == nil {
		return false
	}
	for i := 0; i+writeIDLen <= len(w.ids); i += writeIDLen {
		if w.ids[i:i+writeIDLen] == id {
			return true
		}
	}
	return false
}

// add returns a log holding w's writes and then id (the oldest dropped
// beyond logSize).
func (w *writeLog) add(id string) *writeLog {
	if w == nil {
		return &writeLog{seq: 1, ids: id}
	}
	ids := w.ids + id
	if len(ids) > logSize*writeIDLen {
		ids = ids[len(ids)-logSize*writeIDLen:]
	}
	return &writeLog{seq: w.seq + 1, ids: ids}
}

// count returns the number of writes the log has seen.
func (w *writeLog) count() int64 {
	if w == nil {
		return 0
	}
	return w.seq
}

// record returns what is stored for s: its encoding, with the write log
// as a first member when s is an object, a string "<count> <ids>" (a
// string, so that readers decoding a state of strings still can). A text
// state is stored as is; the log starts over after it.
func (s *state) record() []byte {
	if s.log == nil || s.enc[0] != '{' {
		return s.enc
	}
	b := make([]byte, 0, len(s.enc)+len(s.log.ids)+len(writesKey)+24)
	b = append(b, `{"`+writesKey+`":"`...)
	b = strconv.AppendInt(b, s.log.seq, 10)
	b = append(b, ' ')
	b = append(b, s.log.ids...) // hex digits: nothing to escape
	b = append(b, '"')
	if len(s.enc) > 2 {
		b = append(b, ',')
	}
	return append(b, s.enc[1:]...)
}

// splitRecord separates a decoded stored value from its write log. A
// malformed log is dropped (the state itself is still good).
func splitRecord(v any) (any, *writeLog) {
	o, ok := v.(*jsonx.Object)
	if !ok {
		return v, nil
	}
	i, ok := o.Find(writesKey)
	if !ok {
		return v, nil
	}
	var w *writeLog
	str, _ := o.Members[i].Value.(string)
	count, ids, _ := strings.Cut(str, " ")
	if n, err := strconv.ParseInt(count, 10, 64); err == nil && n >= 0 && len(ids)%writeIDLen == 0 && len(ids) <= logSize*writeIDLen {
		// A copy: the decoded string shares the record's memory.
		w = &writeLog{seq: n, ids: strings.Clone(ids)}
	}
	return &jsonx.Object{Members: slices.Delete(slices.Clone(o.Members), i, i+1)}, w
}

// StoredState returns the state held in a stored record (the value under
// storage.LayerKey(id, scopeKey, "state")) as compact JSON, without the
// write log stored with it, for tools that read the store directly.
func StoredState(record []byte) (json.RawMessage, error) {
	v, err := decodeJSON(record, 1<<16)
	if err != nil {
		return nil, fmt.Errorf("workingmemory: stored state: %w", err)
	}
	v, _ = splitRecord(v)
	return jsonx.Append(nil, v, ""), nil
}
