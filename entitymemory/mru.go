package entitymemory

import (
	"slices"
	"strings"
	"time"
)

// This file holds the most-recently-used list: the state of the layer.

// sameEntity reports whether a and b are the same entity (type and ID).
func sameEntity(a, b *Entity) bool { return a.ID == b.ID && a.Type == b.Type }

// keepKnown fills in what a re-seen entity's new sighting left out from
// old, its earlier record: a name that is only the ID fallback, an empty
// slug or parent.
func (e *Entity) keepKnown(old *Entity) {
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

// addBatch records the entities of one tool result (or the entities a
// writer re-applies after a lost race, see rebase) at the front of list in
// their own order, writes the new list (at most capacity long) into dst,
// which must not share memory with list, and reports whether anything
// visible changed. The batch keeps its SeenAt; it takes the logical times
// after clock, the first entity the highest, so the list stays ordered by
// seq; the new clock is returned. A re-seen entity moves to the front and
// takes the new name; a new name that is only the ID fallback, or an
// empty slug or parent, keeps the old value. list is not modified.
func addBatch(dst, list, batch []Entity, clock uint64, capacity int) ([]Entity, uint64, bool) {
	out := appendBatch(dst[:0], list, batch, capacity)
	n := uint64(len(out))
	for i := range out {
		out[i].seq = clock + n - uint64(i)
	}
	out = appendOthers(out, list, batch, capacity)
	return out, clock + n, !sameVisible(list, out)
}

// appendBatch appends to out, in order and while it is shorter than
// capacity, the entities of batch that have a type and an ID, each once,
// keeping what list knows of them (see keepKnown).
func appendBatch(out, list, batch []Entity, capacity int) []Entity {
	for i := range batch {
		if len(out) == capacity {
			break
		}
		e := batch[i]
		if e.ID == "" || e.Type == "" || containsEntity(batch[:i], &e) {
			continue
		}
		if j := indexEntity(list, &e); j >= 0 {
			e.keepKnown(&list[j])
		}
		out = append(out, e)
	}
	return out
}

// appendOthers appends to out, in order and while it is shorter than
// capacity, the entities of list that are not in batch.
func appendOthers(out, list, batch []Entity, capacity int) []Entity {
	for i := range list {
		if len(out) == capacity {
			break
		}
		if !containsEntity(batch, &list[i]) {
			out = append(out, list[i])
		}
	}
	return out
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
		if a[i].visible() != b[i].visible() {
			return false
		}
	}
	return true
}

// visible returns what the block shows of e.
func (e *Entity) visible() [5]string { return [5]string{e.Type, e.ID, e.Name, e.Slug, e.Parent} }

// prune drops the entities not seen within ttl before now (ttl 0: none)
// and reports whether any was dropped. It filters list in place, and
// first bounds the seenAt of entities stamped after now (see notAfter),
// so that an entity seen while the clock was ahead ages out a ttl after
// the clock reads right, not a ttl after its stamp. The clock is read
// only when there is a ttl: Recall and Store prune on every call.
func prune(list []Entity, now func() time.Time, ttl time.Duration) ([]Entity, bool) {
	if ttl <= 0 || len(list) == 0 {
		return list, false
	}
	t, n := now(), len(list)
	notAfter(list, t)
	list = slices.DeleteFunc(list, func(e Entity) bool { return t.Sub(e.SeenAt) > ttl })
	return list, len(list) != n
}

// notAfter moves the seenAt of the entities of list that lie after now
// (stamped by a clock that was ahead) back: to the earliest seenAt, not
// after now, of the entities recorded after it (a greater seq), or to
// now. A seenAt in the future never counts as newer than now or than what
// was seen after it. The entities keep the new seenAt, so it is saved
// with the next save.
func notAfter(list []Entity, now time.Time) {
	for i := range list {
		if list[i].SeenAt.After(now) {
			list[i].SeenAt = earliestAfter(list, list[i].seq, now)
		}
	}
}

// earliestAfter returns the earliest seenAt, not after now, of the
// entities of list recorded after seq, or now when there is none earlier.
func earliestAfter(list []Entity, seq uint64, now time.Time) time.Time {
	t := now
	for j := range list {
		if s := list[j].SeenAt; list[j].seq > seq && !s.After(now) && s.Before(t) {
			t = s
		}
	}
	return t
}

// rebase returns what a writer saves after losing a compare-and-swap race:
// its own changes re-applied onto the stored state (remote, at logical
// clock remoteClock) instead of a union of the two lists. Its changes
// are the entities it recorded since the state it started from (local
// entities with seq > base) and the entities it deleted since (deleted).
// The deleted ones leave the stored list, so a deletion is never undone;
// the recorded ones go first with logical times after both clocks, so
// the entity a writer just recorded is never cut by a writer whose
// clock, wall or logical, is ahead. Every other local entity is already
// in remote's history: where remote no longer has it, another writer
// deleted it or it aged out, and it is not brought back. remote is
// modified. rebase returns the new list, the base of its changes (the
// re-applied entities have seqs above it) and the new clock.
func rebase(local []Entity, base, localClock uint64, deleted []Entity, remote []Entity, remoteClock uint64, capacity int) ([]Entity, uint64, uint64) {
	remote = slices.DeleteFunc(remote, func(e Entity) bool { return containsEntity(deleted, &e) })
	var mine []Entity
	for _, e := range local {
		if e.seq > base {
			mine = append(mine, e)
		}
	}
	start := max(localClock, remoteClock)
	out, clock, _ := addBatch(make([]Entity, 0, capacity), remote, mine, start, capacity)
	return out, start, clock
}

// clean normalises an entity coming from outside the extractor (a
// snapshot, storage, [Layer.Add]): type normalised, text fields made
// single-line and capped. ok is false when it has no type or ID.
func clean(e Entity) (Entity, bool) {
	e.Type = NormalizeType(e.Type)
	e = finish(e)
	return e, e.Type != "" && e.ID != "" && strings.TrimSpace(e.ID) != ""
}
