package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/route"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
)

// ErrInvalidQuery means a Search or List was asked for something it
// cannot serve: an empty query, a negative count, a bad kind.
var ErrInvalidQuery = errors.New("service: invalid query")

// Query is what [Memory.Search] looks for.
type Query struct {
	// Text is the query, as a user's message would be. Required.
	Text string
	// Kind, when set, keeps the facts of that kind only: the index's
	// search is filtered by it, so the K best of the kind are found.
	Kind string
	// K is the most facts returned. Zero means DefaultK; above
	// storage.MaxK means storage.MaxK.
	K int
}

// Search returns the live facts of user best matching q, best first,
// ranked as the agent's recall ranks them (see semanticmemory: the
// store's search index, BM25 and, with Config.Facts.Embedder, dense
// retrieval, fused by reciprocal rank). Pinned facts get no place of
// their own here: a fact is found by what it says.
func (m *Memory) Search(ctx context.Context, user string, q Query) ([]Hit, error) {
	switch {
	case strings.TrimSpace(q.Text) == "":
		return nil, fmt.Errorf("%w: empty query text (List lists facts without one)", ErrInvalidQuery)
	case q.K < 0:
		return nil, fmt.Errorf("%w: K %d < 0", ErrInvalidQuery, q.K)
	}
	k := min(q.K, storage.MaxK)
	if k == 0 {
		k = DefaultK
	}
	s, err := m.open(ctx, user, false)
	if err != nil {
		return nil, fmt.Errorf("service: search: %w", err)
	}
	defer s.close(ctx)
	hits, err := s.facts.SearchKind(ctx, q.Text, q.Kind, k)
	if err != nil {
		if errors.Is(err, semanticmemory.ErrInvalidFact) {
			err = fmt.Errorf("%w: %w", ErrInvalidQuery, err)
		}
		return nil, fmt.Errorf("service: search: %w", err)
	}
	return hits, nil
}

// Get returns user's live fact id (its last version). An unknown or
// deleted ID is an error wrapping semanticmemory.ErrNotFound.
func (m *Memory) Get(ctx context.Context, user, id string) (Fact, error) {
	s, err := m.open(ctx, user, false)
	if err != nil {
		return Fact{}, fmt.Errorf("service: get: %w", err)
	}
	defer s.close(ctx)
	f, err := s.facts.Get(ctx, id)
	if err != nil {
		return Fact{}, fmt.Errorf("service: get: %w", err)
	}
	return f, nil
}

// Page selects the facts [Memory.List] returns.
type Page struct {
	// Kind, when set, keeps the facts of that kind only.
	Kind string
	// After is the cursor: the facts after this ID (Listed.Next of the
	// previous page). Empty starts at the first.
	After string
	// Limit is the most facts returned. Zero means DefaultLimit; above
	// MaxLimit means MaxLimit.
	Limit int
}

// Listed is one page of [Memory.List].
type Listed struct {
	// Facts are the page's live facts, by ID.
	Facts []Fact
	// Next is the cursor of the next page (its Page.After); empty on the
	// last page.
	Next string
}

// List returns a page of user's live facts, ordered by ID (byte order).
// It reads the user's whole fact log (semanticmemory's audit view).
func (m *Memory) List(ctx context.Context, user string, p Page) (Listed, error) {
	limit, err := p.limit()
	if err != nil {
		return Listed{}, fmt.Errorf("service: list: %w", err)
	}
	s, err := m.open(ctx, user, false)
	if err != nil {
		return Listed{}, fmt.Errorf("service: list: %w", err)
	}
	defer s.close(ctx)
	all, err := s.facts.Facts(ctx)
	if err != nil {
		return Listed{}, fmt.Errorf("service: list: %w", err)
	}
	kind := strings.ToLower(p.Kind)
	all = slices.DeleteFunc(all, func(f Fact) bool { return p.After != "" && f.ID <= p.After || kind != "" && f.Kind != kind })
	if len(all) <= limit {
		return Listed{Facts: all}, nil
	}
	return Listed{Facts: all[:limit:limit], Next: all[limit-1].ID}, nil
}

// limit returns how many facts the page holds at most.
func (p Page) limit() (int, error) {
	switch {
	case p.Limit < 0:
		return 0, fmt.Errorf("%w: Limit %d < 0", ErrInvalidQuery, p.Limit)
	case p.Limit == 0:
		return DefaultLimit, nil
	}
	return min(p.Limit, MaxLimit), nil
}

// Update changes user's live fact id (see semanticmemory.Change: the
// fields set change, the others are kept) and returns its new version,
// which keeps the ID; the old one stays in [Memory.History]. The change
// is masked, routed by its kind (a refusal wraps [ErrRefused]) and
// audited as an added fact is. A change that leaves the fact as it is
// writes nothing and returns the fact. An unknown or deleted ID is an
// error wrapping semanticmemory.ErrNotFound; bad input one wrapping
// semanticmemory.ErrInvalidFact; both store nothing.
func (m *Memory) Update(ctx context.Context, user, id string, c Change) (Fact, error) {
	s, err := m.open(ctx, user, false)
	if err != nil {
		return Fact{}, fmt.Errorf("service: update: %w", err)
	}
	defer s.close(ctx)
	f, err := s.update(ctx, id, c)
	if err != nil {
		return Fact{}, fmt.Errorf("service: update: %w", err)
	}
	return f, nil
}

func (s *session) update(ctx context.Context, id string, c Change) (Fact, error) {
	cur, err := s.facts.Get(ctx, id)
	if err != nil {
		return Fact{}, err
	}
	c.Source.By = cmp.Or(c.Source.By, "code")
	c.Kind = strings.ToLower(c.Kind)
	if c.Text != "" {
		c.Text = s.mask(c.Text)
	}
	w := layer.Write{Kind: cmp.Or(c.Kind, cur.Kind), Text: cmp.Or(c.Text, cur.Text), Importance: cur.Importance,
		Source: "by=" + c.Source.By, Layer: s.m.ns, By: c.Source.By}
	if c.Importance != nil {
		w.Importance = *c.Importance
	}
	if err := s.gate(ctx, w); err != nil {
		return Fact{}, err
	}
	f, err := s.facts.Update(ctx, id, c)
	if err != nil {
		return Fact{}, err
	}
	if f.Version > cur.Version {
		src := f.Source.String()
		s.audit.Add(audit.Entry{Op: audit.OpWrite, Layer: s.m.ns, Kind: f.Kind, Key: f.ID, Version: f.Version, Text: f.Text, Importance: f.Importance, Source: src},
			audit.Entry{Op: audit.OpSupersede, Layer: s.m.ns, Kind: f.Kind, Key: f.ID, Version: f.Version, Source: src})
	}
	return f, nil
}

// gate asks the router where w goes, as the loop's write path does, and
// audits the route: it must be this Memory's semantic layer.
func (s *session) gate(ctx context.Context, w layer.Write) (err error) {
	rt := s.route(ctx, w)
	e := audit.Entry{Op: audit.OpRoute, Kind: w.Kind, Text: w.Text, Importance: w.Importance, Source: w.Source, Reason: rt.Reason}
	switch rt.Layer {
	case s.m.ns, s.facts.Keeps():
		e.Layer = s.m.ns
		s.audit.Add(e)
		return nil
	case "":
		e.Reason = cmp.Or(rt.Reason, "refused by the router")
	default:
		e.Reason = fmt.Sprintf("the router chose %q, not the semantic layer %q: %s", rt.Layer, s.m.ns, rt.Reason)
	}
	e.Refused = true
	s.audit.Add(e)
	return fmt.Errorf("%w: %s", ErrRefused, e.Reason)
}

// route asks the router where w goes; a panic refuses it.
func (s *session) route(ctx context.Context, w layer.Write) (rt route.Route) {
	defer func() {
		if p := recover(); p != nil {
			rt = route.Route{Reason: "the router failed: " + s.recovered(ctx, "the router", p).Error()}
		}
	}()
	return s.m.cfg.Router.Route(ctx, w)
}

// Delete deletes user's live fact id: it is no longer recalled or found,
// and [Memory.History] keeps its versions, the last one marked
// Forgotten, as the agent's forget tool does. An unknown or deleted ID is
// an error wrapping semanticmemory.ErrNotFound.
func (m *Memory) Delete(ctx context.Context, user, id string) error {
	s, err := m.open(ctx, user, false)
	if err != nil {
		return fmt.Errorf("service: delete: %w", err)
	}
	defer s.close(ctx)
	if err := s.facts.Forget(ctx, id); err != nil {
		return fmt.Errorf("service: delete: %w", err)
	}
	s.audit.Add(audit.Entry{Op: audit.OpForget, Layer: m.ns, Key: id, Source: "by=code"})
	return nil
}

// History returns every version of user's fact id, oldest first, the
// superseded and the deleted (Forgotten) included. An ID that never was
// is an error wrapping semanticmemory.ErrNotFound. It reads the user's
// whole fact log.
func (m *Memory) History(ctx context.Context, user, id string) ([]Fact, error) {
	s, err := m.open(ctx, user, false)
	if err != nil {
		return nil, fmt.Errorf("service: history: %w", err)
	}
	defer s.close(ctx)
	vs, err := s.facts.Versions(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("service: history: %w", err)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("service: history: %w: %s", semanticmemory.ErrNotFound, storage.Quote(id))
	}
	return vs, nil
}

// EraseUser erases everything stored for user, by every layer and in
// every namespace: threads, layer records, search collections and
// audits (inspect.Inspector's EraseResource on the Memory's store; give
// Config.Audit the same store, or erase its user there too). Other users
// keep theirs, whatever their IDs. It reports what it removed; an error
// leaves part erased: run it again.
func (m *Memory) EraseUser(ctx context.Context, user string) (*Erased, error) {
	if err := checkUser(user); err != nil {
		return nil, fmt.Errorf("service: erase: %w", err)
	}
	e, err := inspect.Inspector{Store: m.store}.EraseResource(ctx, user)
	if err != nil {
		return e, fmt.Errorf("service: erase: %w", err)
	}
	return e, nil
}
