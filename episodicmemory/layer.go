package episodicmemory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/memlayer/memlayer/internal/seqlog"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/storage"
)

// Layer is the episodic memory: it records every tool invocation of a
// thread (or of a resource's threads) and every turn's outcome as a
// time-ordered log in the store, recalls the episodes most relevant to
// the user's input as one-line digests with references, and offers the
// model a tool to read an episode's full result by its reference.
//
// A Layer from [New] is a template, and [Layer.Init] returns a new Layer
// bound to a run, loaded from and appending to the run's store. A
// template belongs to no run: its methods that read or write the log
// (Note, Compact, Read, Snapshot, Restore, Clear, Keep and the read
// tool's call) fail with an error wrapping [layer.ErrTemplate], and
// Episodes returns none. Methods are safe for concurrent use.
type Layer struct {
	cfg  Config
	spec layer.Spec
	tag  string // the fence tag
	tool string // the read tool's wire name, as the model sees it
	// log is the stored log (log.Store nil: nothing persists), set when
	// the layer is made and never changed; its I/O runs with mu held.
	log seqlog.Log

	mu      sync.Mutex
	thread  string    // the run's thread, recorded in episodes
	head    head      // the head the view is based on
	hver    int64     // its stored version
	digests []Digest  // the newest digests of folded episodes, oldest first
	recent  []Episode // raw episodes not folded, oldest first
	pending []Episode // episodes not yet appended (a failed write)

	// ix is the index Recall and Read query: the store's
	// (storage.Searcher), or a private storage.MemoryIndex filled from
	// the view (private) when the store has none or there is no store.
	ix      storage.Searcher
	col     string // the episodes' collection in ix
	private bool
	// evcol and usecol are the collections of evicted episodes and of
	// uses, and uses the episodes used since the last Close (see
	// Capacity).
	evcol, usecol string
	uses          map[string]bool
	// loaded reports whether the view (the raw episodes not yet folded
	// and, with a private index, the newest digests) has been read: with
	// the store's index it is read at the first write, not at Init.
	loaded bool
	// haveDigests reports whether digests holds the view's newest
	// digests. With the store's index a write needs only the raw
	// episodes, so the digests are read only for Metrics and for
	// comparing a restored snapshot (ensureDigests).
	haveDigests bool

	rawToks  int // tokens of recent and pending (arguments and results)
	rawCount int
	appended int64   // episodes this layer appended, for Metrics
	tasks    tracker // the thread's task episodes (see boundary.go)
	// linkSearch is the turn's search for links (see linksearch.go).
	linkSearch linkSearch
	// template is set on the Layer New returns, never on a bound one.
	template bool
}

// New returns an episodic memory layer. It does no I/O; see [Layer.Init].
func New(cfg Config) (*Layer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	spec := cfg.Spec
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	l := &Layer{cfg: cfg, spec: spec, tag: fence.Tag(cfg.ID), tool: layer.ToolName(cfg.ID, "read"), head: emptyHead(),
		ix: &storage.MemoryIndex{}, private: true, loaded: true, haveDigests: true, col: storage.IndexName(cfg.StorageName(), "template", "episodes"),
		template: true}
	l.log = seqlog.Log{LayerID: cfg.StorageName(), Pkg: "episodicmemory", ErrVersion: ErrVersion, MaxRetries: cfg.MaxRetries,
		Logger: slog.Default(), Now: func() time.Time { return clampTime(cfg.Now()) }}
	return l, nil
}

// unbound returns the error of method called on a template, or nil on a
// bound layer.
func (l *Layer) unbound(method string) error {
	if l.template {
		return fmt.Errorf("episodicmemory: %s on the template of layer %q: call Init first: %w", method, l.cfg.ID, layer.ErrTemplate)
	}
	return nil
}

// open returns an empty layer with l's configuration and logger, bound
// to env's thread and to the log of scope in store, loaded (kept in
// memory when store is nil).
func (l *Layer) open(ctx context.Context, env layer.Env, store storage.Store, scope string) (*Layer, error) {
	b := &Layer{cfg: l.cfg, spec: l.spec, tag: l.tag, tool: l.tool, log: l.log, thread: env.ThreadID, head: emptyHead(),
		col: storage.IndexName(l.cfg.StorageName(), scope, "episodes"), evcol: storage.IndexName(l.cfg.StorageName(), scope, "evicted"),
		usecol: storage.IndexName(l.cfg.StorageName(), scope, "uses")}
	b.log.Store, b.log.Scope = store, scope
	if env.Logger != nil {
		b.log.Logger = env.Logger
	}
	x, ok := searcherOf(store)
	if !ok {
		b.ix, b.private = &storage.MemoryIndex{}, true
	} else {
		b.ix = x
	}
	if store == nil {
		b.loaded, b.haveDigests = true, true
		return b, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.private {
		return b, b.load(ctx)
	}
	h, ver, err := b.readHead(ctx)
	if err != nil {
		return nil, err
	}
	b.head, b.hver = h, ver
	return b, b.catchUpIndex(ctx, h.Next)
}

// ensureLoaded reads the view if it has not been read: the newest
// digests (for snapshots) and the raw episodes not yet folded (for
// compaction), a cost bounded by the configuration, not by the log.
func (l *Layer) ensureLoaded(ctx context.Context) error {
	if l.loaded {
		return nil
	}
	return l.load(ctx)
}

// ensureDigests reads the view, with its newest digests, if they have
// not been read.
func (l *Layer) ensureDigests(ctx context.Context) error {
	if err := l.ensureLoaded(ctx); err != nil || l.haveDigests {
		return err
	}
	digests, err := l.readViewDigests(ctx, l.head)
	if err != nil {
		return err
	}
	l.digests, l.haveDigests = digests, true
	return nil
}

// shared reports whether the log is shared by threads (a resource or the
// global scope).
func (l *Layer) shared() bool {
	return l.spec.Scope == layer.ScopeResource || l.spec.Scope == layer.ScopeGlobal
}

// Spec returns the layer's spec.
func (l *Layer) Spec() layer.Spec { return l.spec }

// Tag returns the name of the block Recall fences its text in: the
// layer ID with '-' replaced by '_' ("episodic_memory" by default).
func (l *Layer) Tag() string { return l.tag }

// Init returns the layer bound to env's run, on the log of
// env.ScopeKey(scope) (nothing is read or persisted in execution scope or
// without env.Store). With a store that can search (storage.Searcher) it
// reads the head and the index's marker, and indexes the segments the
// index lacks: none in a steady state, the whole log once when a log
// written before the index is first used. The view the layer writes from
// (the raw episodes not yet folded) is read at the first write; the
// newest digests only for Metrics. On a store without search it reads the view now, into an
// index of its own. Either way its cost does not grow with the log. A
// record written by a newer version of this package ([ErrVersion]) fails
// Init and is left as it is. An unreadable record is set aside with
// storage.Quarantine and reported through env.Logger: an unreadable
// segment or digest record reads as nothing; an unreadable head starts a
// new log above every stored record. The receiver is not modified.
func (l *Layer) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	store := env.Store
	if l.cfg.Scope == layer.ScopeExecution {
		store = nil
	}
	b, err := l.open(ctx, env, store, env.ScopeKey(l.cfg.Scope))
	if err != nil {
		return nil, fmt.Errorf("episodicmemory: init: %w", err)
	}
	return b, nil
}

// Store records the step's tool invocations (tool, arguments, result or
// error, duration, step, time and the IDs and names found in the
// arguments and result) and, at a step without tool calls, the turn's
// outcome (the request and the answer); calls of its own read tool are
// not recorded. It appends them to the log as one segment: the segment is
// written once, under the next number (create-only), and the head is
// advanced past it with compare-and-swap; on a lost race the segments
// other writers appended are read into the view and the next number is
// tried (see [FormatVersion]). A step's cost does not grow with the log.
// A failed write keeps the episodes for the next Store or Close. Past
// Config.CompactAfter raw episodes or Config.CompactTokens tokens, the
// oldest are folded into digests (see [Layer.Compact]).
func (l *Layer) Store(ctx context.Context, t layer.Turn) error {
	eps := l.episodes(t)
	if len(eps) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.head.Counted {
		// The head does not count its raw episodes: read them.
		if err := l.ensureLoaded(ctx); err != nil {
			return fmt.Errorf("episodicmemory: store: %w", err)
		}
	}
	if err := l.group(ctx, t.Query, eps, true); err != nil {
		return fmt.Errorf("episodicmemory: store: %w", err)
	}
	l.pending = append(l.pending, eps...)
	l.changed()
	if err := l.flush(ctx); err != nil {
		return fmt.Errorf("episodicmemory: store: %w", err)
	}
	if !l.overThresholds() {
		return nil
	}
	if err := l.ensureLoaded(ctx); err != nil {
		return fmt.Errorf("episodicmemory: compact: %w", err)
	}
	if err := l.compact(ctx); err != nil {
		return fmt.Errorf("episodicmemory: compact: %w", err)
	}
	return nil
}

// overThresholds reports whether the raw episodes are past
// Config.CompactAfter or Config.CompactTokens: by the view once it is
// read, else by the head's counts, so that a step reads no segment
// until compaction is due.
func (l *Layer) overThresholds() bool {
	count, toks := l.rawCount, l.rawToks
	if !l.loaded {
		n, t := rawSize(l.pending)
		count, toks = l.head.Raw+n, l.head.RawTokens+t
	}
	return count > l.cfg.CompactAfter || toks > l.cfg.CompactTokens
}

// readsEpisode reports whether a tool call of the given name is one of
// the layer's read tool: by its name, its "<id>/read" form or its
// deprecated name (layer.DeprecatedToolName).
func (l *Layer) readsEpisode(name string) bool {
	old, _ := layer.DeprecatedToolName(l.spec, "read")
	return name == l.tool || name == l.cfg.ID+"/read" || name == old && old != ""
}

// episodes turns a step into episodes (not yet numbered).
func (l *Layer) episodes(t layer.Turn) []Episode {
	now := clampTime(l.cfg.Now())
	var eps []Episode
	for _, r := range t.Results {
		if l.readsEpisode(r.Name) {
			continue // reading an episode is not an episode
		}
		eps = append(eps, l.toolEpisode(t, r, len(eps), now))
	}
	if endsTurn(t) {
		res, size := cutResult(t.Response, l.cfg.MaxResultBytes)
		eps = append(eps, Episode{Ref: "turn", Kind: KindTurn, Thread: l.thread, Step: t.Step, Time: now, Query: t.Query, Result: res, Size: size, seq: -1})
	}
	return eps
}

// endsTurn reports whether step t ends a turn with an outcome to record:
// it calls no tool, and there is a request or an answer.
func endsTurn(t layer.Turn) bool {
	return len(t.ToolCalls) == 0 && len(t.Results) == 0 && (t.Query != "" || t.Response != "")
}

// toolEpisode is the episode of result r, the i-th episode of step t.
func (l *Layer) toolEpisode(t layer.Turn, r layer.ToolResult, i int, now time.Time) Episode {
	name, args := callOf(t, r)
	ref := r.ID
	if ref == "" {
		ref = "call-" + strconv.Itoa(t.Step) + "-" + strconv.Itoa(i)
	}
	res, size := cutResult(r.Content, l.cfg.MaxResultBytes)
	e := Episode{Ref: ref, Kind: KindTool, Thread: l.thread, Step: t.Step, Time: now, Tool: name, Arguments: args,
		Result: res, IsError: r.IsError, Size: size, Duration: r.Duration, seq: -1}
	e.Entities = findEntities(e.Entities, args)
	if !r.IsError {
		e.Entities = findEntities(e.Entities, res)
	}
	return e
}

// callOf returns the tool name and arguments of result r: its own, with
// those of step t's calls of its ID filling in what it lacks.
func callOf(t layer.Turn, r layer.ToolResult) (name, args string) {
	name, args = r.Name, r.Arguments
	for _, c := range t.ToolCalls {
		if c.ID == r.ID {
			name, args = cmp.Or(name, c.Name), cmp.Or(args, c.Arguments)
		}
	}
	return name, args
}

// number puts episodes in segment seq: a turn episode takes its
// reference, "turn-<seq>", from it. In a log shared by threads (shared),
// a tool episode's reference, its call ID, becomes "<call ID>~<seq>": call
// IDs are unique in a thread only (a provider that gives none gets
// "call_<n>_<i>" from the agent, in every thread), and the log's
// references must name one episode each.
func number(eps []Episode, seq int64, shared bool) {
	notes := 0
	for i := range eps {
		eps[i].seq = seq
		switch eps[i].Kind {
		case KindTool:
			if shared {
				eps[i].Ref += "~" + strconv.FormatInt(seq, 10)
			}
		case KindTurn:
			eps[i].Ref = "turn-" + strconv.FormatInt(seq, 10)
		case KindNote:
			notes++
			eps[i].Ref = "note-" + strconv.FormatInt(seq, 10) + "-" + strconv.Itoa(notes)
		}
	}
}

// Keeps implements layer.Keeper: the episode log keeps actionable
// outcomes.
func (l *Layer) Keeps() string { return layer.KeepsEpisodic }

// Keep implements layer.Keeper. A Proposer's write (one with no Tool) is
// logged with [Layer.Note]; a tool's write is already logged, as the
// call, with the step's episode.
func (l *Layer) Keep(ctx context.Context, w layer.Write) (layer.Kept, error) {
	if err := l.unbound("Keep"); err != nil {
		return layer.Kept{}, err
	}
	if w.Tool == "" {
		if err := l.Note(ctx, w.Step, w.Kind, w.Text); err != nil {
			return layer.Kept{}, fmt.Errorf("routed to the episode log %s: %w", l.spec.ID, err)
		}
	}
	return layer.Kept{Reply: fmt.Sprintf("logged in the episode log (%s) with this step, not as a durable fact: %s", l.spec.ID, w.Reason)}, nil
}

// Note logs a memory write the agent routed to the episode log — an
// actionable outcome a layer's Store proposed, say — as an episode of
// kind [KindNote] at step: kind is the write's kind ("outcome"), text
// what to keep (cut at Config.MaxResultBytes, as a tool's result is).
// It is appended at once,
// in a segment of its own, like a step's episodes, and recalled like
// them. An empty text is an error and logs nothing.
func (l *Layer) Note(ctx context.Context, step int, kind, text string) error {
	if err := l.unbound("Note"); err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return errors.New("episodicmemory: note: empty text")
	}
	res, size := cutResult(text, l.cfg.MaxResultBytes)
	e := Episode{Ref: "note", Kind: KindNote, Thread: l.thread, Step: step, Time: clampTime(l.cfg.Now()), Tool: kind, Result: res, Size: size, seq: -1}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ensureLoaded(ctx); err != nil {
		return fmt.Errorf("episodicmemory: note: %w", err)
	}
	eps := []Episode{e}
	if err := l.group(ctx, "", eps, false); err != nil {
		return fmt.Errorf("episodicmemory: note: %w", err)
	}
	l.pending = append(l.pending, eps[0])
	l.changed()
	if err := l.flush(ctx); err != nil {
		return fmt.Errorf("episodicmemory: note: %w", err)
	}
	return nil
}

// flush appends the pending episodes (in memory without a store).
func (l *Layer) flush(ctx context.Context) error {
	if len(l.pending) == 0 {
		return nil
	}
	if l.log.Store != nil {
		return l.appendPending(ctx)
	}
	number(l.pending, l.head.Next, l.shared())
	l.head.Next++
	l.recent = append(l.recent, l.pending...)
	eps := l.pending
	l.appended += int64(len(l.pending))
	l.pending = nil
	l.changed()
	return l.indexed(ctx, eps, true)
}

// Compact folds the oldest raw episodes into digests now, as Store does
// past its thresholds: whole segments, oldest first, until at most half
// of Config.CompactAfter raw episodes and half of Config.CompactTokens
// tokens remain (the newest segment always stays raw). The digests keep
// the episodes' references; the raw episodes stay stored (the read tool
// returns them) until they fall beyond Config.Retain segments.
func (l *Layer) Compact(ctx context.Context) error {
	if err := l.unbound("Compact"); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ensureLoaded(ctx); err != nil {
		return fmt.Errorf("episodicmemory: compact: %w", err)
	}
	if err := l.flush(ctx); err != nil {
		return fmt.Errorf("episodicmemory: compact: %w", err)
	}
	if err := l.compact(ctx); err != nil {
		return fmt.Errorf("episodicmemory: compact: %w", err)
	}
	return nil
}

// compact picks the segments to fold and folds them.
func (l *Layer) compact(ctx context.Context) error {
	if len(l.recent) == 0 {
		return nil
	}
	// Keep the newest segments within half of each threshold.
	to := l.keptFrom()
	// to is the oldest segment kept whole: fold everything before it.
	if to <= l.head.Digested {
		return nil
	}
	if l.log.Store != nil {
		return l.compactStored(ctx, to)
	}
	var digests []Digest
	for _, e := range l.recent {
		if e.seq < to {
			digests = append(digests, e.digest())
		}
	}
	h := l.head
	h.Digested, h.Dropped = to, to // without a store nothing raw is kept
	l.fold(h, digests)
	return nil
}

// keptFrom returns the oldest segment compaction keeps raw: the newest
// segments within half of each threshold, and at least the newest
// segment. It needs a raw episode in the view.
func (l *Layer) keptFrom() int64 {
	count, toks := 0, 0
	to := l.recent[len(l.recent)-1].seq
	for i := len(l.recent) - 1; i >= 0; i-- {
		e := &l.recent[i]
		count++
		toks += rawTokens(e)
		if count > l.cfg.CompactAfter/2 || toks > l.cfg.CompactTokens/2 {
			break
		}
		to = e.seq
	}
	return to
}

// fold installs head h after a compaction that produced digests: the
// raw episodes below h.Digested leave the view, the digests join it. The
// index is unchanged: an episode's document is its digest line, raw or
// folded.
func (l *Layer) fold(h head, digests []Digest) {
	l.head = h
	l.recent = slices.DeleteFunc(l.recent, func(e Episode) bool { return e.seq < h.Digested })
	if !l.haveDigests {
		l.changed()
		return // the digests are stored: ensureDigests reads them
	}
	l.digests = append(l.digests, digests...)
	trim := max(len(l.digests)-l.cfg.MaxDigests, 0)
	l.digests = slices.Delete(l.digests, 0, trim)
	l.changed()
}

// rawTokens is an episode's size for Config.CompactTokens, by the
// default estimate, counted once.
func rawTokens(e *Episode) int {
	if e.toks == 0 {
		e.toks = 1 + layer.Query{}.Count(e.Arguments) + layer.Query{}.Count(e.Query) + layer.Query{}.Count(e.Result)
	}
	return e.toks
}

// changed recounts the raw episodes after a change of the view.
func (l *Layer) changed() {
	l.rawCount, l.rawToks = len(l.recent)+len(l.pending), 0
	for i := range l.recent {
		l.rawToks += rawTokens(&l.recent[i])
	}
	for i := range l.pending {
		l.rawToks += rawTokens(&l.pending[i])
	}
}

// Read returns the episode with the given reference (the newest, if
// several share it), found through the index (a lookup by reference, then
// a read of its segment, or of the digest records on a store without
// search), with its result as stored (whole up to
// Config.MaxResultBytes), and whole true. For an episode whose raw form
// is gone (beyond Config.Retain, or folded without a store) it returns
// the episode rebuilt from its digest, with an empty Result, and whole
// false. It fails with [ErrNoEpisode] when no episode has the reference.
func (l *Layer) Read(ctx context.Context, ref string) (e Episode, whole bool, err error) {
	if err := l.unbound("Read"); err != nil {
		return Episode{}, false, err
	}
	e, d, err := l.read(ctx, ref)
	if err != nil || d == nil {
		return e, err == nil, err
	}
	return Episode{Ref: d.Ref, Thread: d.Thread, Step: d.Step, Time: d.Time, seq: d.Seq}, false, nil
}

// read finds ref: the raw episode, or the digest when only that is left.
// A reference names the reading thread's episode first — by its
// reference, or in a log shared by threads by the call ID it was stored
// with (see number) — and only then the newest of any thread's.
func (l *Layer) read(ctx context.Context, ref string) (Episode, *Digest, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range []refMatch{{ref: ref, thread: l.thread, own: true}, {ref: ref}} {
		e, d, err := l.find(ctx, m)
		if err != nil {
			return Episode{}, nil, fmt.Errorf("episodicmemory: read %s: %w", storage.Quote(ref), err)
		}
		if d != nil || e.Ref != "" {
			return e, d, nil
		}
	}
	return Episode{}, nil, fmt.Errorf("%w: %s", ErrNoEpisode, storage.Quote(ref))
}

// find returns the newest episode m names, or its digest when only that
// is left, or neither: from the view, else through the index, else (a
// store without search) through the digest records.
func (l *Layer) find(ctx context.Context, m refMatch) (Episode, *Digest, error) {
	for _, list := range [][]Episode{l.pending, l.recent} {
		if i := lastIndexFunc(list, func(e Episode) bool { return m.matches(e.Ref, e.Thread) }); i >= 0 {
			return list[i], nil, nil
		}
	}
	h, ok, err := l.lookup(ctx, m)
	switch {
	case err != nil:
		return Episode{}, nil, err
	case ok:
		return l.resolve(ctx, h)
	case l.private && l.log.Store != nil:
		return l.findStored(ctx, m, nil, l.head.LastDigest)
	}
	return Episode{}, nil, nil
}

// refMatch is a reference the model gave, and which episodes it names:
// those whose reference is ref or whose call ID is (see callID) — with
// own, of the reading thread only.
type refMatch struct {
	ref, thread string
	own         bool
}

func (m refMatch) matches(ref, thread string) bool {
	return (!m.own || thread == m.thread) && (ref == m.ref || callID(ref) == m.ref)
}

// lastIndexFunc returns the index of the last element of s that
// satisfies f, or -1.
func lastIndexFunc[S ~[]E, E any](s S, f func(E) bool) int {
	for i := len(s) - 1; i >= 0; i-- {
		if f(s[i]) {
			return i
		}
	}
	return -1
}

// callID returns the call ID of a tool episode's reference in a log
// shared by threads, "<call ID>~<segment>"; other references are their
// own call ID.
func callID(ref string) string {
	i := strings.LastIndexByte(ref, '~')
	if i < 0 || i == len(ref)-1 || strings.Trim(ref[i+1:], "0123456789") != "" {
		return ref
	}
	return ref[:i]
}

// readParams is the read tool's schema.
const readParams = `{"type":"object","properties":{"ref":{"type":"string","description":"The episode's reference: the ID in brackets at the start of its line in the episodic memory block (a tool call ID)."},"offset":{"type":"integer","minimum":0,"description":"Byte offset to read from, for a result longer than one page; the note at the end of a page gives the next one."}},"required":["ref"],"additionalProperties":false}`

// Functions offers the function "read" (tool "<id>_read"), which returns
// an episode's full result by its reference: the tool's output as it
// was (or the error text, or a turn's answer), kept whole up to
// Config.MaxResultBytes. A result longer than Config.ReadPageBytes
// comes in pages, so that no page is cut by agentloop's history cap:
// each page ends with a note giving the byte range shown, the full size
// and the offset to read on from,
//
//	[episodic_memory: bytes 0-12288 of 40626; read on with {"ref":"call_1","offset":12288}]
//
// and the concatenated pages (notes removed) are the result. A result cut
// at Config.MaxResultBytes ends with a note saying so. For an episode
// whose raw form was dropped it returns the digest and says so.
func (l *Layer) Functions() []layer.Function {
	return []layer.Function{{
		Name:        "read",
		Description: "Read the full result of an earlier tool call (or turn) by its reference, shown in brackets in the episodic memory block. Use it when a result in the conversation was truncated or is no longer shown. Long results come in pages: follow the note at the end of each page.",
		Parameters:  json.RawMessage(readParams),
		Call:        l.callRead,
	}}
}

// Episodes returns the raw episodes of the layer's view not yet folded
// into digests, oldest first: a copy the caller may keep. It is safe to
// call while the layer's hooks run. A template has no log: it returns
// none (check with [Layer.Read], which reports [layer.ErrTemplate]).
func (l *Layer) Episodes() []Episode {
	if l.template {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ensureLoaded(context.Background()); err != nil {
		l.log.Logger.Warn("episodicmemory: reading the log failed", slog.String("layer", l.cfg.ID), slog.Any("error", err))
	}
	return slices.Concat(l.recent, l.pending)
}

func (l *Layer) callRead(ctx context.Context, args json.RawMessage) (string, error) {
	var p struct {
		Ref    string `json:"ref"`
		Offset int    `json:"offset"`
	}
	if err := json.Unmarshal(args, &p); err != nil || p.Ref == "" || p.Offset < 0 {
		return "", fmt.Errorf(`give the episode's reference as {"ref": "<id in brackets>"}, and optionally a byte offset >= 0 as "offset"`)
	}
	if err := l.unbound("read"); err != nil {
		return "", err
	}
	e, d, err := l.read(ctx, p.Ref)
	if err != nil {
		return "", err
	}
	if d != nil {
		return "The full result of " + p.Ref + " is no longer stored (retention limit); its digest:\n" + d.Text, nil
	}
	return l.readResult(&e, p.Ref, p.Offset)
}

// readResult returns what the read tool shows of e's result (e is the
// episode ref names) from offset on: a page when it is paged, with its
// notes.
func (l *Layer) readResult(e *Episode, ref string, offset int) (string, error) {
	out := e.Result
	if e.IsError && out == "" {
		out = "error"
	}
	if offset > len(out) {
		return "", fmt.Errorf("offset %d is past the end of the result (%d bytes)", offset, len(out))
	}
	var note string
	if offset > 0 || len(out) > l.cfg.ReadPageBytes {
		out, note = l.page(out, ref, offset)
	}
	if e.Size > 0 {
		note += "\n[" + l.cfg.ID + ": result cut at " + strconv.Itoa(len(e.Result)) + " of " + strconv.Itoa(e.Size) + " bytes]"
	}
	return out + note, nil
}

// page returns the page of result out (of the episode ref) that starts at
// offset, and the note that ends it (see Functions).
func (l *Layer) page(out, ref string, offset int) (string, string) {
	page, _ := cutResult(out[offset:], l.cfg.ReadPageBytes)
	if page == "" && offset < len(out) {
		page = out[offset:min(len(out), offset+utf8.UTFMax)]
	}
	end := offset + len(page)
	note := "\n[" + l.cfg.ID + ": bytes " + strconv.Itoa(offset) + "-" + strconv.Itoa(end) + " of " + strconv.Itoa(len(out))
	if end < len(out) {
		r, _ := json.Marshal(ref)
		note += `; read on with {"ref":` + string(r) + `,"offset":` + strconv.Itoa(end) + "}"
	}
	return page, note + "]"
}

// Snapshot returns the layer's state as versioned JSON. With a store it
// is a mark of a few hundred bytes, whatever the log holds: the log's
// scope and its head, which name the records of the view (a log's
// records are never rewritten), and the episodes a failed write left
// unappended. Restoring it needs the store the log is in, and a layer
// bound to the same scope (the same thread, or the same resource). Without a
// store it is a bounded copy of the view: the newest
// Config.SnapshotDigests digests and the newest Config.SnapshotEpisodes
// raw episodes, oldest first, each result cut at
// Config.SnapshotResultBytes (Size then holds its full length).
func (l *Layer) Snapshot(ctx context.Context) (json.RawMessage, error) {
	if err := l.unbound("Snapshot"); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.log.Store != nil {
		return l.markLocked(), nil
	}
	if err := l.ensureLoaded(ctx); err != nil {
		return nil, fmt.Errorf("episodicmemory: snapshot: %w", err)
	}
	return l.snapshotLocked(), nil
}

// markLocked returns the layer's mark (see mark).
func (l *Layer) markLocked() []byte {
	m := mark{Version: markVersion, Scope: l.log.Scope, Head: l.head, Pending: slices.Clone(l.pending)}
	m.Head.Version = baseVersion
	m.Head.uncount() // a mark names a view; the counts are the stored head's
	m.Head.Cap = nil
	for i := range m.Pending {
		m.Pending[i].toks = 0
	}
	return encode(m)
}

func (l *Layer) snapshotLocked() []byte {
	digests := l.digests[max(len(l.digests)-l.cfg.SnapshotDigests, 0):]
	raw := slices.Concat(l.recent, l.pending)
	s := snapshot{Digests: make([]Digest, len(digests)), Episodes: raw[max(len(raw)-l.cfg.SnapshotEpisodes, 0):]}
	s.Version = versionOf(s.Episodes)
	for i, d := range digests {
		d.Seq = 0
		s.Digests[i] = d
	}
	for i := range s.Episodes {
		e := &s.Episodes[i]
		full := max(e.Size, len(e.Result))
		if res, size := cutResult(e.Result, l.cfg.SnapshotResultBytes); size > 0 {
			e.Result, e.Size = res, full
		}
	}
	return encode(s)
}

// Restore replaces the log's view with a snapshot. A snapshot equal to
// the current state changes nothing (for a mark, nothing is read). A
// mark is read from the layer's own log: its view as it was when the
// snapshot was taken (the newest digests and raw episodes, see
// [Layer.Snapshot]). A mark that names the log of any other scope
// (another thread's, another user's) is refused with [ErrCorrupt] and
// nothing is read from that scope. A mark whose log no longer holds its
// view (cleared, erased or restored since, or in another store) is
// refused with an error that is storage.ErrNotFound. A snapshot that copies the view
// (written without a store, or by earlier versions) is read as it is.
// Otherwise, with a store, the stored log is replaced: a new log base is
// claimed on the head, the snapshot's digests and episodes are written
// above it, and the older records are deleted. A snapshot from a newer
// version ([ErrVersion]) or an unreadable one ([ErrCorrupt]) is refused,
// and the current state is kept.
func (l *Layer) Restore(ctx context.Context, data json.RawMessage) error {
	if err := l.unbound("Restore"); err != nil {
		return err
	}
	m, marked, err := decodeMark(data)
	if err != nil {
		return fmt.Errorf("episodicmemory: restore: %w", err)
	}
	var s snapshot
	if !marked {
		if s, err = decodeSnapshot(data); err != nil {
			return fmt.Errorf("episodicmemory: restore: %w", err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if marked {
		return l.restoreMark(ctx, m)
	}
	return l.restoreCopy(ctx, s)
}

// restoreMark restores the view mark m names (see Restore).
func (l *Layer) restoreMark(ctx context.Context, m mark) error {
	if l.log.Store == nil {
		return fmt.Errorf("episodicmemory: restore: a snapshot of a stored log needs a store")
	}
	if string(encode(m)) == string(l.markLocked()) {
		return nil
	}
	s, err := l.readMarked(ctx, m)
	if err != nil {
		return fmt.Errorf("episodicmemory: restore: %w", err)
	}
	if err := l.ensureDigests(ctx); err != nil {
		return fmt.Errorf("episodicmemory: restore: %w", err)
	}
	return l.restoreView(ctx, s)
}

// restoreCopy restores s, a snapshot that copies the view, unless it is
// the current state (see Restore).
func (l *Layer) restoreCopy(ctx context.Context, s snapshot) error {
	if err := l.ensureDigests(ctx); err != nil {
		return fmt.Errorf("episodicmemory: restore: %w", err)
	}
	if string(encode(s)) == string(l.snapshotLocked()) {
		return nil
	}
	return l.restoreView(ctx, s)
}

// restoreView replaces the log with the view s (see Restore).
func (l *Layer) restoreView(ctx context.Context, s snapshot) error {
	// Claim a base and the numbers of the restored records.
	h, _, err := l.updateHead(ctx, func(h *head) bool {
		base := h.Next
		h.Base, h.Digested, h.Dropped, h.LastDigest = base, base+1, base+1, -1
		if len(s.Digests) > 0 {
			h.LastDigest = base
		}
		h.Next = base + 1 + int64(len(s.Episodes))
		h.setCount(rawSize(s.Episodes))
		h.Cap = l.viewLedger(base, s)
		return true
	})
	if err != nil {
		return fmt.Errorf("episodicmemory: restore: %w", err)
	}
	l.setRestored(h, s)
	if err := l.reindex(ctx); err != nil {
		return fmt.Errorf("episodicmemory: restore: %w", err)
	}
	if l.log.Store == nil {
		return nil
	}
	if err := l.writeView(ctx, h.Base); err != nil {
		return fmt.Errorf("episodicmemory: restore: %w", err)
	}
	if err := l.purge(ctx, h.Base); err != nil {
		return fmt.Errorf("episodicmemory: restore: delete the old log: %w", err)
	}
	return nil
}

// writeView writes a restored view above base: its digests as the digest
// record of segment base, each raw episode as a segment of its own.
func (l *Layer) writeView(ctx context.Context, base int64) error {
	if len(l.digests) > 0 {
		rec := digestRecord{Version: baseVersion, From: base, To: base + 1, Prev: -1, Digests: l.digests}
		if _, err := l.log.Store.Put(ctx, l.log.Key(digestName(base)), encode(rec), storage.AnyVersion); err != nil {
			return err
		}
	}
	for _, e := range l.recent {
		seg := segment{Version: versionOf([]Episode{e}), Seq: e.seq, Episodes: []Episode{e}}
		if _, err := l.log.Store.Put(ctx, l.log.Key(segName(e.seq)), encode(seg), storage.AnyVersion); err != nil {
			return err
		}
	}
	return nil
}

// setRestored installs a restored view: digests in segment h.Base, one
// segment per episode after it.
func (l *Layer) setRestored(h head, s snapshot) {
	for i := range s.Digests {
		s.Digests[i].Seq = h.Base
	}
	for i := range s.Episodes {
		s.Episodes[i].seq = h.Base + 1 + int64(i)
	}
	l.head, l.digests, l.recent, l.pending = h, s.Digests, s.Episodes, nil
	l.tasks = tracker{} // read again from the index when needed
	l.linkSearch = linkSearch{}
	l.loaded, l.haveDigests = true, true
	l.changed()
}

// reindex replaces the index with the view's episodes (Clear, Restore):
// the collection is dropped, the view indexed and the marker set to the
// head.
func (l *Layer) reindex(ctx context.Context) error {
	if l.private {
		l.ix = &storage.MemoryIndex{}
	} else if err := errors.Join(l.ix.Drop(ctx, l.col), l.dropEvict(ctx)); err != nil {
		return fmt.Errorf("drop the index: %w", err)
	}
	docs := l.docs(nil, l.digests)
	if err := l.addDocs(ctx, l.docs(docs, digestsOf(l.recent))); err != nil {
		return err
	}
	if l.private {
		return nil
	}
	return l.writeMark(ctx, marker{Base: l.head.Base, Next: l.head.Next})
}

// Clear forgets every episode, in memory and in storage: the head's base
// moves past every segment (so appends still in flight land below it and
// are ignored), then the older records are deleted.
func (l *Layer) Clear(ctx context.Context) error {
	if err := l.unbound("Clear"); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h, _, err := l.updateHead(ctx, func(h *head) bool {
		h.Base, h.Digested, h.Dropped, h.LastDigest = h.Next, h.Next, h.Next, -1
		h.setCount(0, 0)
		h.Cap = l.viewLedger(h.Base, snapshot{})
		return true
	})
	if err != nil {
		return fmt.Errorf("episodicmemory: clear: %w", err)
	}
	l.setRestored(h, snapshot{})
	if err := l.reindex(ctx); err != nil {
		return fmt.Errorf("episodicmemory: clear: %w", err)
	}
	if l.log.Store == nil {
		return nil
	}
	if err := l.purge(ctx, h.Base); err != nil {
		return fmt.Errorf("episodicmemory: clear: %w", err)
	}
	return nil
}

// Metrics returns the layer's figures (see layer.MetricsReporter;
// agentloop exports them as OpenTelemetry metrics): "entries", the
// episodes in the view (the newest digests and the raw episodes), and
// "bytes", their text; "episodes_total", the episodes this layer (as
// Init returned it) has appended to the log. The newest digests (up to
// Config.MaxDigests) are read on the first call.
func (l *Layer) Metrics() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ensureDigests(context.Background()); err != nil {
		l.log.Logger.Warn("episodicmemory: reading the log failed", slog.String("layer", l.cfg.ID), slog.Any("error", err))
	}
	n := 0
	for _, d := range l.digests {
		n += len(d.Text)
	}
	for _, list := range [][]Episode{l.recent, l.pending} {
		for _, e := range list {
			n += len(e.Arguments) + len(e.Query) + len(e.Result)
		}
	}
	return map[string]int64{"entries": int64(len(l.digests) + len(l.recent) + len(l.pending)), "bytes": int64(n), "episodes_total": l.appended}
}

// Counts returns the layer's "_total" count, "episodes_total", without
// reading the store (see layer.CountReporter).
func (l *Layer) Counts() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return map[string]int64{"episodes_total": l.appended}
}

// OnSpawn returns the layer a child agent starts with. In thread scope
// the child starts with an empty log of its own, kept in memory (the
// parent's episodes are not the child's). In resource scope it shares
// the resource's log: a new view of the stored log, appending to it. The
// receiver is not modified.
func (l *Layer) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	store, scope := l.log.Store, l.log.Scope
	if l.cfg.Scope != layer.ScopeResource {
		store = nil
	}
	c, err := l.open(ctx, child, store, scope)
	if err != nil {
		return nil, fmt.Errorf("episodicmemory: spawn: %w", err)
	}
	return c, nil
}

// Close appends episodes a failed Store could not, and counts the uses
// of the episodes the run recalled or read (see Capacity).
func (l *Layer) Close(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.flushUses(ctx); err != nil {
		return fmt.Errorf("episodicmemory: close: %w", err)
	}
	if len(l.pending) == 0 {
		return nil
	}
	if err := l.flush(ctx); err != nil {
		return fmt.Errorf("episodicmemory: close: %w", err)
	}
	return nil
}

// Interface guards.
var (
	_ layer.Layer           = (*Layer)(nil)
	_ layer.Initializer     = (*Layer)(nil)
	_ layer.Storer          = (*Layer)(nil)
	_ layer.Spawner         = (*Layer)(nil)
	_ layer.Provider        = (*Layer)(nil)
	_ layer.Snapshotter     = (*Layer)(nil)
	_ layer.Clearer         = (*Layer)(nil)
	_ layer.Closer          = (*Layer)(nil)
	_ layer.MetricsReporter = (*Layer)(nil)
	_ layer.CountReporter   = (*Layer)(nil)
	_ layer.CandidateSource = (*Layer)(nil)
	_ layer.Keeper          = (*Layer)(nil)
)
