package episodicmemory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memlayer/memlayer/internal/jsonx"
	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/storage"
)

// Task episodes. The entries of a thread are grouped into task episodes,
// numbered from 1 in each thread; every entry records its number
// ([Episode.Task]) and so does its index document. A new task episode
// starts at:
//
//   - first: the thread's first entry;
//   - explicit: the note [Layer.NewTask] logs;
//   - gap: the first entry of a request that comes Config.EpisodeGap
//     (30 minutes) or more after the thread's previous entry;
//   - task: the first entry of a request that turns to another task
//     (see [tracker.newTask]).
//
// A run keeps the current task's profile in memory: the words of its
// requests and answers, and the entities (IDs, slugs, names) its
// entries touched. A step queues its entries; the profile learns them
// when the next request is checked or links are sought. A run that
// starts reads the profile from the index, from the thread's newest
// documents (one query of at most profileDocs documents), so that the
// cost of a step does not grow with the log. After a pause the profile
// is kept: the work may go on.

// Defaults of the task episodes.
const (
	// DefaultEpisodeGap is the pause that starts a new task episode.
	DefaultEpisodeGap = 30 * time.Minute
	// DefaultMaxLinks is how many linked task episodes of other threads
	// Recall follows.
	DefaultMaxLinks = 2
)

const (
	// maxBacklog bounds the entries a run queues (see queue).
	maxBacklog = 64
	// profileDocs is how many of the thread's newest index documents a
	// run reads its current task from.
	profileDocs = 24
	// maxProfile bounds the words and the entities a task's profile
	// keeps, each.
	maxProfile = 128
	// taskSimilarity is the similarity to the current task below which
	// a request starts a new one (see newTask).
	taskSimilarity = 0.3
	// idWeight is the weight of an entity (an ID or a slug) in the
	// similarity of a request to a task; a word weighs 1.
	idWeight = 3
)

// Boundary says why a task episode started.
type Boundary string

// The boundaries of task episodes.
const (
	// BoundaryFirst is the thread's first entry.
	BoundaryFirst Boundary = "first"
	// BoundaryExplicit is a call of [Layer.NewTask].
	BoundaryExplicit Boundary = "explicit"
	// BoundaryGap is a pause of Config.EpisodeGap or more.
	BoundaryGap Boundary = "gap"
	// BoundaryTask is a request that turns to another task.
	BoundaryTask Boundary = "task"
)

// tracker is a run's view of its thread's task episodes. Its methods are
// called with the layer's mu held.
type tracker struct {
	loaded bool
	// task is the current task episode's number; 0 before the first.
	task int
	// why is why it started.
	why Boundary
	// last is the time of the thread's newest entry.
	last time.Time
	// asked reports whether the run has evaluated a request, query the
	// last it evaluated.
	asked bool
	query string
	// explicit asks that the next entry start a task episode.
	explicit bool
	// words are the current task's request words, ids its entities.
	words, ids profileSet
	// backlog are the current task's entries not yet in its profile: a
	// step only queues its entries, which are learnt when a request is
	// evaluated or links are sought (most runs evaluate one request, at
	// their first step).
	backlog []Episode
}

// profileSet is a bounded set of terms: each stem, with the first token
// it came from.
type profileSet map[string]string

// add takes term, from token, unless the set is full.
func (p *profileSet) add(term, token string) {
	if *p == nil {
		*p = profileSet{}
	}
	if _, ok := (*p)[term]; !ok && len(*p) < maxProfile {
		(*p)[term] = token
	}
}

func (p profileSet) has(term string) bool {
	_, ok := p[term]
	return ok
}

// Task returns the number of the thread's current task episode (0
// before its first entry) and why it started: empty when it started
// before the run, whose layer read it from the index (the thread's
// newest documents, the first time the run needs them).
func (l *Layer) Task(ctx context.Context) (int, Boundary, error) {
	if err := l.unbound("Task"); err != nil {
		return 0, "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.ensureTracker(ctx); err != nil {
		return 0, "", fmt.Errorf("episodicmemory: task: %w", err)
	}
	return l.tasks.task, l.tasks.why, nil
}

// NewTask starts a new task episode in the layer's thread, with a note
// (kind "task", text title; "new task" when title is empty) at step as
// its first entry, and returns its number. The entries that follow
// belong to it until the next boundary.
func (l *Layer) NewTask(ctx context.Context, step int, title string) (int, error) {
	if err := l.unbound("NewTask"); err != nil {
		return 0, err
	}
	if strings.TrimSpace(title) == "" {
		title = "new task"
	}
	l.mu.Lock()
	err := l.ensureTracker(ctx)
	l.tasks.explicit = true
	l.mu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("episodicmemory: new task: %w", err)
	}
	if err := l.Note(ctx, step, "task", title); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tasks.task, nil
}

// ensureTracker reads the thread's current task episode from the index
// if the run has not: the task of the thread's newest document, its
// time, and the profile of that task's newest documents.
func (l *Layer) ensureTracker(ctx context.Context) error {
	if l.tasks.loaded {
		return nil
	}
	hs, err := l.search(ctx, storage.Query{Filter: map[string]string{fieldThread: fieldValue(l.thread)}, K: profileDocs})
	if err != nil {
		return fmt.Errorf("read the current task: %w", err)
	}
	slices.SortFunc(hs, func(a, b hit) int { return cmpPos(b, a) })
	l.tasks = tracker{loaded: true}
	l.tasks.learnHits(hs, l.cfg.EpisodeGap)
	return nil
}

// learnHits takes the current task from hs, the thread's newest
// documents, newest first: the task of the newest, its time, and the
// profile of its entries and, when a pause of gap or more started it
// (see start), of the task's before it.
func (tr *tracker) learnHits(hs []hit, gap time.Duration) {
	if len(hs) == 0 || hs[0].task == 0 {
		return
	}
	tr.task, tr.last = hs[0].task, hs[0].time
	i := tr.learnTask(hs, tr.task)
	if i < len(hs) && i > 0 && gap > 0 && hs[i].task == tr.task-1 && hs[i-1].time.Sub(hs[i].time) >= gap {
		tr.learnTask(hs[i:], tr.task-1)
	}
}

// learnTask learns the entries of task at the start of hs, and returns
// how many there are.
func (tr *tracker) learnTask(hs []hit, task int) int {
	for i, h := range hs {
		if h.task != task {
			return i
		}
		tr.learnLine(h.text)
	}
	return len(hs)
}

// group puts the entries eps of one step (or a note) in their task
// episode: a new one when a boundary is found (see the package's task
// episodes), with query the step's request when ask is set.
func (l *Layer) group(ctx context.Context, query string, eps []Episode, ask bool) error {
	if len(eps) == 0 {
		return nil
	}
	if err := l.ensureTracker(ctx); err != nil {
		return err
	}
	tr := &l.tasks
	now := eps[0].Time
	if b := tr.boundary(query, eps, ask, now, l.cfg.EpisodeGap); b != "" {
		tr.start(b)
	}
	for i := range eps {
		eps[i].Task = tr.task
	}
	tr.queue(eps)
	tr.last = now
	return nil
}

// queue adds entries of the current task to the backlog. Past
// maxBacklog it keeps the newest profileDocs: the profile learns a long
// request's newest entries, as a run that reads the task from the index
// does.
func (tr *tracker) queue(eps []Episode) {
	tr.backlog = append(tr.backlog, eps...)
	if n := len(tr.backlog); n >= maxBacklog {
		kept := copy(tr.backlog, tr.backlog[n-profileDocs:])
		clear(tr.backlog[kept:])
		tr.backlog = tr.backlog[:kept]
	}
}

// catchUp learns the backlog.
func (tr *tracker) catchUp() {
	for i := range tr.backlog {
		tr.learn(&tr.backlog[i])
	}
	clear(tr.backlog)
	tr.backlog = tr.backlog[:0]
}

// boundary returns why an entry at now, of the request query when ask is
// set, starts a task episode, or "" when it continues the current one. A
// request is evaluated once: at the run's first step and when it
// changes.
func (tr *tracker) boundary(query string, eps []Episode, ask bool, now time.Time, gap time.Duration) Boundary {
	fresh := tr.ask(query, ask)
	switch {
	case tr.task == 0:
		return BoundaryFirst
	case tr.explicit:
		return BoundaryExplicit
	case !fresh:
		return ""
	case gap > 0 && now.Sub(tr.last) >= gap:
		return BoundaryGap
	case tr.newTask(query, eps):
		return BoundaryTask
	}
	return ""
}

// ask records the request query of a step when ask is set, and
// reports whether it is to be evaluated: the run's first, or another
// than the last. The profile then learns the entries queued.
func (tr *tracker) ask(query string, ask bool) bool {
	if !ask {
		return false
	}
	fresh := !tr.asked || query != tr.query
	tr.asked, tr.query = true, query
	if fresh {
		tr.catchUp()
	}
	return fresh
}

// start begins the next task episode, with an empty profile.
func (tr *tracker) start(why Boundary) {
	tr.task++
	tr.why, tr.explicit = why, false
	if why != BoundaryGap { // after a pause, the work may go on
		tr.words, tr.ids = nil, nil
		clear(tr.backlog)
		tr.backlog = tr.backlog[:0]
	}
}

// learn adds entry e to the current task's profile.
func (tr *tracker) learn(e *Episode) {
	switch e.Kind {
	case KindTurn:
		tr.learnRequest(e.Query)
		tr.learnRequest(e.Result[:min(len(e.Result), digestResult)]) // as much as its digest holds
	case KindNote:
		tr.learnRequest(e.Result[:min(len(e.Result), digestResult)])
	default:
		tr.learnArgs(e.Arguments)
		if len(e.Entities) > 0 {
			tr.learnRequest(strings.Join(e.Entities, ", "))
		}
	}
}

// learnLine adds an entry's digest line (see [Episode.Digest]) to the
// current task's profile, as learn adds the entry.
func (tr *tracker) learnLine(line string) {
	_, rest, ok := strings.Cut(line, "] step ")
	if !ok {
		return
	}
	if _, rest, ok = strings.Cut(rest, " "); !ok {
		return
	}
	if rest, ok = strings.CutPrefix(rest, "turn: "); ok || strings.HasPrefix(rest, `"`) {
		tr.learnTurnLine(rest)
		return
	}
	if rest, ok = strings.CutPrefix(rest, "note ("); ok {
		_, text, _ := strings.Cut(rest, "): ")
		tr.learnRequest(text)
		return
	}
	tr.learnCallLine(rest)
}

// learnTurnLine learns a turn's digest after its step (and after
// "turn: " in lines written before turn lines were lean): the quoted
// request and the answer after the arrow (and "answered: ").
func (tr *tracker) learnTurnLine(rest string) {
	q, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return
	}
	query, _ := strconv.Unquote(q)
	tr.learnRequest(query)
	answer := strings.TrimPrefix(strings.TrimPrefix(rest[len(q):], " → "), "answered: ")
	tr.learnRequest(answer)
}

// learnCallLine learns a call's digest after the step: the arguments
// after the tool's name, and the IDs and names after " bytes: ".
func (tr *tracker) learnCallLine(rest string) {
	call, outcome, _ := strings.Cut(rest, " → ")
	_, args, _ := strings.Cut(call, " ")
	tr.learnArgs(args)
	if _, names, ok := strings.Cut(outcome, " bytes: "); ok {
		tr.learnRequest(names)
	}
}

// learnRequest adds a request's words and entities.
func (tr *tracker) learnRequest(text string) {
	for t, tok := range terms(text) {
		tr.learnTerm(t, tok)
	}
}

// learnArgs adds the terms of the values of a call's arguments.
func (tr *tracker) learnArgs(args string) {
	for t := range argTerms(args) {
		tr.learnTerm(t, t)
	}
}

// learnTerm adds one term: an entity or a word.
func (tr *tracker) learnTerm(t, tok string) {
	if idLike(t) {
		tr.ids.add(t, tok)
	} else {
		tr.words.add(t, tok)
	}
}

// knows reports whether the current task holds term t.
func (tr *tracker) knows(t string) bool { return tr.words.has(t) || tr.ids.has(t) }

// newTask reports whether request query, with eps the entries of its
// first step (the tool calls the agent made for it), turns away from the
// current task. Its targets are the entities (IDs, slugs: see idLike)
// the request names and the values of the calls' arguments.
//
//   - It says so ("new task", "something else", "moving on", ...): new.
//   - A target is one of the task's (an entity equal to, or within, one
//     of the task's, or an argument's word the task holds): it continues.
//   - The request names entities, none of them the task's: new.
//   - Only the calls have entities, none of them the task's: new, unless
//     the request follows up (see followsUp): the agent looked up
//     something the task led to ("what address do we have for the
//     customer?" calls for the customer of the task's order).
//   - Otherwise its words decide: a request that refers back (see
//     refersBack) or has fewer than three content words ("thanks", "run
//     the check again") continues; another is new when the weighted
//     share of its terms the task holds (an entity weighs idWeight, a
//     word 1) is below taskSimilarity.
func (tr *tracker) newTask(query string, eps []Episode) bool {
	if saysNew(query) {
		return true
	}
	switch known, named, called := tr.knowsTarget(query, eps); {
	case known:
		return false
	case named > 0:
		return true
	case called > 0:
		return !tr.followsUp(query)
	}
	return tr.farFrom(query)
}

// saysNew reports whether a request says it turns to another task (see
// switchCues).
func saysNew(query string) bool {
	lower := strings.ToLower(query)
	return slices.ContainsFunc(switchCues, func(cue string) bool { return strings.Contains(lower, cue) })
}

// knowsTarget reports whether a target of the request is the task's: an
// entity the request names, or a term of the values of the arguments of
// the tool calls eps. Else it returns how many entities the request
// names, and how many the calls have.
func (tr *tracker) knowsTarget(query string, eps []Episode) (known bool, named, called int) {
	for t := range terms(query) {
		if !idLike(t) {
			continue
		}
		if tr.knowsID(t) {
			return true, 0, 0
		}
		named++
	}
	known, called = tr.knowsCalled(eps)
	return known, named, called
}

// knowsCalled reports whether a term of the values of the arguments of
// the tool calls eps is the task's, and else how many are entities.
func (tr *tracker) knowsCalled(eps []Episode) (known bool, ids int) {
	for t := range callTargets(eps) {
		switch {
		case idLike(t) && tr.knowsID(t):
			return true, 0
		case idLike(t):
			ids++
		case tr.knows(t):
			return true, 0
		}
	}
	return false, ids
}

// callTargets yields the terms of the values of the arguments of the
// tool calls among eps.
func callTargets(eps []Episode) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for i := range eps {
			if eps[i].Kind != KindTool {
				continue
			}
			for t := range argTerms(eps[i].Arguments) {
				if !yield(t) {
					return
				}
			}
		}
	}
}

// farFrom reports whether a request far from the task's words, as
// newTask's last rule says.
func (tr *tracker) farFrom(query string) bool {
	if refersBack(query) {
		return false
	}
	sim, n := tr.similarity(query)
	return n >= 3 && sim < taskSimilarity
}

// similarity returns the weighted share of a request's terms the task
// holds (an entity weighs idWeight, a word 1), and how many terms it has.
func (tr *tracker) similarity(query string) (float64, int) {
	var have, all float64
	n := 0
	for t := range terms(query) {
		n++
		w := 1.0
		if idLike(t) {
			w = idWeight
		}
		all += w
		if tr.knows(t) {
			have += w
		}
	}
	if n == 0 {
		return 0, 0
	}
	return have / all, n
}

// knowsID reports whether entity t is one of the task's, or within one
// ("tokens-old" in "docs/tokens-old"), or holds one, of four bytes or
// more.
func (tr *tracker) knowsID(t string) bool {
	if tr.ids.has(t) {
		return true
	}
	for id := range tr.ids {
		if min(len(id), len(t)) >= 4 && (strings.Contains(id, t) || strings.Contains(t, id)) {
			return true
		}
	}
	return false
}

// argTerms yields the terms of the values (not the keys) of a call's
// JSON arguments, possibly cut short, at most entityDepth levels deep.
func argTerms(args string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		v, _ := jsonx.ScanValue([]byte(args), 0)
		walkValues(v, 0, func(s string) bool {
			for t := range terms(s) {
				if !yield(t) {
					return false
				}
			}
			return true
		})
	}
}

// walkValues calls fn with each string or number of v, depth levels
// deep, until fn returns false; it reports whether to go on.
func walkValues(v jsonx.Value, depth int, fn func(string) bool) bool {
	if depth > entityDepth {
		return true
	}
	switch v.Kind {
	case jsonx.KindString, jsonx.KindNumber:
		return fn(v.Scalar())
	case jsonx.KindObject:
		for _, f := range v.Fields(nil) {
			if !walkValues(f.Value, depth+1, fn) {
				return false
			}
		}
	case jsonx.KindArray:
		ok := true
		v.Elems(func(e jsonx.Value) bool {
			ok = walkValues(e, depth+1, fn)
			return ok
		})
		return ok
	}
	return true
}

// switchCues are phrases by which a request says it turns to another
// task.
var switchCues = []string{"new task", "something else", "something different", "different topic", "another topic",
	"unrelated", "moving on", "move on to", "switching to", "change of subject", "next task", "another thing", "separate"}

// terms yields the content terms of text, as lexical.Tokens finds them,
// but a compound (an ID such as "page-123") whole only, not by its
// parts: each term's stem (lexical.Stem) and the token it came from.
// Stop words, the words of stopwords and numbers of fewer than three
// digits are left out.
func terms(text string) func(yield func(stem, token string) bool) {
	return func(yield func(string, string) bool) {
		for _, tok := range contentTokens(lexical.Tokens(nil, text)) {
			if t := lexical.Stem(tok); !stopwords[t] && !yield(t, tok) {
				return
			}
		}
	}
}

// contentTokens filters toks in place: it leaves out stop words,
// numbers of fewer than three digits, and the parts of a compound.
func contentTokens(toks []string) []string {
	out := toks[:0]
	c := -1 // the index of the first compound from i on
	for i, tok := range toks {
		if c < i {
			c = nextCompound(toks, i)
		}
		part := c < len(toks) && c > i && strings.Contains(toks[c], tok)
		if !part && !lexical.IsStopWord(tok) && (len(tok) >= 3 || strings.Trim(tok, "0123456789") != "") {
			out = append(out, tok)
		}
	}
	return out
}

// nextCompound returns the index of the first compound of toks from i
// on, or len(toks): lexical.Tokens gives a compound right after its
// parts.
func nextCompound(toks []string, i int) int {
	for ; i < len(toks); i++ {
		if strings.ContainsAny(toks[i], joiners) {
			return i
		}
	}
	return i
}

// idLike reports whether a term names an entity: it mixes letters and
// digits ("inv2041"), is a number of three digits or more ("48213"), or
// is a compound ("page-123", "spring-sale", "docs/intro").
func idLike(t string) bool {
	letter, digit := false, false
	for _, r := range t {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case strings.ContainsRune(joiners, r):
			return true
		default:
			letter = true
		}
	}
	return digit && (letter || len(t) >= 3)
}

// joiners join the parts of a compound term (see lexical.Tokens).
const joiners = "-_.:/"

// stopwords are words that say nothing of a task: function words,
// politeness, and the keys of tool arguments.
var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but if then so of to in on at by for with from into onto about as is are was were be been
		am do doe did done have has had i me my we our us you your he she they their it its this that these those there here
		what which who whom how when where why can could would should will shall may might must let let's lets please thank thanks
		ok okay yes no not just also too again now then very really some any all each every more most other such only own same
		than want need like get got make made go going know see look show tell give put take use one two up out over under
		hi hello hey great good nice cool sure fine right well done id title name slug status text body type value query content
		new instead them`) {
		m[lexical.Stem(w)] = true
	}
	return m
}()
