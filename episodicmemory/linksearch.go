package episodicmemory

import (
	"context"
	"slices"

	"github.com/memlayer/memlayer/internal/lexical"
	"github.com/memlayer/memlayer/storage"
)

// The search for links, kept for the steps of a turn. The steps of a
// turn recall with the same request, and mostly ask the index the same
// question for links: the request's terms and then the task's. The
// search is kept, and a step that asks the same question finds its links
// in it, with the task's profile as it is then. A step searches again
// when:
//
//   - the search's text is another (the request changed, or the task's
//     profile changed the terms the search asks for);
//   - the task the request belongs to is another (a new task started);
//   - the turn ended (the thread's turn entry joined the view);
//   - the run's write found entries other runs logged: with its view
//     read, an entry of another thread that shares a term with the
//     search; else any (the write learns of them, without reading them,
//     from the head);
//   - the view was replaced or went back (Clear, Restore, an erase this
//     run saw), or the index's newest entries are older than when the
//     search was made, or there are none (an erase it did not see).
//
// What a kept search may miss within a turn: the entries other runs
// logged since the run's last write, which its next write finds, and
// the entries another run evicted. An entry the run evicts leaves the
// kept search. Thread scope has no links, and nothing is kept.

// linkSearch is a kept search for links (see above). Its methods are
// called with the layer's mu held.
type linkSearch struct {
	ok bool
	// text is the search's text, task the task it was for.
	text string
	task int
	// base and next are the view's head then; newest is the newest
	// segment among the index's newest entries then (-1: none).
	base, next, newest int64
	// terms are the search's terms, as the in-memory index ranks them,
	// read from text when first needed.
	terms map[string]bool
	hits  []hit
	// others are the task episodes of other threads among hits, each
	// with the profile of its entries there (see tasksOf), read from hits
	// when first needed.
	others map[taskKey]*tracker
}

// linkTasks returns the index's best linkPool entries for text, the
// search for links of task, and the task episodes of other threads among
// them (see tasksOf): with keep, the kept search's when it still
// answers (see linkHits).
func (l *Layer) linkTasks(ctx context.Context, task int, text string, recent []hit, keep bool) ([]hit, map[taskKey]*tracker, error) {
	thread := fieldValue(l.thread)
	if !keep {
		hs, err := l.search(ctx, storage.Query{Text: text, K: linkPool})
		if err != nil {
			return nil, nil, err
		}
		return hs, tasksOf(hs, thread), nil
	}
	hs, err := l.linkHits(ctx, task, text, recent)
	if err != nil {
		return nil, nil, err
	}
	s := &l.linkSearch
	if s.others == nil {
		s.others = tasksOf(hs, thread)
	}
	return hs, s.others, nil
}

// linkHits returns the index's best linkPool entries for text, the
// search for links of task: the kept search when it still answers (see
// linkSearch), else a new search, kept. recent are the index's newest
// entries, as the Recall found them.
func (l *Layer) linkHits(ctx context.Context, task int, text string, recent []hit) ([]hit, error) {
	s := &l.linkSearch
	newest := newestSeq(recent)
	if s.answers(task, text, l.head, newest) {
		return s.hits, nil
	}
	hs, err := l.search(ctx, storage.Query{Text: text, K: linkPool})
	if err != nil {
		*s = linkSearch{}
		return nil, err
	}
	*s = linkSearch{ok: true, text: text, task: task, base: l.head.Base, next: l.head.Next, newest: newest, hits: hs}
	return hs, nil
}

// answers reports whether the kept search is the search for links text
// of task, and still holds: the view at head h is the one it was made
// in or grew from it, and newest, the newest segment among the index's
// newest entries now, is not older than then.
func (s *linkSearch) answers(task int, text string, h head, newest int64) bool {
	return s.ok && s.text == text && s.task == task && h.Base == s.base && h.Next >= s.next && newest >= s.newest
}

// newestSeq returns the newest segment of hs, or -1 when there is none.
func newestSeq(hs []hit) int64 {
	n := int64(-1)
	for i := range hs {
		n = max(n, hs[i].seq)
	}
	return n
}

// saw drops the kept search when entries eps, which joined the view,
// end the thread's turn or are another thread's that share a term with
// it.
func (s *linkSearch) saw(eps []Episode, thread string) {
	if !s.ok {
		return
	}
	for i := range eps {
		e := &eps[i]
		if e.Thread == thread && e.Kind == KindTurn || e.Thread != thread && s.matches(e) {
			*s = linkSearch{}
			return
		}
	}
}

// matches reports whether entry e shares a term with the search.
func (s *linkSearch) matches(e *Episode) bool {
	if s.terms == nil {
		s.terms = map[string]bool{}
		for _, t := range lexical.Terms(nil, s.text) {
			s.terms[t] = true
		}
	}
	return slices.ContainsFunc(lexical.Terms(nil, e.Digest()), func(t string) bool { return s.terms[t] })
}

// evicted takes the documents ids, evicted, out of the kept search.
func (s *linkSearch) evicted(ids []string) {
	if !s.ok || len(ids) == 0 {
		return
	}
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	s.hits = slices.DeleteFunc(slices.Clone(s.hits), func(h hit) bool { return gone[docID(h.seq, h.pos)] })
	s.others = nil
}
