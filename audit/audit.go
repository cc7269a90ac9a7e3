package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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

// FormatVersion is the version of a stored turn. A turn of a higher
// version is skipped by [Log.Turns], with a warning.
const FormatVersion = 1

// Name is the prefix of the names of a thread's audit records: turn n is
// stored under storage.ThreadKey(threadID, Name+"."+n), n in 16 digits.
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
	// maxRetries bounds the attempts of one commit to claim a number.
	maxRetries = 16
	// maxCached bounds the threads whose last number a Log remembers.
	maxCached = 4096
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
	// Logger receives the warnings about turns skipped or not deleted.
	// Nil is slog.Default().
	Logger *slog.Logger
	// Now returns the time a turn is committed. Nil is time.Now.
	Now func() time.Time
}

// Log reads and commits the audit turns of threads. It is safe for
// concurrent use, and several processes may share its store: each turn
// number is claimed by a create-only Put, so two commits never take the
// same one.
type Log struct {
	cfg Config
	mu  sync.Mutex
	// last is the number of the last turn this Log committed, by thread:
	// the next commit claims the one after without listing the thread.
	last map[string]int64
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
	return &Log{cfg: cfg, last: map[string]int64{}}
}

// Keep returns how many turns a thread keeps.
func (l *Log) Keep() int { return l.cfg.Keep }

// record is a stored turn.
type record struct {
	Version int `json:"v"`
	Turn
}

// Commit stores events as the thread's next turn and returns it, with
// its Seq and Time. Texts longer than MaxTextBytes are cut and events
// beyond MaxEvents dropped (counted in Turn.Dropped); turns that fall
// out of the newest Config.Keep are deleted. The events are copied: the
// caller may reuse the slice.
//
// A commit is one create-only Put of the turn, and one Delete of the
// turn it pushes out of the window; the first commit of a thread by this
// Log, or one that finds its number taken (by another process), first
// lists the thread's turns.
func (l *Log) Commit(ctx context.Context, threadID string, events []Event) (Turn, error) {
	if threadID == "" {
		return Turn{}, ErrNoThread
	}
	rec := record{Version: FormatVersion, Turn: Turn{Time: l.cfg.Now().UTC(), Events: make([]Event, 0, min(len(events), MaxEvents))}}
	for i, e := range events {
		if i == MaxEvents {
			rec.Dropped = len(events) - MaxEvents
			break
		}
		e.Text = cut(e.Text)
		e.Candidates = slices.Clone(e.Candidates)
		rec.Events = append(rec.Events, e)
	}
	for attempt := range maxRetries {
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		last, known := l.lastSeq(threadID)
		var stale []int64
		if !known {
			seqs, err := l.seqs(ctx, threadID)
			if err != nil {
				return Turn{}, fmt.Errorf("audit: commit: %w", err)
			}
			if n := len(seqs); n > 0 {
				last = seqs[n-1]
			}
			stale = seqs[:max(len(seqs)-(l.cfg.Keep-1), 0)]
		} else if old := last + 1 - int64(l.cfg.Keep); old > 0 {
			stale = []int64{old}
		}
		rec.Seq = last + 1
		b, err := json.Marshal(rec)
		if err != nil {
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		if _, err := l.cfg.Store.Put(ctx, turnKey(threadID, rec.Seq), b, storage.NoVersion); err != nil {
			l.setLast(threadID, -1)
			if errors.Is(err, storage.ErrConflict) {
				continue // another writer took the number
			}
			return Turn{}, fmt.Errorf("audit: commit: %w", err)
		}
		l.setLast(threadID, rec.Seq)
		for _, s := range stale {
			if err := l.cfg.Store.Delete(ctx, turnKey(threadID, s), storage.AnyVersion); err != nil {
				l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "audit: an old turn was not deleted; the next listing retries",
					slog.String("thread", threadID), slog.Int64("turn", s), slog.Any("error", err))
			}
		}
		return rec.Turn, nil
	}
	return Turn{}, fmt.Errorf("audit: commit: %d attempts found their turn number taken: %w", maxRetries, storage.ErrConflict)
}

// Turns returns the turns the thread keeps, the newest Config.Keep,
// oldest first; none for a thread with no audit. A turn that cannot be
// decoded, or was written by a newer version of this package, is skipped
// and reported through Config.Logger.
func (l *Log) Turns(ctx context.Context, threadID string) ([]Turn, error) {
	if threadID == "" {
		return nil, ErrNoThread
	}
	seqs, err := l.seqs(ctx, threadID)
	if err != nil {
		return nil, fmt.Errorf("audit: turns: %w", err)
	}
	seqs = seqs[max(len(seqs)-l.cfg.Keep, 0):]
	out := make([]Turn, 0, len(seqs))
	for _, seq := range seqs {
		it, err := l.cfg.Store.Get(ctx, turnKey(threadID, seq))
		if errors.Is(err, storage.ErrNotFound) {
			continue // deleted since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("audit: turns: %w", err)
		}
		var rec record
		switch err := json.Unmarshal(it.Value, &rec); {
		case err != nil || rec.Version < 1 || rec.Seq != seq:
			l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "audit: skipping a turn that cannot be decoded",
				slog.String("thread", threadID), slog.Int64("turn", seq), slog.Any("error", err))
			continue
		case rec.Version > FormatVersion:
			l.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "audit: skipping a turn of a newer format",
				slog.String("thread", threadID), slog.Int64("turn", seq), slog.Int("version", rec.Version))
			continue
		}
		out = append(out, rec.Turn)
	}
	return out, nil
}

// seqs lists the numbers of the thread's stored turns, in order.
func (l *Log) seqs(ctx context.Context, threadID string) ([]int64, error) {
	prefix := turnPrefix(threadID)
	keys, err := l.cfg.Store.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]int64, 0, len(keys))
	for _, k := range keys {
		if n, err := strconv.ParseInt(k[len(prefix):], 10, 64); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (l *Log) lastSeq(threadID string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.last[threadID]
	return n, ok
}

// setLast remembers seq as the thread's last turn; a negative seq
// forgets it.
func (l *Log) setLast(threadID string, seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq < 0 {
		delete(l.last, threadID)
		return
	}
	if len(l.last) >= maxCached {
		clear(l.last)
	}
	l.last[threadID] = seq
}

// turnPrefix is the prefix of the keys of the thread's turns.
func turnPrefix(threadID string) string { return storage.ThreadKey(threadID, Name+".") }

// turnKey is the key of turn seq of the thread.
func turnKey(threadID string, seq int64) string {
	return storage.ThreadKey(threadID, fmt.Sprintf("%s.%016d", Name, seq))
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
