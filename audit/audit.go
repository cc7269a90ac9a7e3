package audit

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/memlayer/memlayer/storage"
)

// Errors of the package. Check them with errors.Is.
var (
	// ErrNoThread means a thread ID is empty.
	ErrNoThread = errors.New("audit: no thread ID")
)

// FormatVersion is the version of the stored records. A turn of a
// higher version is skipped by [Log.Turns], with a warning.
const FormatVersion = 1

// Name names a thread's audit records: its head is stored under
// storage.ThreadKey(threadID, Name), turn n under
// storage.ThreadKey(threadID, Name+"."+strconv.Itoa(n%Keep)).
const Name = "audit"

// Defaults and limits.
const (
	// DefaultKeep is how many turns a thread keeps when Config.Keep is 0.
	DefaultKeep = 20
	// MaxTextBytes bounds an entry's Text; a longer one is cut at a
	// UTF-8 boundary and followed by "…".
	MaxTextBytes = 512
	// MaxEntries bounds the entries of one turn; Commit keeps the first
	// MaxEntries and counts the rest in Turn.Dropped.
	MaxEntries = 4096
	// maxRetries bounds the attempts of one commit to claim a number.
	maxRetries = 16
	// maxCached bounds the threads whose last number a Log remembers.
	maxCached = 4096
)

// Op is the kind of memory operation an [Entry] records.
type Op string

// The operations.
const (
	// OpRecall: a layer's recall for one step. Tokens is what its block
	// took of the prompt; with scored assembly, Candidates are the
	// candidates it offered, each with its score and whether it was
	// packed.
	OpRecall Op = "recall"
	// OpRoute: where a write went. Layer is the layer the router chose
	// and Reason why; a refused write has Refused set, no Layer, and
	// the reason it was refused. Kind, Text, Importance and Source are
	// the write's.
	OpRoute Op = "route"
	// OpWrite: something was written to a layer: Layer, Kind, Key (a
	// fact's ID, with its Version), Text (as stored, so redacted),
	// Importance and Source; or, for what a layer's Store kept of a
	// step without saying what (the entities it extracted), Count
	// entries of Kind with Source "store".
	OpWrite Op = "write"
	// OpSupersede: a write replaced an earlier version of the same
	// memory: Key and the new Version (the old one stays readable
	// where the layer keeps versions).
	OpSupersede Op = "supersede"
	// OpForget: a memory was forgotten: Layer and Key.
	OpForget Op = "forget"
	// OpEvict: a layer pushed Count entries out to make room for new
	// ones (the entity memory's most-recent list, for example); Key
	// names the one evicted when the layer said which (Count 1).
	OpEvict Op = "evict"
	// OpRedact: Count values of Kind (e-mail, card, ...) were masked
	// before they reached a store.
	OpRedact Op = "redact"
)

// Candidate is one candidate of a scored recall.
type Candidate struct {
	// Layer and Key identify it (a fact's or an episode's ID).
	Layer string `json:"layer"`
	Key   string `json:"key"`
	// Score is its score: when it was packed, the score it was packed
	// with (redundancy included); otherwise its score before
	// redundancy.
	Score  float64 `json:"score"`
	Tokens int     `json:"tokens"`
	// Packed reports whether it went into the prompt.
	Packed bool `json:"packed,omitempty"`
}

// Entry is one memory operation. Fields that do not apply to its Op are
// zero.
type Entry struct {
	Op Op `json:"op"`
	// Step is the run's step (model call) it happened in; Depth is 0 for
	// a top-level run, 1 for its child agents, and so on.
	Step  int `json:"step"`
	Depth int `json:"depth,omitempty"`
	// Layer is the ID of the layer operated on.
	Layer string `json:"layer,omitempty"`
	// Kind is a write's kind ("preference", "reasoning", ...), or the
	// kind of data a redaction masked.
	Kind string `json:"kind,omitempty"`
	// Key and Version identify what was written, superseded or
	// forgotten.
	Key     string `json:"key,omitempty"`
	Version int    `json:"version,omitempty"`
	// Text is what was written, at most MaxTextBytes.
	Text       string  `json:"text,omitempty"`
	Importance float64 `json:"importance,omitempty"`
	// Source says who asked for the operation ("by=model step=2
	// tool=semantic_memory_memorize").
	Source string `json:"source,omitempty"`
	// Refused marks a write the router refused; Reason says why it was
	// routed where it was, or refused.
	Refused bool   `json:"refused,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Count is how many entries an eviction, a redaction or a counted
	// write concerned.
	Count int `json:"count,omitempty"`
	// Tokens is what a recalled block took of the prompt.
	Tokens int `json:"tokens,omitempty"`
	// Candidates are a scored recall's candidates, best first.
	Candidates []Candidate `json:"candidates,omitempty"`
	// Bytes is the size of a write's text as stored, before the cut to
	// MaxTextBytes; zero when the layer did not say.
	Bytes int `json:"bytes,omitempty"`
}

// IsWrite reports whether e changed what a layer holds: a write, a
// supersede or a forget.
func (e Entry) IsWrite() bool {
	return e.Op == OpWrite || e.Op == OpSupersede || e.Op == OpForget
}

// Turn is the audit of one turn of a thread: the memory operations of one
// agent run, or whatever a caller committed as one.
type Turn struct {
	// Seq numbers the thread's turns from 1, in commit order.
	Seq int64 `json:"seq"`
	// Time is when it was committed.
	Time time.Time `json:"time"`
	// Entries are the turn's operations, in the order they were recorded.
	Entries []Entry `json:"events"`
	// Dropped counts the entries beyond MaxEntries that were not kept.
	Dropped int `json:"dropped,omitempty"`
}

// Writes returns the turn's entries that changed what a layer holds (see
// [Entry.IsWrite]), in order.
func (t Turn) Writes() []Entry {
	var out []Entry
	for _, e := range t.Entries {
		if e.IsWrite() {
			out = append(out, e)
		}
	}
	return out
}

// Config configures a [Log]. The zero Config is valid: an in-memory
// store, DefaultKeep turns per thread, slog.Default().
type Config struct {
	// Store keeps the records. Nil means a private in-memory store.
	Store storage.Store
	// Keep is how many turns a thread keeps, the newest; zero or
	// negative means DefaultKeep. The turns are stored in Keep slots,
	// recorded in the thread's audit head, so any Log reads them back;
	// a commit with another Keep starts a new window (the turns before
	// it are no longer read, and are overwritten as the window fills).
	Keep int
	// Logger receives the warnings about records skipped. Nil is
	// slog.Default().
	Logger *slog.Logger
	// Now returns the time a turn is committed. Nil is time.Now.
	Now func() time.Time
}

// Log reads and commits the audit turns of threads. It is safe for
// concurrent use, and several processes may share its store: each turn
// number is claimed by a compare-and-swap of the thread's audit head, so
// two commits never take the same one.
type Log struct {
	cfg Config
	mu  sync.Mutex
	// heads is the audit head of the threads this Log committed to last,
	// with its version: the next commit claims a number without reading
	// the head first.
	heads map[string]cachedHead
}

type cachedHead struct {
	last, version int64
	keep          int // the Keep the turns were stored with; 0 for none
}

// New returns a Log. It does no I/O.
func New(cfg Config) *Log {
	if cfg.Store == nil {
		cfg.Store = storage.NewMemoryStore()
	}
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultKeep
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Log{cfg: cfg, heads: map[string]cachedHead{}}
}

// Keep returns how many turns a thread keeps.
func (l *Log) Keep() int { return l.cfg.Keep }

// Store returns the store the turns are kept in.
func (l *Log) Store() storage.Store { return l.cfg.Store }

// head is a thread's audit head: the number of its last turn, and the
// number of slots its turns are stored in.
type head struct {
	Version int   `json:"v"`
	Last    int64 `json:"last"`
	Keep    int   `json:"keep"`
}

// record is a stored turn.
type record struct {
	Version int `json:"v"`
	Turn
}

// Commit stores entries as the thread's next turn and returns it, with
// its Seq and Time. Texts longer than MaxTextBytes are cut and entries
// beyond MaxEntries dropped (counted in Turn.Dropped). The entries are
// copied: the caller may reuse the slice.
//
// A commit is two writes: a compare-and-swap of the thread's audit head,
// which claims the turn's number, and the turn, into the slot of the
// turn it pushes out of the window. The first commit of a thread by this
// Log, or one that lost the head to another writer, reads the head
// first. A head that cannot be decoded is reported and replaced: the
// numbering starts again from 1.
func (l *Log) Commit(ctx context.Context, threadID string, entries []Entry) (Turn, error) {
	if threadID == "" {
		return Turn{}, ErrNoThread
	}
	rec := newRecord(l.cfg.Now().UTC(), entries)
	// Check the turn encodes (a NaN or an infinity does not) before
	// claiming a number for it.
	if err := finite(rec.Entries); err != nil {
		return Turn{}, fmt.Errorf("audit: commit: %w", err)
	}
	hkey := storage.ThreadKey(threadID, Name)
	for attempt := range maxRetries {
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		h, err := l.currentHead(ctx, threadID, hkey)
		if err != nil {
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		seq := h.last + 1
		hb, _ := json.Marshal(head{Version: FormatVersion, Last: seq, Keep: l.cfg.Keep}) // numbers only
		rec.Seq = seq
		b, err := json.Marshal(rec)
		if err != nil { // finite checked the only values that can fail
			return Turn{}, fmt.Errorf("audit: commit: turn %d: %w", seq, err)
		}
		v, err := l.write(ctx, hkey, hb, h.version, slotKey(threadID, seq, l.cfg.Keep), b)
		if err != nil {
			l.setCached(threadID, nil)
			if errors.Is(err, storage.ErrConflict) {
				continue // another writer claimed it
			}
			return Turn{}, fmt.Errorf("audit: commit: turn %d: %w", seq, err)
		}
		l.setCached(threadID, &cachedHead{last: seq, version: v, keep: l.cfg.Keep})
		return rec.Turn, nil
	}
	return Turn{}, fmt.Errorf("audit: commit: %d attempts lost the thread's audit head: %w", maxRetries, storage.ErrConflict)
}

// newRecord returns the record of a turn at now of entries: each text
// cut, up to MaxEntries of them, copied.
func newRecord(now time.Time, entries []Entry) record {
	rec := record{Version: FormatVersion, Turn: Turn{Time: now, Entries: make([]Entry, 0, min(len(entries), MaxEntries))}}
	rec.Dropped = max(len(entries)-MaxEntries, 0)
	for _, e := range entries[:len(entries)-rec.Dropped] {
		e.Text = cut(e.Text)
		e.Candidates = slices.Clone(e.Candidates)
		rec.Entries = append(rec.Entries, e)
	}
	return rec
}

// write claims the turn, writing the head hb under hkey with
// compare-and-swap against version, then writes the turn's record under
// slot, and returns the head's new version. On a storage.Batcher both are
// one transaction; otherwise a claim whose record fails stays claimed,
// not written (Turns skips it). A conflict is on the head.
func (l *Log) write(ctx context.Context, hkey string, hb []byte, version int64, slot string, rec []byte) (int64, error) {
	if b, ok := l.cfg.Store.(storage.Batcher); ok {
		vs, err := b.WriteBatch(ctx, []storage.Write{{Key: hkey, Value: hb, IfVersion: version}, {Key: slot, Value: rec, IfVersion: storage.AnyVersion}})
		if err != nil {
			return 0, err
		}
		return vs[0], nil
	}
	v, err := l.cfg.Store.Put(ctx, hkey, hb, version)
	if err != nil {
		return 0, err
	}
	if _, err := l.cfg.Store.Put(ctx, slot, rec, storage.AnyVersion); err != nil {
		return v, err
	}
	return v, nil
}

// Turns returns the turns the thread keeps, oldest first: the newest
// Keep of the Log that last committed to it; none for a thread with no
// audit. A turn that cannot be
// decoded, or was written by a newer version of this package, is skipped
// and reported through Config.Logger, and so is a head that cannot be
// decoded (then there are none).
func (l *Log) Turns(ctx context.Context, threadID string) ([]Turn, error) {
	if threadID == "" {
		return nil, ErrNoThread
	}
	h, err := l.readHead(ctx, threadID, storage.ThreadKey(threadID, Name))
	if err != nil {
		return nil, fmt.Errorf("audit: turns: %w", err)
	}
	var out []Turn
	for seq := max(h.last-int64(h.keep)+1, 1); seq <= h.last; seq++ {
		it, err := l.cfg.Store.Get(ctx, slotKey(threadID, seq, h.keep))
		if errors.Is(err, storage.ErrNotFound) {
			continue // claimed, not written
		}
		if err != nil {
			return nil, fmt.Errorf("audit: turns: %w", err)
		}
		if t, ok := l.decodeTurn(ctx, threadID, seq, it.Value); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// decodeTurn decodes the turn seq of the thread from its slot's value b.
// It reports false for a turn that cannot be decoded or is of a newer
// format (both reported through Config.Logger), and for an older turn
// (seq was claimed, not written).
func (l *Log) decodeTurn(ctx context.Context, threadID string, seq int64, b []byte) (Turn, bool) {
	var rec record
	switch err := json.Unmarshal(b, &rec); {
	case err != nil || rec.Version < 1:
		l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "audit: skipping a turn that cannot be decoded",
			slog.String("thread", threadID), slog.Int64("turn", seq), slog.Any("error", err))
		return Turn{}, false
	case rec.Version > FormatVersion:
		l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "audit: skipping a turn of a newer format",
			slog.String("thread", threadID), slog.Int64("turn", seq), slog.Int("version", rec.Version))
		return Turn{}, false
	}
	return rec.Turn, rec.Seq == seq
}

// currentHead returns the thread's audit head: the one this Log cached, else
// the stored one (key).
func (l *Log) currentHead(ctx context.Context, threadID, key string) (cachedHead, error) {
	if h, ok := l.cached(threadID); ok {
		return h, nil
	}
	return l.readHead(ctx, threadID, key)
}

// readHead reads the thread's audit head; none is {0, NoVersion}. One
// that cannot be decoded is reported and read as {0, its version}, so
// that the next claim replaces it.
func (l *Log) readHead(ctx context.Context, threadID, key string) (cachedHead, error) {
	it, err := l.cfg.Store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return cachedHead{version: storage.NoVersion}, nil
	}
	if err != nil {
		return cachedHead{}, err
	}
	var h head
	if err := json.Unmarshal(it.Value, &h); err != nil || h.Version < 1 || h.Last < 0 || h.Keep < 1 {
		l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "audit: the thread's audit head cannot be decoded; numbering starts again",
			slog.String("thread", threadID), slog.Any("error", err))
		return cachedHead{version: it.Version}, nil
	}
	return cachedHead{last: h.Last, version: it.Version, keep: h.Keep}, nil
}

func (l *Log) cached(threadID string) (cachedHead, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.heads[threadID]
	return h, ok
}

// setCached remembers the thread's head; nil forgets it.
func (l *Log) setCached(threadID string, h *cachedHead) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h == nil {
		delete(l.heads, threadID)
		return
	}
	if len(l.heads) >= maxCached {
		clear(l.heads)
	}
	l.heads[threadID] = *h
}

// finite reports an error for the first NaN or infinity among the
// entries' numbers, which JSON cannot encode: an entry's Importance or a
// candidate's Score.
func finite(entries []Entry) error {
	bad := func(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) }
	for i, e := range entries {
		if bad(e.Importance) {
			return fmt.Errorf("entry %d: importance %v is not a number JSON can encode", i, e.Importance)
		}
		for _, c := range e.Candidates {
			if bad(c.Score) {
				return fmt.Errorf("entry %d: candidate %s: score %v is not a number JSON can encode", i, c.Key, c.Score)
			}
		}
	}
	return nil
}

// slotKey is the key of the slot turn seq of the thread is stored in,
// of keep slots.
func slotKey(threadID string, seq int64, keep int) string {
	return storage.ThreadKey(threadID, Name+"."+strconv.FormatInt(seq%int64(keep), 10))
}

// cut bounds s to MaxTextBytes, at a rune boundary.
func cut(s string) string {
	if len(s) <= MaxTextBytes {
		return s
	}
	n := MaxTextBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
