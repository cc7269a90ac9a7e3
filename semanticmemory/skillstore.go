package semanticmemory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/memlayer/memlayer/internal/textcut"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// fieldSkill is the index field of a skill fact's document that holds
// its signature (Skill.Signature): a skill is found by its steps.
const fieldSkill = "skill"

// The step sequences that succeeded, but not yet often enough to be
// skills, are counted in candidateBuckets records of the scope, by their
// signature's first hex digit, so a turn reads and writes one small
// record: "skill-candidates-0" to "skill-candidates-7".
const (
	candidatesName   = "skill-candidates-"
	candidateBuckets = 8
)

// bucketName returns the name of the candidate record that counts
// signature sig.
func bucketName(sig string) string {
	d := strings.IndexByte("0123456789abcdef", sig[0])
	return candidatesName + strconv.Itoa(max(d, 0)%candidateBuckets)
}

// candidates is one stored candidate record of a scope, at most
// SkillConfig.MaxCandidates/8 entries (rounded up).
type candidates struct {
	Version int `json:"v"`
	// Clock counts the record's updates; an entry's Last is the clock of
	// its last success, so the least recently seen goes first.
	Clock int64       `json:"clock"`
	C     []candidate `json:"c"`
}

// candidate is a step sequence that succeeded N times (below
// SkillConfig.MinSuccesses), with the evidence and triggers of those
// turns.
type candidate struct {
	Sig  string `json:"sig"`
	N    int    `json:"n"`
	Last int64  `json:"last"`
	// Known marks the successes of a skill already made, not yet in its
	// fact (see countKnown): N of them, with their evidence and triggers.
	Known    bool       `json:"known,omitempty"`
	Triggers []string   `json:"triggers,omitempty"`
	Evidence []Evidence `json:"evidence,omitempty"`
}

// tally is what one or more successes of a skill add to it.
type tally struct {
	n        int
	evidence []Evidence
	triggers []string
}

// tallyOf returns the tally of success s.
func tallyOf(s success) tally {
	t := tally{n: 1, evidence: []Evidence{s.ev}}
	if s.trigger != "" {
		t.triggers = []string{s.trigger}
	}
	return t
}

// success is one successful turn of a step sequence.
type success struct {
	steps   []SkillStep
	sig     string
	trigger string
	ev      Evidence
}

// Store implements layer.Storer: it learns skills. It follows the tool
// calls of the turn a run is in, step by step; when the turn ends (a
// step without tool calls) in success — no call failed or returned an
// error result, and the answer reports no failure — the turn's sequence
// (its tool calls, repeats folded, arguments abstracted) counts one
// success of its signature in its entry of the scope's candidate
// record, which makes it a skill at Config.Skills.MinSuccesses; a
// skill's successes are added to its fact, as its next version, each
// time they would double its count (see countKnown). A turn's calls are
// kept in memory until it ends; a successful turn writes one small
// record, so no step reads or writes anything that grows with the log.
// With Config.NoSkills it learns nothing. With Config.Consolidate, a
// step that ends a turn also queues it for consolidation (see
// [Consolidator]).
func (l *Layer) Store(ctx context.Context, t layer.Turn) error {
	if l.template {
		return nil
	}
	l.cons.enqueue(t) // nil without Config.Consolidate
	if l.cfg.NoSkills {
		return nil
	}
	l.mu.Lock()
	ended := l.seq.observe(t, &l.cfg.Skills, l.ownTool)
	seq := l.seq
	if ended {
		l.seq = turnSeq{}
	}
	thread := l.thread
	l.mu.Unlock()
	if !ended || !seq.succeeded(t.Response) {
		return nil
	}
	s := success{steps: seq.steps, sig: signature(seq.steps), trigger: textcut.Prefix(strings.Join(strings.Fields(t.Query), " "), maxTriggerBytes),
		ev: Evidence{Thread: thread, Refs: seq.refs}}
	if err := l.learn(ctx, s, t.Step); err != nil {
		return fmt.Errorf("semanticmemory: store: skill: %w", err)
	}
	return nil
}

// ownTool reports whether tool is one of the layer's own, by its name
// or its deprecated name (layer.DeprecatedToolName).
func (l *Layer) ownTool(tool string) bool {
	for _, fn := range [...]string{"memorize", "forget"} {
		old, _ := layer.DeprecatedToolName(l.spec, fn)
		if tool == layer.ToolName(l.cfg.ID, fn) || tool == old && old != "" {
			return true
		}
	}
	return false
}

// learn counts success s: on its skill, or on its candidate, making the
// skill when the candidate has succeeded often enough.
func (l *Layer) learn(ctx context.Context, s success, step int) error {
	made, err := l.countSuccess(ctx, s, step)
	if err != nil || made == nil {
		return err
	}
	l.name(ctx, made) // without the lock: a namer may call a model
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.writeSkill(ctx, s, tallyOf(s), made, step); err != nil {
		return err
	}
	return l.dropCandidate(ctx, s.sig)
}

// countSuccess counts success s on its skill, or else on its
// candidate, and returns the skill to make when the candidate has
// succeeded often enough.
func (l *Layer) countSuccess(ctx context.Context, s success, step int) (*Skill, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.sync(ctx); err != nil {
		return nil, err
	}
	v, found, err := l.lookupSkill(ctx, s.sig)
	switch {
	case err != nil:
		return nil, err
	case found:
		return nil, l.countKnown(ctx, s, v, step)
	}
	return l.countCandidate(ctx, s)
}

// countKnown counts success s of a skill already made (v, its index
// document). The successes since its fact was written are counted in
// its entry of the candidate record; the fact's next version, with them
// added, is written when
// they reach its count, so a skill in use writes a version each time its
// count doubles, not one a success, and a turn writes one small record.
// Its count is then a lower bound: successes dropped with the entry
// (the least recently seen, when the record is full) are not counted.
func (l *Layer) countKnown(ctx context.Context, s success, v view, step int) error {
	f, found, err := l.fact(ctx, v) // v: the index's document of the skill
	if err != nil || !found || f.Skill == nil {
		return err
	}
	var due *tally
	err = l.updateCandidates(ctx, s.sig, func(cs *candidates) bool {
		due = nil
		c := cs.counted(s, l.cfg.Skills.MaxEvidence)
		c.Known = true
		if c.N >= f.Skill.Successes {
			due = &tally{n: c.N, evidence: c.Evidence, triggers: c.Triggers}
			return false // written with the skill's next version
		}
		l.evictCandidates(cs)
		return true
	})
	if err != nil || due == nil {
		return err
	}
	if err := l.writeSkill(ctx, s, *due, nil, step); err != nil {
		return err
	}
	return l.dropCandidate(ctx, s.sig)
}

// lookupSkill returns the live skill fact of signature sig as the index
// holds it.
func (l *Layer) lookupSkill(ctx context.Context, sig string) (view, bool, error) {
	hits, err := l.ix.Search(ctx, l.col, storage.Query{Filter: map[string]string{fieldKind: SkillKind, fieldSkill: sig}, K: 1})
	if err != nil || len(hits) == 0 {
		return view{}, false, err
	}
	return viewOf(hits[0]), true, nil
}

// liveSkill reads the live skill fact of signature sig.
func (l *Layer) liveSkill(ctx context.Context, sig string) (Fact, bool, error) {
	v, found, err := l.lookupSkill(ctx, sig)
	if err != nil || !found {
		return Fact{}, false, err
	}
	f, found, err := l.fact(ctx, v)
	return f, found && f.Skill != nil, err
}

// name gives a new skill its namer's name and description, or reports
// the namer's failure and keeps the deterministic name.
func (l *Layer) name(ctx context.Context, s *Skill) {
	n := l.cfg.Skills.Namer
	if n == nil {
		return
	}
	name, desc, err := n.NameSkill(ctx, *s)
	if name = cleanName(name, maxNameBytes); err != nil || name == "" {
		l.log.Logger.WarnContext(ctx, "semanticmemory: skill namer failed; the skill keeps its deterministic name",
			"layer", l.cfg.ID, "skill", s.Name, "error", err)
		return
	}
	s.Name, s.Description = name, cleanName(desc, maxDescBytes)
}

// writeSkill writes the next version of s's skill fact, with t counted,
// or made (a new skill) when there is no such fact.
func (l *Layer) writeSkill(ctx context.Context, s success, t tally, made *Skill, step int) error {
	r, err := l.appendRecord(ctx, false, func(seq int64) (record, error) {
		facts, err := l.skillVersion(ctx, s, t, made, step, seq)
		if err != nil || len(facts) == 0 {
			return record{}, err
		}
		return l.admit(ctx, facts)
	})
	if err != nil {
		return err
	}
	written := r.Facts
	if err := l.catchUp(ctx); err != nil {
		return fmt.Errorf("stored, but %w", err)
	}
	l.mirror(ctx, written)
	return nil
}

// skillVersion returns the skill fact to write in record seq: the next
// version of the live skill of s's signature with t counted, or made as
// a new fact.
func (l *Layer) skillVersion(ctx context.Context, s success, t tally, made *Skill, step int, seq int64) ([]Fact, error) {
	now := l.now()
	f, found, err := l.liveSkill(ctx, s.sig)
	switch {
	case err != nil:
		return nil, err
	case found:
		sk := *f.Skill
		l.addTally(&sk, t)
		f.Skill, f.Version = &sk, f.Version+1
	case made == nil:
		return nil, nil // forgotten since: count it again from the start
	default:
		id, err := l.newID(ctx, seq)
		if err != nil {
			return nil, err
		}
		f = Fact{ID: id, Kind: SkillKind, Created: now, Version: 1, Skill: made}
	}
	f.Text, f.Importance, f.Updated = f.Skill.text(), l.cfg.Skills.Importance, now
	f.Source = Source{By: "layer:" + l.cfg.ID, Thread: s.ev.Thread, Step: step}
	emb, err := l.embed(ctx, f.Text)
	if err != nil {
		return nil, err
	}
	f.Embedding = emb
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFact, err)
	}
	return []Fact{f}, nil
}

// addTally adds t to skill sk: its count, evidence and triggers.
func (l *Layer) addTally(sk *Skill, t tally) {
	sk.Successes += t.n
	sk.Evidence = keepNewest(append(slices.Clone(sk.Evidence), t.evidence...), l.cfg.Skills.MaxEvidence)
	for _, tr := range t.triggers {
		sk.Triggers = addTrigger(sk.Triggers, tr)
	}
}

// keepNewest returns the last n of xs.
func keepNewest[T any](xs []T, n int) []T { return xs[max(0, len(xs)-n):] }

// addTrigger adds t to ts, once (moved to the end when there), keeping
// the newest maxTriggers.
func addTrigger(ts []string, t string) []string {
	if t == "" {
		return ts
	}
	ts = slices.DeleteFunc(slices.Clone(ts), func(x string) bool { return x == t })
	return keepNewest(append(ts, t), maxTriggers)
}

// countCandidate counts success s on its candidate in the scope's
// candidate record (compare-and-swap). When the candidate reaches
// Config.Skills.MinSuccesses it returns the skill it makes, and leaves
// the candidate for dropCandidate to remove once the skill is written.
func (l *Layer) countCandidate(ctx context.Context, s success) (*Skill, error) {
	var made *Skill
	err := l.updateCandidates(ctx, s.sig, func(cs *candidates) bool {
		made = nil
		c := cs.counted(s, min(l.cfg.Skills.MinSuccesses, l.cfg.Skills.MaxEvidence))
		if c.N >= l.cfg.Skills.MinSuccesses {
			made = &Skill{Steps: s.steps, Triggers: c.Triggers, Successes: c.N, Evidence: c.Evidence, Signature: s.sig}
			made.Name = deterministicName(c.Triggers, s.steps)
			return false // written when the skill is
		}
		l.evictCandidates(cs)
		return true
	})
	return made, err
}

// counted counts success s on its entry of the record (added when it
// has none), keeping its newest maxEvidence evidence entries, and
// returns the entry.
func (cs *candidates) counted(s success, maxEvidence int) *candidate {
	i := slices.IndexFunc(cs.C, func(c candidate) bool { return c.Sig == s.sig })
	if i < 0 {
		cs.C = append(cs.C, candidate{Sig: s.sig})
		i = len(cs.C) - 1
	}
	c := &cs.C[i]
	c.N++
	c.Last = cs.Clock
	c.Evidence = keepNewest(append(c.Evidence, s.ev), maxEvidence)
	c.Triggers = addTrigger(c.Triggers, s.trigger)
	return c
}

// evictCandidates drops the least recently seen candidates of a record
// beyond its share of Config.Skills.MaxCandidates.
func (l *Layer) evictCandidates(cs *candidates) {
	for len(cs.C) > (l.cfg.Skills.MaxCandidates+candidateBuckets-1)/candidateBuckets {
		i := 0
		for j, c := range cs.C {
			if c.Last < cs.C[i].Last {
				i = j
			}
		}
		cs.C = slices.Delete(cs.C, i, i+1)
	}
}

// dropCandidate removes the candidate of signature sig, now a skill.
func (l *Layer) dropCandidate(ctx context.Context, sig string) error {
	return l.updateCandidates(ctx, sig, func(cs *candidates) bool {
		n := len(cs.C)
		cs.C = slices.DeleteFunc(cs.C, func(c candidate) bool { return c.Sig == sig })
		return len(cs.C) < n
	})
}

// updateCandidates applies change to the candidate record of sig with
// compare-and-swap, retrying on conflict; change returns false to write
// nothing. An unreadable record is reported and replaced: candidates
// are counts that the next successes rebuild.
func (l *Layer) updateCandidates(ctx context.Context, sig string, change func(*candidates) bool) error {
	key := l.log.Key(bucketName(sig))
	for attempt := range l.cfg.MaxRetries {
		if err := storage.WaitRetry(ctx, attempt); err != nil {
			return err
		}
		cs, ver, err := l.readCandidates(ctx, key)
		if err != nil {
			return err
		}
		cs.Clock++
		if !change(&cs) {
			return nil
		}
		_, err = l.log.Store.Put(ctx, key, encode(cs), ver)
		if !errors.Is(err, storage.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("candidates: gave up after %d attempts: %w", l.cfg.MaxRetries, storage.ErrConflict)
}

// readCandidates reads the candidate record and its version.
func (l *Layer) readCandidates(ctx context.Context, key string) (candidates, int64, error) {
	it, err := l.log.Store.Get(ctx, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return candidates{Version: FormatVersion}, storage.NoVersion, nil
	case err != nil:
		return candidates{}, 0, fmt.Errorf("read candidates: %w", err)
	}
	var cs candidates
	if err := decode(it.Value, &cs, &cs.Version); err != nil {
		if errors.Is(err, ErrVersion) {
			return candidates{}, 0, err
		}
		l.log.Logger.WarnContext(ctx, "semanticmemory: unreadable skill candidates; starting afresh", "layer", l.cfg.ID, "key", key, "error", err)
		return candidates{Version: FormatVersion}, it.Version, nil
	}
	return cs, it.Version, nil
}

// clearCandidates deletes the scope's candidate records.
func (l *Layer) clearCandidates(ctx context.Context) error {
	for b := range candidateBuckets {
		err := l.log.Store.Delete(ctx, l.log.Key(candidatesName+strconv.Itoa(b)), storage.AnyVersion)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return err
		}
	}
	return nil
}

// Skills returns the live skills, by fact ID, after reading what other
// processes wrote, each with the successes counted since its fact's last
// version (see [Layer.Store]) added to its Skill: its count, evidence
// and triggers. Like [Layer.Facts] it reads the whole log, and the
// scope's candidate records; no recall calls it.
func (l *Layer) Skills(ctx context.Context) ([]Fact, error) {
	if err := l.unbound("Skills"); err != nil {
		return nil, err
	}
	facts, err := l.Facts(ctx)
	if err != nil {
		return nil, err
	}
	facts = slices.DeleteFunc(facts, func(f Fact) bool { return f.Skill == nil })
	pending, err := l.pendingSuccesses(ctx)
	if err != nil {
		return nil, err
	}
	for i := range facts {
		if t, ok := pending[facts[i].Skill.Signature]; ok {
			sk := *facts[i].Skill
			l.addTally(&sk, t)
			facts[i].Skill = &sk
		}
	}
	return facts, nil
}

// pendingSuccesses returns, by signature, the successes of skills
// counted in the scope's candidate records and not yet in their facts.
func (l *Layer) pendingSuccesses(ctx context.Context) (map[string]tally, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]tally{}
	for b := range candidateBuckets {
		cs, _, err := l.readCandidates(ctx, l.log.Key(candidatesName+strconv.Itoa(b)))
		if err != nil {
			return nil, err
		}
		for _, c := range cs.C {
			if c.Known {
				out[c.Sig] = tally{n: c.N, evidence: c.Evidence, triggers: c.Triggers}
			}
		}
	}
	return out, nil
}
