package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/memlayer/memlayer/storage"
)

// Errors of the package. Check them with errors.Is.
var (
	// ErrCorrupt means a stored audit record cannot be decoded.
	ErrCorrupt = errors.New("audit: corrupt record")
	// ErrVersion means a stored audit record was written by a newer
	// version of this package.
	ErrVersion = errors.New("audit: unsupported format version")
	// ErrNoThread means a thread ID is empty.
	ErrNoThread = errors.New("audit: no thread ID")
)

// FormatVersion is the version of the stored record.
const FormatVersion = 1

// Name is the name of a thread's audit record: it is stored under
// storage.ThreadKey(threadID, Name).
const Name = "audit"

// Defaults and limits.
const (
	// DefaultKeep is how many turns a thread keeps when Config.Keep is 0.
	DefaultKeep = 20
	// MaxTextBytes bounds an event's Text; a longer one is cut at a
	// UTF-8 boundary and followed by "…".
	MaxTextBytes = 512
	// MaxEvents bounds the events of one turn; Commit keeps the first
	// MaxEvents and counts the rest in Turn.Dropped.
	MaxEvents = 4096
	// maxRetries bounds the compare-and-swap attempts of one commit.
	maxRetries = 16
)

// Op is the kind of memory operation an [Event] records.
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
	// Importance and Source.
	OpWrite Op = "write"
	// OpSupersede: a write replaced an earlier version of the same
	// memory: Key and the new Version (the old one stays readable
	// where the layer keeps versions).
	OpSupersede Op = "supersede"
	// OpForget: a memory was forgotten: Layer and Key.
	OpForget Op = "forget"
	// OpEvict: a layer pushed Count entries out to make room for new
	// ones (the entity memory's most-recent list, for example).
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

// Event is one memory operation. Fields that do not apply to its Op are
// zero.
type Event struct {
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
	// tool=semantic/memorize").
	Source string `json:"source,omitempty"`
	// Refused marks a write the router refused; Reason says why it was
	// routed where it was, or refused.
	Refused bool   `json:"refused,omitempty"`
	Reason  string `json:"reason,omitempty"`
	// Count is how many entries an eviction or a redaction concerned.
	Count int `json:"count,omitempty"`
	// Tokens is what a recalled block took of the prompt.
	Tokens int `json:"tokens,omitempty"`
	// Candidates are a scored recall's candidates, best first.
	Candidates []Candidate `json:"candidates,omitempty"`
}

// IsWrite reports whether e changed what a layer holds: a write, a
// supersede or a forget.
func (e Event) IsWrite() bool {
	return e.Op == OpWrite || e.Op == OpSupersede || e.Op == OpForget
}

// Turn is the audit of one turn of a thread: the memory operations of one
// agent run, or whatever a caller committed as one.
type Turn struct {
	// Seq numbers the thread's turns from 1, in commit order.
	Seq int64 `json:"seq"`
	// Time is when it was committed.
	Time time.Time `json:"time"`
	// Events are the turn's operations, in the order they were recorded.
	Events []Event `json:"events"`
	// Dropped counts the events beyond MaxEvents that were not kept.
	Dropped int `json:"dropped,omitempty"`
}

// Writes returns the turn's events that changed what a layer holds (see
// [Event.IsWrite]), in order.
func (t Turn) Writes() []Event {
	var out []Event
	for _, e := range t.Events {
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
	// negative means DefaultKeep.
	Keep int
	// Logger receives the warnings about records set aside or skipped.
	// Nil is slog.Default().
	Logger *slog.Logger
	// Now returns the time a turn is committed. Nil is time.Now.
	Now func() time.Time
}

// Log reads and commits the audit turns of threads. It is safe for
// concurrent use, and several processes may share its store: a commit
// that loses a compare-and-swap reads the record again and retries.
type Log struct {
	cfg Config
}

// New returns a Log. It does no I/O.
func New(cfg Config) *Log {
	if cfg.Store == nil {
		cfg.Store = storage.NewMemory()
	}
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultKeep
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Log{cfg: cfg}
}

// Keep returns how many turns a thread keeps.
func (l *Log) Keep() int { return l.cfg.Keep }

// record is the stored value: the thread's last turns, oldest first,
// each kept as raw JSON so that one bad turn does not lose the others.
type record struct {
	Version int               `json:"v"`
	Next    int64             `json:"next"`
	Turns   []json.RawMessage `json:"turns"`
}

// Commit stores events as the thread's next turn and returns it, with
// its Seq and Time. Texts longer than MaxTextBytes are cut and events
// beyond MaxEvents dropped (counted in Turn.Dropped); the thread keeps
// its newest Config.Keep turns. A stored record that cannot be decoded is
// set aside first (see the package doc). The events are copied: the
// caller may reuse the slice.
func (l *Log) Commit(ctx context.Context, threadID string, events []Event) (Turn, error) {
	if threadID == "" {
		return Turn{}, ErrNoThread
	}
	t := Turn{Time: l.cfg.Now().UTC(), Events: make([]Event, 0, min(len(events), MaxEvents))}
	for i, e := range events {
		if i == MaxEvents {
			t.Dropped = len(events) - MaxEvents
			break
		}
		e.Text = cut(e.Text)
		e.Candidates = append([]Candidate(nil), e.Candidates...)
		t.Events = append(t.Events, e)
	}
	key := storage.ThreadKey(threadID, Name)
	for attempt := range maxRetries {
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		rec, ver, err := l.load(ctx, threadID, key, true)
		if err != nil {
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		rec.Next++
		t.Seq = rec.Next
		b, err := json.Marshal(t)
		if err != nil {
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		rec.Turns = append(rec.Turns, b)
		if n := len(rec.Turns) - l.cfg.Keep; n > 0 {
			rec.Turns = rec.Turns[n:]
		}
		val, err := json.Marshal(rec)
		if err != nil {
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		if _, err := l.cfg.Store.Put(ctx, key, val, ver); err != nil {
			if errors.Is(err, storage.ErrConflict) {
				continue
			}
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		return t, nil
	}
	return Turn{}, fmt.Errorf("audit: commit: %d attempts lost the race: %w", maxRetries, storage.ErrConflict)
}

// Turns returns the turns the thread keeps, oldest first; none for a
// thread with no audit. A turn that cannot be decoded is skipped and
// reported through Config.Logger. A record that cannot be decoded at all
// is an error wrapping ErrCorrupt (and is left for the next commit to set
// aside); one from a newer version, ErrVersion.
func (l *Log) Turns(ctx context.Context, threadID string) ([]Turn, error) {
	if threadID == "" {
		return nil, ErrNoThread
	}
	rec, _, err := l.load(ctx, threadID, storage.ThreadKey(threadID, Name), false)
	if err != nil {
		return nil, fmt.Errorf("audit: turns: %w", err)
	}
	out := make([]Turn, 0, len(rec.Turns))
	for i, raw := range rec.Turns {
		var t Turn
		if err := json.Unmarshal(raw, &t); err != nil || t.Seq <= 0 {
			l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "audit: skipping a turn that cannot be decoded",
				slog.String("thread", threadID), slog.Int("index", i), slog.Any("error", err))
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// load reads the thread's record and its version (storage.NoVersion when
// there is none). A record that cannot be decoded is an ErrCorrupt error,
// or, with fix, is copied aside and replaced by an empty record (of the
// stored version, so the caller's Put overwrites it).
func (l *Log) load(ctx context.Context, threadID, key string, fix bool) (record, int64, error) {
	rec := record{Version: FormatVersion}
	it, err := l.cfg.Store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return rec, storage.NoVersion, nil
	}
	if err != nil {
		return rec, 0, err
	}
	derr := decode(it.Value, &rec)
	switch {
	case derr == nil:
		return rec, it.Version, nil
	case errors.Is(derr, ErrVersion) || !fix:
		return rec, 0, derr
	}
	qkey := storage.ThreadKey(threadID, Name+".quarantine."+strconv.FormatInt(l.cfg.Now().UnixNano(), 10))
	if _, err := l.cfg.Store.Put(ctx, qkey, it.Value, storage.AnyVersion); err != nil {
		return rec, 0, fmt.Errorf("setting aside a corrupt record: %w", err)
	}
	l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "audit: set aside a record that cannot be decoded; the thread's audit starts afresh",
		slog.String("thread", threadID), slog.String("key", qkey), slog.Any("error", derr))
	// Seq goes on from what the corrupt record does not tell: from 0.
	return record{Version: FormatVersion}, it.Version, nil
}

func decode(b []byte, rec *record) error {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	switch {
	case r.Version > FormatVersion:
		return fmt.Errorf("%w: %d (this package reads up to %d)", ErrVersion, r.Version, FormatVersion)
	case r.Version < 1 || r.Next < int64(len(r.Turns)):
		return fmt.Errorf("%w: version %d, next %d, %d turns", ErrCorrupt, r.Version, r.Next, len(r.Turns))
	}
	*rec = r
	return nil
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
