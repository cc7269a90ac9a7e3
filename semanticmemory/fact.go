package semanticmemory

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memlayer/memlayer/layer"
)

// Errors of the package. Check them with errors.Is.
var (
	// ErrInvalidConfig means a Config field is out of range.
	ErrInvalidConfig = errors.New("semanticmemory: invalid config")
	// ErrInvalidFact means a fact to remember is unusable: empty or too
	// long text, a bad kind, an importance outside [0, 1].
	ErrInvalidFact = errors.New("semanticmemory: invalid fact")
	// ErrNotFound means no remembered (live) fact has the ID.
	ErrNotFound = errors.New("semanticmemory: fact not found")
	// ErrCorrupt means a stored record or a snapshot cannot be decoded.
	ErrCorrupt = errors.New("semanticmemory: corrupt record")
	// ErrVersion means a stored record or a snapshot was written by a
	// newer version of this package.
	ErrVersion = errors.New("semanticmemory: unsupported format version")
)

// FormatVersion is the version of the stored records and of snapshots.
// Records of a higher version fail the read (and are left untouched);
// lower ones do not exist yet.
const FormatVersion = 1

// Limits on a fact.
const (
	// MaxTextBytes is the longest fact text, after white space is
	// collapsed.
	MaxTextBytes = 2000
	// MaxKindBytes is the longest kind.
	MaxKindBytes = 32
	// DefaultKind is the kind of a fact remembered without one.
	DefaultKind = layer.DefaultKind
	// DefaultImportance is the importance of a fact memorized without one.
	DefaultImportance = layer.DefaultImportance
)

// Source says where a fact came from.
type Source struct {
	// By is who wrote it: "model" (the memorize tool), "code" (the Go
	// API), "user" (code writing what the user said), "layer:<id>" (a
	// layer's Store, through agentloop's router) or [ByExtractor]
	// (model-based consolidation, see [Consolidator]).
	By string `json:"by,omitempty"`
	// Thread is the thread the fact was written in.
	Thread string `json:"thread,omitempty"`
	// Step is the run's step (model call) it was written in.
	Step int `json:"step,omitempty"`
	// Tool is the tool that wrote it, if any.
	Tool string `json:"tool,omitempty"`
}

// String renders the source for [layer.Candidate.Source]: its non-empty
// parts, "by=model thread=t1 step=3 tool=semantic_memory_memorize".
func (s Source) String() string {
	step := ""
	if s.Step != 0 {
		step = strconv.Itoa(s.Step)
	}
	var parts []string
	for _, p := range [][2]string{{"by", s.By}, {"thread", s.Thread}, {"step", step}, {"tool", s.Tool}} {
		if p[1] != "" {
			parts = append(parts, p[0]+"="+p[1])
		}
	}
	return strings.Join(parts, " ")
}

// Fact is one version of a distilled fact.
type Fact struct {
	// ID names the fact across its versions ("f" and the number of the
	// record that first wrote it).
	ID string `json:"id"`
	// Text is the fact, on one line.
	Text string `json:"text"`
	// Kind groups facts ("preference", "fact", "profile" ...): a lowercase
	// word of [a-z0-9_-].
	Kind string `json:"kind"`
	// Importance is in [0, 1].
	Importance float64 `json:"importance"`
	// Source says who wrote this version, where.
	Source Source `json:"source"`
	// Created is when the first version was written; Updated when this
	// one was.
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Version counts the fact's versions from 1.
	Version int `json:"version"`
	// Forgotten marks the version that forgot the fact: it is kept for
	// the audit and never recalled.
	Forgotten bool `json:"forgotten,omitempty"`
	// Evicted marks the version that evicted the fact to keep the memory
	// within its capacity (see [Capacity]): like a forgotten one, it is
	// kept for the audit and never recalled.
	Evicted bool `json:"evicted,omitempty"`
	// Embedding is the fact text's embedding, computed once for this
	// version when the layer has an Embedder; empty otherwise.
	Embedding []float32 `json:"embedding,omitempty"`
	// Skill is the skill a fact of kind [SkillKind] holds, of which Text
	// is the rendering; nil for other facts.
	Skill *Skill `json:"skill,omitempty"`
}

// Memo is what to remember: the text, kind, importance and source of a
// new fact.
type Memo struct {
	Text       string
	Kind       string
	Importance float64
	Source     Source
}

// normalize returns m with its text on one line (runs of white space are
// one space) and its kind lowercased, or an error wrapping
// ErrInvalidFact.
func (m Memo) normalize() (Memo, error) {
	if !utf8.ValidString(m.Text) {
		return m, fmt.Errorf("%w: text is not valid UTF-8", ErrInvalidFact)
	}
	m.Text = strings.Join(strings.Fields(m.Text), " ")
	switch {
	case m.Text == "":
		return m, fmt.Errorf("%w: text is empty", ErrInvalidFact)
	case len(m.Text) > MaxTextBytes:
		return m, fmt.Errorf("%w: text of %d bytes exceeds %d", ErrInvalidFact, len(m.Text), MaxTextBytes)
	case !(m.Importance >= 0 && m.Importance <= 1): // NaN too
		return m, fmt.Errorf("%w: importance %v is not in [0, 1]", ErrInvalidFact, m.Importance)
	}
	m.Kind = strings.ToLower(cmp.Or(m.Kind, DefaultKind))
	return m, validKind(m.Kind)
}

func validKind(k string) error {
	if k == "" || len(k) > MaxKindBytes {
		return fmt.Errorf("%w: kind %q must be 1 to %d bytes", ErrInvalidFact, k, MaxKindBytes)
	}
	if strings.Trim(k, kindBytes) != "" {
		return fmt.Errorf("%w: kind %q: only a-z, 0-9, '_' and '-' are allowed", ErrInvalidFact, k)
	}
	return nil
}

// kindBytes are the bytes a kind may hold.
const kindBytes = "abcdefghijklmnopqrstuvwxyz0123456789_-"

// validate reports whether a decoded fact (from a record or a snapshot)
// is one the layer could have written.
func (f *Fact) validate() error {
	m, err := Memo{Text: f.Text, Kind: f.Kind, Importance: f.Importance}.normalize()
	switch {
	case err != nil:
		return err
	case m.Text != f.Text || m.Kind != f.Kind:
		return fmt.Errorf("fact %q: text or kind not in normal form", f.ID)
	case !validID(f.ID):
		return fmt.Errorf("fact id %q: must be 1 to 64 bytes without spaces or brackets", f.ID)
	case f.Version < 1:
		return fmt.Errorf("fact %q: version %d < 1", f.ID, f.Version)
	case !finite(f.Embedding):
		return fmt.Errorf("fact %q: embedding is not finite", f.ID)
	case f.Skill != nil:
		if err := f.Skill.validate(); err != nil {
			return fmt.Errorf("fact %q: %w", f.ID, err)
		}
	}
	return nil
}

// validID reports whether id is a fact ID: 1 to 64 bytes of UTF-8,
// without white space or brackets.
func validID(id string) bool {
	return id != "" && len(id) <= 64 && !strings.ContainsAny(id, " \t\r\n[]<>") && utf8.ValidString(id)
}

// finite reports whether every component of v is a finite number.
func finite(v []float32) bool {
	return !slices.ContainsFunc(v, func(x float32) bool { return math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) })
}

// head is the stored head of the log: records [Base, Next) are the
// layer's state.
type head struct {
	Version int   `json:"v"`
	Base    int64 `json:"base"`
	Next    int64 `json:"next"`
	// Ledger is the capacity ledger after record Next-1; nil on a log
	// written before there was one (see ledgerAt).
	Ledger *ledger `json:"ledger,omitempty"`
}

// record is one write of the log: new versions of facts.
type record struct {
	Version int   `json:"v"`
	Seq     int64 `json:"seq"`
	// Reset makes the record replace every fact before it (Clear,
	// Restore).
	Reset bool   `json:"reset,omitempty"`
	Facts []Fact `json:"facts"`
	// Ledger is the capacity ledger after this record, which publishing
	// the record installs in the head.
	Ledger *ledger `json:"ledger,omitempty"`
}

// snapshot is what Snapshot returns: every version of every fact, by ID
// then version.
type snapshot struct {
	Version int    `json:"version"`
	Facts   []Fact `json:"facts"`
}

func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("semanticmemory: encode: %v", err)) // only plain types are encoded
	}
	return b
}

// decode decodes one stored record or snapshot into v, refusing
// trailing data; ver points to v's format version.
func decode(b []byte, v any, ver *int) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	switch {
	case *ver > FormatVersion:
		return fmt.Errorf("%w: %d (this package reads up to %d)", ErrVersion, *ver, FormatVersion)
	case *ver < 1:
		return fmt.Errorf("%w: format version %d", ErrCorrupt, *ver)
	}
	return nil
}

func decodeHead(b []byte) (head, error) {
	var h head
	if err := decode(b, &h, &h.Version); err != nil {
		return head{}, err
	}
	if h.Base < 0 || h.Next < h.Base {
		return head{}, fmt.Errorf("%w: head base %d, next %d", ErrCorrupt, h.Base, h.Next)
	}
	if err := h.Ledger.check(); err != nil {
		return head{}, fmt.Errorf("%w: head: %w", ErrCorrupt, err)
	}
	return h, nil
}

// decodeRecord decodes the record stored under sequence number seq.
func decodeRecord(b []byte, seq int64) (record, error) {
	var r record
	if err := decode(b, &r, &r.Version); err != nil {
		return record{}, err
	}
	if r.Seq != seq {
		return record{}, fmt.Errorf("%w: record %d says it is %d", ErrCorrupt, seq, r.Seq)
	}
	if err := r.Ledger.check(); err != nil {
		return record{}, fmt.Errorf("%w: record %d: %w", ErrCorrupt, seq, err)
	}
	for i := range r.Facts {
		if err := r.Facts[i].validate(); err != nil {
			return record{}, fmt.Errorf("%w: record %d: %w", ErrCorrupt, seq, err)
		}
	}
	return r, nil
}

// decodeSnapshot decodes and checks a snapshot: versions of one ID
// numbered 1, 2, ... in order.
func decodeSnapshot(b []byte) (snapshot, error) {
	var s snapshot
	if err := decode(b, &s, &s.Version); err != nil {
		return snapshot{}, err
	}
	last := map[string]int{}
	for i := range s.Facts {
		f := &s.Facts[i]
		if err := f.validate(); err != nil {
			return snapshot{}, fmt.Errorf("%w: snapshot: %w", ErrCorrupt, err)
		}
		if f.Version != last[f.ID]+1 {
			return snapshot{}, fmt.Errorf("%w: snapshot: fact %q version %d follows %d", ErrCorrupt, f.ID, f.Version, last[f.ID])
		}
		last[f.ID] = f.Version
	}
	return s, nil
}
