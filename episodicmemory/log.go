package episodicmemory

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/memlayer/memlayer/internal/seqlog"
	"github.com/memlayer/memlayer/storage"
)

// The stored log: see FormatVersion for its layout. Every function here is
// called with l.mu held and l.log.Store set.

// readHead returns the stored head and its version (an empty head and
// NoVersion when there is none). An unreadable head is quarantined and
// replaced by one that starts after every stored segment, so nothing is
// overwritten and the old records stay stored.
func (l *Layer) readHead(ctx context.Context) (head, int64, error) {
	return seqlog.ReadHead(ctx, &l.log, decodeHead, func(names []string) head {
		h := emptyHead()
		for _, name := range names {
			if _, n := parseName(name); n+1 > h.Next {
				h.Next = n + 1
			}
		}
		h.Base, h.Digested, h.Dropped = h.Next, h.Next, h.Next
		h.setCount(0, 0) // nothing is raw
		return h
	})
}

// readSegment returns the episodes of segment seq: none when it is
// missing (claimed but not written, or dropped) or unreadable
// (quarantined).
func (l *Layer) readSegment(ctx context.Context, seq int64) ([]Episode, error) {
	s, _, err := seqlog.Read(ctx, &l.log, segName(seq), func(b []byte) (segment, error) { return decodeSegment(b, seq) })
	return s.Episodes, err
}

// readSegments returns the episodes of segments from to to-1, one slice
// per segment, read in one round trip of the store; a segment missing or
// unreadable (quarantined) has none.
func (l *Layer) readSegments(ctx context.Context, from, to int64) ([][]Episode, error) {
	if from >= to {
		return nil, nil
	}
	names := make([]string, 0, to-from)
	for seq := from; seq < to; seq++ {
		names = append(names, segName(seq))
	}
	segs, err := seqlog.ReadMany(ctx, &l.log, names, func(i int, b []byte) (segment, error) { return decodeSegment(b, from+int64(i)) })
	if err != nil {
		return nil, err
	}
	eps := make([][]Episode, len(segs))
	for i, s := range segs {
		eps[i] = s.Episodes
	}
	return eps, nil
}

// readDigests returns the digest record starting at seq, or ok false
// when it is missing or unreadable (quarantined).
func (l *Layer) readDigests(ctx context.Context, seq int64) (digestRecord, bool, error) {
	return seqlog.Read(ctx, &l.log, digestName(seq), func(b []byte) (digestRecord, error) { return decodeDigestRecord(b, seq) })
}

// load reads the log's view: the head, the raw episodes not yet folded
// (at most the newest 4·CompactAfter segments) and, for a private
// index, the newest digests (up to MaxDigests). Its cost does not depend
// on the log's length.
func (l *Layer) load(ctx context.Context) error {
	h, ver, err := l.readHead(ctx)
	if err != nil {
		return err
	}
	var digests []Digest
	if l.private {
		if digests, err = l.readViewDigests(ctx, h); err != nil {
			return err
		}
	}
	eps, err := l.readRaw(ctx, h)
	if err != nil {
		return err
	}
	if h.Base != l.head.Base || h.Next < l.head.Next {
		l.linkSearch = linkSearch{} // the view was replaced or went back
	}
	l.head, l.hver, l.digests, l.recent = h, ver, digests, eps
	l.loaded, l.haveDigests = true, l.private
	l.changed()
	if l.private {
		l.ix = &storage.MemoryIndex{}
		return l.addDocs(ctx, docsOf(docsOf(nil, digests), digestsOf(eps)))
	}
	return nil
}

// readView reads the view of the log at head h: the newest digests (up
// to MaxDigests) and the raw episodes not yet folded (at most the newest
// 4·CompactAfter segments). A segment that is missing reads as nothing.
func (l *Layer) readView(ctx context.Context, h head) ([]Digest, []Episode, error) {
	digests, err := l.readViewDigests(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	eps, err := l.readRaw(ctx, h)
	if err != nil {
		return nil, nil, err
	}
	return digests, eps, nil
}

// readViewDigests reads the newest digests of the log at head h, up to
// MaxDigests, oldest first.
func (l *Layer) readViewDigests(ctx context.Context, h head) ([]Digest, error) {
	var digests []Digest
	for seq := h.LastDigest; seq >= h.Base && len(digests) < l.cfg.MaxDigests; {
		r, ok, err := l.readDigests(ctx, seq)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		digests = append(r.Digests, digests...)
		seq = r.Prev
	}
	if n := len(digests) - l.cfg.MaxDigests; n > 0 {
		digests = digests[n:]
	}
	return digests, nil
}

// readRaw reads the raw episodes of the log at head h not yet folded, at
// most the newest 4·CompactAfter segments, in one round trip.
func (l *Layer) readRaw(ctx context.Context, h head) ([]Episode, error) {
	segs, err := l.readSegments(ctx, max(h.Digested, h.Next-int64(4*l.cfg.CompactAfter)), h.Next)
	if err != nil {
		return nil, err
	}
	var eps []Episode
	for _, seg := range segs {
		eps = append(eps, seg...)
	}
	return eps, nil
}

// readMarked reads the view a mark names, from l's own log. A mark of
// any other scope (another user's, another thread's, or a forged one) is
// refused with ErrCorrupt before anything is read: a run reads only its
// own scope. It fails, wrapping storage.ErrNotFound, when the log no
// longer holds the view: it was cleared, erased or restored since (its
// base moved) or never was in this store.
func (l *Layer) readMarked(ctx context.Context, m mark) (snapshot, error) {
	if m.Scope != l.log.Scope {
		return snapshot{}, fmt.Errorf("%w: the snapshot marks the log of scope %s, not this layer's (%s)", ErrCorrupt, storage.Quote(m.Scope), storage.Quote(l.log.Scope))
	}
	h, _, err := l.readHead(ctx)
	if err != nil {
		return snapshot{}, err
	}
	if !h.holds(m.Head) {
		return snapshot{}, fmt.Errorf("the log position of the snapshot (%d) is no longer stored: %w", m.Head.Next, storage.ErrNotFound)
	}
	digests, eps, err := l.readView(ctx, m.Head)
	if err != nil {
		return snapshot{}, err
	}
	for i := range digests {
		digests[i].Seq = 0
	}
	return snapshot{Digests: digests, Episodes: append(eps, m.Pending...)}, nil
}

// holds reports whether the log at head h still holds the view at head
// v: same base, and v's segments neither beyond h nor dropped.
func (h head) holds(v head) bool {
	return h.Base == v.Base && h.Next >= v.Next && h.Dropped <= v.Next
}

// catchUp brings the view up to the stored head h: it reads the segments
// other writers appended, or reloads the whole view when they did more
// than append (compaction, Clear, Restore) or appended a lot.
func (l *Layer) catchUp(ctx context.Context, h head, ver int64) error {
	if !l.loaded {
		if h.Next != l.head.Next {
			l.linkSearch = linkSearch{} // entries it did not read
		}
		l.head, l.hver = h, ver // the view is read from the head when needed
		return nil
	}
	if !l.appendedTo(h) {
		return l.load(ctx)
	}
	segs, err := l.readSegments(ctx, l.head.Next, h.Next)
	if err != nil {
		return err
	}
	for _, seg := range segs {
		l.recent = append(l.recent, seg...)
		if err := l.indexed(ctx, seg, false); err != nil {
			return err
		}
	}
	l.head, l.hver = h, ver
	l.changed()
	return nil
}

// appendedTo reports whether the log at head h is the view's with at
// most Config.CompactAfter segments appended.
func (l *Layer) appendedTo(h head) bool {
	return h.Base == l.head.Base && h.Digested == l.head.Digested && h.Next >= l.head.Next && h.Next-l.head.Next <= int64(l.cfg.CompactAfter)
}

// updateHead applies change to the head, with compare-and-swap on the
// stored head (catching up with other writers on conflict) or in memory
// without a store, and returns the head written; the caller installs
// it. change returns false to give up (then the error is nil and the head
// unchanged).
func (l *Layer) updateHead(ctx context.Context, change func(h *head) bool) (head, bool, error) {
	if l.log.Store == nil {
		h := l.head
		return h, change(&h), nil
	}
	h, v, ok, err := seqlog.Swap(ctx, &l.log, l.head, l.hver, change, func() (head, int64, error) { return l.sync(ctx) })
	if ok {
		l.hver = v
	}
	return h, ok, err
}

// sync reads the stored head, catches the view up with it and returns
// the view's head and version (seqlog.Swap's catch-up).
func (l *Layer) sync(ctx context.Context) (head, int64, error) {
	remote, ver, err := l.readHead(ctx)
	if err == nil {
		err = l.catchUp(ctx, remote, ver)
	}
	return l.head, l.hver, err
}

// appendPending writes the pending episodes as the next segment and
// publishes it. The segment is written first, under the next number with
// create-only (NoVersion), then the head is advanced past it with
// compare-and-swap; so every number below the head's next has its
// segment written. A writer that finds the number taken publishes that
// segment for its writer (which may have stopped between its two
// writes), catches up and tries the next number. On failure the
// episodes stay pending, unless their segment was written: then they are
// in the log, and the next append publishes them.
func (l *Layer) appendPending(ctx context.Context) error {
	if len(l.pending) == 0 {
		return nil
	}
	// The wait after a lost race scales with the time an attempt takes
	// (a round trip on SQLite or Redis, more under load), so that two
	// writers that lost together do not try again in lockstep.
	var took time.Duration
	for attempt := range l.cfg.MaxRetries {
		if err := storage.WaitRetryAfter(ctx, attempt, took); err != nil {
			return fmt.Errorf("append: %w", err)
		}
		start := time.Now()
		if done, err := l.appendOnce(ctx); done {
			return err
		}
		took = time.Since(start)
	}
	return fmt.Errorf("append: gave up after %d attempts: %w", l.cfg.MaxRetries, storage.ErrConflict)
}

// appendOnce writes the pending episodes as segment head.Next and
// publishes it (see appendPending). It reports whether it is done: the
// segment written, or a failure. When another writer holds the number it
// publishes that writer's segment and, if that goes well, reports false.
func (l *Layer) appendOnce(ctx context.Context) (bool, error) {
	seq := l.head.Next
	seg := segment{Seq: seq, Episodes: slices.Clone(l.pending)}
	seg.Version = versionOf(seg.Episodes)
	number(seg.Episodes, seq, l.shared())
	_, err := l.log.Store.Put(ctx, l.log.Key(segName(seq)), encode(seg), storage.NoVersion)
	switch {
	case err == nil:
		l.appended += int64(len(l.pending))
		l.pending = nil
		return true, l.publish(ctx, seq, seg.Episodes)
	case !errors.Is(err, storage.ErrConflict):
		return true, fmt.Errorf("write segment %d: %w", seq, err)
	}
	err = l.publish(ctx, seq, nil)
	return err != nil, err
}

// publish advances the head past segment seq (written, by this writer
// with episodes eps, or by another when eps is nil) and takes the segment
// into the view, catching up with other writers on the way. The head
// counts the segment's episodes; a head without counts gets them here
// when the view is read and is the head's.
func (l *Layer) publish(ctx context.Context, seq int64, eps []Episode) error {
	mine := eps != nil
	if !mine {
		var err error
		if eps, err = l.readSegment(ctx, seq); err != nil {
			return err
		}
	}
	n, toks := rawSize(eps)
	var ev eviction
	var everr error
	h, v, ok, err := seqlog.Swap(ctx, &l.log, l.head, l.hver, func(h *head) bool {
		if h.Next > seq {
			return false // in the view: published by another writer
		}
		if !h.Counted && l.loaded && h.Base == l.head.Base && h.Digested == l.head.Digested && h.Next == l.head.Next {
			h.setCount(rawSize(l.recent))
		}
		h.Next = seq + 1
		h.count(n, toks)
		ev, everr = l.admit(ctx, h, eps, mine)
		return everr == nil
	}, func() (head, int64, error) { return l.sync(ctx) })
	if err = cmp.Or(err, everr); err != nil {
		return fmt.Errorf("publish segment %d: %w", seq, err)
	}
	if !ok {
		return nil
	}
	l.head, l.hver = h, v
	// Before the view is read, recent holds the segments this layer
	// published (indexing reads them there); reading the view replaces it.
	l.recent = append(l.recent, eps...)
	l.changed()
	if err := cmp.Or(l.indexed(ctx, eps, mine), l.apply(ctx, ev)); err != nil {
		return fmt.Errorf("segment %d is stored, but %w", seq, err)
	}
	return nil
}

// rawSize returns the number of episodes of eps and their tokens (see
// rawTokens).
func rawSize(eps []Episode) (n, toks int) {
	for i := range eps {
		toks += rawTokens(&eps[i])
	}
	return len(eps), toks
}

// compactStored folds the raw episodes of segments [head.Digested, to)
// into a digest record, advances the head, and deletes the segments
// beyond the retention limit.
func (l *Layer) compactStored(ctx context.Context, to int64) error {
	from := l.head.Digested
	// The view can miss a segment another writer had claimed but not yet
	// written when this one caught up: read those from the store, so the
	// digests cover every episode written. (A segment still unwritten
	// now, long after its claim, is a crashed writer's gap.)
	var digests []Digest
	folded, foldedToks := 0, 0
	for seq := from; seq < to; seq++ {
		eps, err := l.rawSegment(ctx, seq)
		if err != nil {
			return err
		}
		digests = append(digests, digestsOf(eps)...)
		n, toks := rawSize(eps)
		folded, foldedToks = folded+n, foldedToks+toks
	}
	rec, err := l.writeDigests(ctx, digestRecord{Version: baseVersion, From: from, To: to, Prev: l.head.LastDigest, Digests: digests})
	if err != nil {
		return err
	}
	oldDropped := l.head.Dropped
	h, ok, err := l.updateHead(ctx, func(h *head) bool {
		if h.Digested != from {
			return false // someone else moved the fold: our record is theirs or stale
		}
		h.Digested, h.LastDigest = rec.To, rec.From
		if rec.To == to {
			h.count(-folded, -foldedToks)
		} else {
			h.uncount() // another writer's fold, of other segments
		}
		if l.cfg.Retain >= 0 {
			h.Dropped = max(h.Dropped, min(h.Digested, h.Next-int64(l.cfg.Retain)))
		}
		return true
	})
	if err != nil || !ok {
		return err
	}
	l.fold(h, rec.Digests)
	return l.dropSegments(ctx, oldDropped, h.Dropped)
}

// rawSegment returns the raw episodes of segment seq: the view's when it
// holds them, else the stored ones.
func (l *Layer) rawSegment(ctx context.Context, seq int64) ([]Episode, error) {
	if eps := l.viewSegment(seq); eps != nil {
		return eps, nil
	}
	return l.readSegment(ctx, seq)
}

// writeDigests writes rec, create-only, and returns it; when another
// writer folded from the same segment (or crashed doing it) it returns
// that writer's record instead.
func (l *Layer) writeDigests(ctx context.Context, rec digestRecord) (digestRecord, error) {
	_, err := l.log.Store.Put(ctx, l.log.Key(digestName(rec.From)), encode(rec), storage.NoVersion)
	if err == nil {
		return rec, nil
	}
	if !errors.Is(err, storage.ErrConflict) {
		return digestRecord{}, fmt.Errorf("write digests %d: %w", rec.From, err)
	}
	r, ok, rerr := l.readDigests(ctx, rec.From)
	if rerr != nil || !ok {
		return digestRecord{}, errors.Join(err, rerr)
	}
	return r, nil
}

// dropSegments deletes segments [from, to), reporting every failure.
func (l *Layer) dropSegments(ctx context.Context, from, to int64) error {
	var errs []error
	for seq := from; seq < to; seq++ {
		if err := l.log.Store.Delete(ctx, l.log.Key(segName(seq)), storage.AnyVersion); err != nil {
			errs = append(errs, fmt.Errorf("drop segment %d: %w", seq, err))
		}
	}
	return errors.Join(errs...)
}

// purge deletes every segment and digest record below base (Clear and
// Restore).
func (l *Layer) purge(ctx context.Context, base int64) error {
	return l.log.Purge(ctx, func(name string) bool {
		kind, n := parseName(name)
		return kind != "" && n < base
	})
}

// findStored looks a reference up in the stored log, beyond the view:
// through the digest records, newest first, then in the segment the
// digest names. It returns the episode, or its digest when the raw
// episode is gone.
func (l *Layer) findStored(ctx context.Context, m refMatch, digests []Digest, prev int64) (Episode, *Digest, error) {
	for {
		if i := lastIndexFunc(digests, func(d Digest) bool { return m.matches(d.Ref, d.Thread) }); i >= 0 {
			d := digests[i]
			return l.resolve(ctx, hit{ref: d.Ref, thread: d.Thread, text: d.Text, seq: d.Seq, pos: -1, step: d.Step, time: d.Time})
		}
		if prev < l.head.Base {
			return Episode{}, nil, nil
		}
		r, ok, err := l.readDigests(ctx, prev)
		if err != nil || !ok {
			return Episode{}, nil, err
		}
		digests, prev = r.Digests, r.Prev
	}
}
