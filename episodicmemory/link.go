package episodicmemory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Links between task episodes. In a log shared by a resource's threads
// (layer.ScopeResource), the current task episode of the layer's thread
// is linked to the task episodes of the resource's other threads that
// share an entity with it or are lexically close (see [Layer.Links]).
// Links are found through the log's index, which holds the resource's
// log only: a link never leads to another resource's episode, and
// erasing a resource (its records and collections) leaves no link to
// it. In thread scope a log holds one thread, and there are no links.

const (
	// linkPool is how many documents the search for links asks for.
	linkPool = 32
	// linkOverlap is the lexical overlap at or above which two task
	// episodes that share no entity are linked.
	linkOverlap = 0.5
	// followDocs is how many entries of a linked task episode Recall
	// offers.
	followDocs = 2
	// linkTerms caps the terms of the search for links.
	linkTerms = 8
)

// Link is a link from the current task episode of the layer's thread to
// a task episode of another thread of the same log.
type Link struct {
	// Thread and Task name the linked task episode.
	Thread string
	Task   int
	// Shared are the entities (IDs, slugs) both touched, sorted.
	Shared []string
	// Score is how close the two are, in [0, 1]: 1 when they share an
	// entity, else the share of the smaller one's terms the other holds.
	Score float64
}

// Links returns the links of the current task episode of the layer's
// thread (see [Layer.Task]) to the task episodes of the other threads of
// its log, closest first, at most Config.MaxLinks (none when MaxLinks
// is negative). Two task episodes are linked when they share an entity
// (an ID or a slug: a term that mixes letters and digits or joins words)
// or when the smaller one's terms are at least half in the other's, as
// the log's index finds them (its best linkPool documents for the
// task's terms). Only a log shared by threads (layer.ScopeResource) has
// links.
func (l *Layer) Links(ctx context.Context) ([]Link, error) {
	if err := l.unbound("Links"); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	links, _, err := l.links(ctx, "", nil, false)
	if err != nil {
		return nil, fmt.Errorf("episodicmemory: links: %w", err)
	}
	return links, nil
}

// links returns the links of the current task episode or, when request
// is given and starts a new task, of the task it would start (its terms
// only), and the entries of the linked tasks the search found, best
// first, at most followDocs of each, marked with their link. It costs
// one search of the index; with keep, none when the turn's kept search
// answers (see linkSearch; recent are the index's newest entries, as a
// Recall found them).
func (l *Layer) links(ctx context.Context, request string, recent []hit, keep bool) ([]Link, []hit, error) {
	if !l.shared() || l.cfg.MaxLinks < 0 {
		return nil, nil, nil
	}
	if err := l.ensureTracker(ctx); err != nil {
		return nil, nil, err
	}
	l.tasks.catchUp()
	from := l.tasks.forRequest(request)
	text := from.searchText(request)
	if from.task == 0 || text == "" {
		return nil, nil, nil
	}
	hs, others, err := l.linkTasks(ctx, from.task, text, recent, keep)
	if err != nil {
		return nil, nil, err
	}
	links := from.linksTo(others, l.cfg.MaxLinks)
	return links, linkedOf(hs, links), nil
}

// linkedOf returns the entries of hs (best first) of the tasks links
// name, at most followDocs of each, marked with their link.
func linkedOf(hs []hit, links []Link) []hit {
	var out []hit
	taken := map[int]int{}
	for _, h := range hs {
		i := slices.IndexFunc(links, func(ln Link) bool { return ln.Thread == h.thread && ln.Task == h.task })
		if i >= 0 && taken[i] < followDocs {
			taken[i]++
			h.linked = &links[i]
			out = append(out, h)
		}
	}
	return out
}

// forRequest returns the task request would be part of, a copy: tr with
// the request's terms added, or a new task of the request's terms when
// it would start one (see newTask). Without a request it is tr.
func (tr *tracker) forRequest(request string) tracker {
	if strings.TrimSpace(request) == "" {
		return *tr
	}
	from := tracker{task: tr.task + 1}
	if tr.task > 0 && !tr.newTask(request, nil) {
		from = *tr
		from.words, from.ids = maps.Clone(tr.words), maps.Clone(tr.ids)
	}
	from.learnRequest(request)
	return from
}

// searchText returns the terms the search for links asks for, at most
// linkTerms: the request's, then the task's entities and then its words,
// each sorted.
func (tr *tracker) searchText(request string) string {
	out := make([]string, 0, linkTerms)
	seen := map[string]bool{}
	add := func(t, tok string) bool {
		if !seen[t] {
			seen[t] = true
			out = append(out, tok)
		}
		return len(out) < linkTerms
	}
	for t, tok := range terms(request) {
		if !add(t, tok) {
			return strings.Join(out, " ")
		}
	}
	for _, set := range []profileSet{tr.ids, tr.words} {
		for _, t := range slices.Sorted(maps.Keys(set)) {
			if !add(t, set[t]) {
				return strings.Join(out, " ")
			}
		}
	}
	return strings.Join(out, " ")
}

// linksTo returns the links of task tr to the task episodes others,
// closest first, at most limit.
func (tr *tracker) linksTo(others map[taskKey]*tracker, limit int) []Link {
	var links []Link
	for k, o := range others {
		if ln, ok := tr.linkTo(o); ok {
			ln.Thread, ln.Task = k.thread, k.task
			links = append(links, ln)
		}
	}
	slices.SortFunc(links, cmpLinks)
	return links[:min(len(links), limit)]
}

// taskKey names a task episode of a log.
type taskKey struct {
	thread string
	task   int
}

// tasksOf returns the task episodes of the entries hs of threads other
// than thread, each with the profile of its entries among hs.
func tasksOf(hs []hit, thread string) map[taskKey]*tracker {
	others := map[taskKey]*tracker{}
	for _, h := range hs {
		if h.thread == thread || h.task == 0 {
			continue
		}
		k := taskKey{h.thread, h.task}
		if others[k] == nil {
			others[k] = &tracker{task: h.task}
		}
		others[k].learnLine(h.text)
	}
	return others
}

// cmpLinks orders links closest first, then by thread and task.
func cmpLinks(a, b Link) int {
	return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Thread, b.Thread), cmp.Compare(a.Task, b.Task))
}

// linkTo returns the link from task tr to task o, and whether they are
// linked: they share an entity, or the smaller one's terms are
// linkOverlap or more in the other's.
func (tr *tracker) linkTo(o *tracker) (Link, bool) {
	if shared := tr.sharedIDs(o); len(shared) > 0 {
		return Link{Shared: shared, Score: 1}, true
	}
	score := tr.overlap(o)
	return Link{Score: score}, score >= linkOverlap
}

// sharedIDs returns the entities tasks tr and o share, sorted.
func (tr *tracker) sharedIDs(o *tracker) []string {
	var shared []string
	for t, tok := range tr.ids {
		if o.ids.has(t) {
			shared = append(shared, tok)
		}
	}
	slices.Sort(shared)
	return shared
}

// overlap returns the share of the smaller profile of tasks tr and o
// that the other holds (tr's words found in o, of the terms of the
// smaller): 0 when either is empty.
func (tr *tracker) overlap(o *tracker) float64 {
	mine, theirs := len(tr.words)+len(tr.ids), len(o.words)+len(o.ids)
	if mine == 0 || theirs == 0 {
		return 0
	}
	both := 0
	for t := range tr.words {
		if o.knows(t) {
			both++
		}
	}
	return float64(both) / float64(min(mine, theirs))
}

// linkedHits returns the entries Recall offers from the task episodes the
// current one links to (see links; text is the situation Recall was
// given, recent the index's newest entries it found).
func (l *Layer) linkedHits(ctx context.Context, text string, recent []hit) ([]hit, error) {
	_, hs, err := l.links(ctx, text, recent, true)
	return hs, err
}

// addLinked adds to Recall's candidates the entries found through links
// (see linkedHits), or marks those already there, and returns the newest
// segment among them (-1 when none).
func addLinked(cands map[[2]int64]*picked, linked []hit) int64 {
	newest := int64(-1)
	for _, h := range linked {
		newest = max(newest, h.seq)
		key := [2]int64{h.seq, int64(h.pos)}
		if cands[key] == nil {
			cands[key] = &picked{hit: h}
		}
		cands[key].follow(h)
	}
	return newest
}

// follow makes p an entry recalled through a link (h, the same entry
// found through it): its line says so, and its similarity is at least
// the link's score.
func (p *picked) follow(h hit) {
	p.linked = h.linked
	p.text = h.text + " (linked: task " + strconv.Itoa(h.linked.Task) + " of thread " + strconv.Quote(oneLine(h.linked.Thread, 64)) + ")"
	p.sim = max(p.sim, h.linked.Score)
}
