package entitymemory

import (
	"slices"
	"strings"
	"time"
)

// This file holds the most-recently-used list: the state of the layer.

// sameEntity reports whether a and b are the same entity (type and ID).
func sameEntity(a, b *Entity) bool { return a.ID == b.ID && a.Type == b.Type }

// addBatch records the entities of one tool result, seen at now, at the
// front of list in their own order, writes the new list (at most capacity
// long) into dst, which must not share memory with list, and reports
// whether anything visible changed. A re-seen entity moves to the front
// and takes the new name; a new name that is only the ID fallback, or an
// empty slug or parent, keeps the old value. list is not modified.
func addBatch(dst, list, batch []Entity, now time.Time, capacity int) ([]Entity, bool) {
	out := dst[:0]
	for i := range batch {
		if len(out) == capacity {
			break
		}
		e := batch[i]
		if e.ID == "" || e.Type == "" || containsEntity(batch[:i], &e) {
			continue
		}
		e.SeenAt = now
		if j := indexEntity(list, &e); j >= 0 {
			old := &list[j]
			if e.Name == e.ID && old.Name != "" {
				e.Name = old.Name
			}
			if e.Slug == "" {
				e.Slug = old.Slug
			}
			if e.Parent == "" {
				e.Parent = old.Parent
			}
		}
		out = append(out, e)
	}
	for i := range list {
		if len(out) == capacity {
			break
		}
		if !containsEntity(batch, &list[i]) {
			out = append(out, list[i])
		}
	}
	return out, !sameVisible(list, out)
}

// indexEntity returns the index of e (by type and ID) in list, or -1.
func indexEntity(list []Entity, e *Entity) int {
	for i := range list {
		if sameEntity(&list[i], e) {
			return i
		}
	}
	return -1
}

func containsEntity(list []Entity, e *Entity) bool { return indexEntity(list, e) >= 0 }

// sameVisible reports whether two lists render the same (SeenAt aside).
func sameVisible(a, b []Entity) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.ID != y.ID || x.Name != y.Name || x.Slug != y.Slug || x.Parent != y.Parent {
			return false
		}
	}
	return true
}

// prune drops the entities not seen within ttl before now() (ttl 0: none)
// and reports whether any was dropped. It filters list in place. The
// clock is read only when there is a ttl: Recall and Store prune on every
// call.
func prune(list []Entity, now func() time.Time, ttl time.Duration) ([]Entity, bool) {
	if ttl <= 0 || len(list) == 0 {
		return list, false
	}
	t, n := now(), len(list)
	list = slices.DeleteFunc(list, func(e Entity) bool { return t.Sub(e.SeenAt) > ttl })
	return list, len(list) != n
}

// merge combines the local list with one loaded from storage after a lost
// write race: every entity of either, the most recently seen copy of each,
// ordered by SeenAt, newest first (ties keep local before remote, and list
// order), cut to capacity.
func merge(local, remote []Entity, capacity int) []Entity {
	all := make([]Entity, 0, len(local)+len(remote))
	all = append(all, local...)
	for _, r := range remote {
		i := indexEntity(all, &r)
		switch {
		case i < 0:
			all = append(all, r)
		case r.SeenAt.After(all[i].SeenAt):
			all[i] = r
		}
	}
	slices.SortStableFunc(all, func(a, b Entity) int { return b.SeenAt.Compare(a.SeenAt) })
	if len(all) > capacity {
		all = all[:capacity]
	}
	return all
}

// clean normalises an entity coming from outside the extractor (a
// snapshot, storage, [Layer.Add]): type normalised, text fields made
// single-line and capped. ok is false when it has no type or ID.
func clean(e Entity) (Entity, bool) {
	e.Type = NormalizeType(e.Type)
	e = finish(e)
	return e, e.Type != "" && e.ID != "" && strings.TrimSpace(e.ID) != ""
}
