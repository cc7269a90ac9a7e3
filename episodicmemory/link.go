package episodicmemory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/memlayer/memlayer/storage"
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
	linkTerms = 32
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
	links, err := l.links(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("episodicmemory: links: %w", err)
	}
	return links, nil
}

// links returns the links of the current task episode or, when request
// is given and starts a new task, of the task it would start (its terms
// only).
func (l *Layer) links(ctx context.Context, request string) ([]Link, error) {
	if !l.shared() || l.cfg.MaxLinks < 0 {
		return nil, nil
	}
	if err := l.ensureTracker(ctx); err != nil {
		return nil, err
	}
	l.tasks.catchUp()
	from := l.tasks
	if strings.TrimSpace(request) != "" {
		if from.task == 0 || from.newTask(request, nil) {
			from = tracker{task: from.task + 1}
		} else {
			from.words, from.ids = maps.Clone(from.words), maps.Clone(from.ids)
		}
		from.learnRequest(request)
	}
	text := from.searchText()
	if from.task == 0 || text == "" {
		return nil, nil
	}
	hs, err := l.search(ctx, storage.Query{Text: text, K: linkPool})
	if err != nil {
		return nil, err
	}
	return from.linksIn(hs, fieldValue(l.thread), l.cfg.MaxLinks), nil
}

// searchText returns the task's terms as the search for links asks for
// them: its entities, then its words, each sorted, at most linkTerms.
func (tr *tracker) searchText() string {
	out := make([]string, 0, linkTerms)
	for _, set := range []profileSet{tr.ids, tr.words} {
		for _, t := range slices.Sorted(maps.Keys(set)) {
			if len(out) == linkTerms {
				break
			}
			out = append(out, set[t])
		}
	}
	return strings.Join(out, " ")
}

// linksIn returns the links of task tr to the task episodes of hs of
// threads other than thread, closest first, at most max.
func (tr *tracker) linksIn(hs []hit, thread string, limit int) []Link {
	type key struct {
		thread string
		task   int
	}
	others := map[key]*tracker{}
	for _, h := range hs {
		if h.thread == thread || h.task == 0 {
			continue
		}
		k := key{h.thread, h.task}
		if others[k] == nil {
			others[k] = &tracker{task: h.task}
		}
		others[k].learnLine(h.text)
	}
	var links []Link
	for k, o := range others {
		if ln, ok := tr.linkTo(o); ok {
			ln.Thread, ln.Task = k.thread, k.task
			links = append(links, ln)
		}
	}
	slices.SortFunc(links, func(a, b Link) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Thread, b.Thread); c != 0 {
			return c
		}
		return cmp.Compare(a.Task, b.Task)
	})
	return links[:min(len(links), limit)]
}

// linkTo returns the link from task tr to task o, and whether they are
// linked: they share an entity, or the smaller one's terms are
// linkOverlap or more in the other's.
func (tr *tracker) linkTo(o *tracker) (Link, bool) {
	var ln Link
	for t := range tr.ids {
		if o.ids.has(t) {
			ln.Shared = append(ln.Shared, tr.ids[t])
		}
	}
	if len(ln.Shared) > 0 {
		slices.Sort(ln.Shared)
		ln.Score = 1
		return ln, true
	}
	mine, theirs := len(tr.words)+len(tr.ids), len(o.words)+len(o.ids)
	if mine == 0 || theirs == 0 {
		return ln, false
	}
	both := 0
	for t := range tr.words {
		if o.words.has(t) || o.ids.has(t) {
			both++
		}
	}
	ln.Score = float64(both) / float64(min(mine, theirs))
	return ln, ln.Score >= linkOverlap
}

// linkedHits returns the entries Recall offers from the task episodes the
// current one links to (see links; request is the situation Recall was
// given): for each link, the entries of the linked task the text ranks
// best, or its newest, at most followDocs, each marked with its link.
func (l *Layer) linkedHits(ctx context.Context, text string) ([]hit, error) {
	links, err := l.links(ctx, text)
	if err != nil || len(links) == 0 {
		return nil, err
	}
	var out []hit
	for i := range links {
		ln := &links[i]
		f := func() map[string]string {
			return map[string]string{fieldThread: ln.Thread, fieldTask: strconv.Itoa(ln.Task)}
		}
		hs, err := l.search(ctx, storage.Query{Text: text, Filter: f(), K: followDocs})
		if err == nil && len(hs) == 0 {
			hs, err = l.search(ctx, storage.Query{Filter: f(), K: followDocs})
		}
		if err != nil {
			return nil, err
		}
		for _, h := range hs {
			h.linked = ln
			out = append(out, h)
		}
	}
	return out, nil
}

// follow makes p an entry recalled through a link (h, the same entry
// found through it): its line says so, and its similarity is at least
// the link's score.
func (p *picked) follow(h hit) {
	p.linked = h.linked
	p.text = h.text + " (linked: task " + strconv.Itoa(h.linked.Task) + " of thread " + strconv.Quote(oneLine(h.linked.Thread, 64)) + ")"
	p.sim = max(p.sim, h.linked.Score)
}
