package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/inspect"
	"github.com/memlayer/memlayer/internal/writepath"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/redact"
	"github.com/memlayer/memlayer/route"
	"github.com/memlayer/memlayer/semanticmemory"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/thread"
)

// The facts a Memory reads and writes are semantic memory's.
type (
	// Fact is one version of a fact (see semanticmemory.Fact).
	Fact = semanticmemory.Fact
	// Memo is a fact to add: its text, kind and importance (see
	// semanticmemory.Memo). Its Source is set by the Memory.
	Memo = semanticmemory.Memo
	// Change is what [Memory.Update] changes: the fields set (see
	// semanticmemory.Change).
	Change = semanticmemory.Change
	// Hit is a fact [Memory.Search] found, with its score in [0, 1].
	Hit = semanticmemory.Hit
	// Erased is what [Memory.EraseUser] removed (see inspect.Erased).
	Erased = inspect.Erased
)

// Errors of the package. Check them with errors.Is; the errors of
// semanticmemory (ErrNotFound, ErrInvalidFact) come wrapped as they are.
var (
	// ErrInvalidConfig means New was given no store or a Config it cannot
	// serve.
	ErrInvalidConfig = errors.New("service: invalid config")
	// ErrInvalidUser means a user ID is empty or too long
	// (thread.MaxIDLen).
	ErrInvalidUser = errors.New("service: invalid user")
	// ErrRefused means the router (Config.Router) refused a write, or
	// sent it to a layer other than semantic memory. Nothing was stored.
	ErrRefused = errors.New("service: write refused")
	// ErrNoExtractor means AddMessages was called on a Memory without
	// Config.Extractors or Config.Facts.Consolidate: nothing turns
	// messages into facts.
	ErrNoExtractor = errors.New("service: no extractor configured")
)

// Defaults of the calls' sizes.
const (
	// DefaultK is how many facts Search returns at most when Query.K is
	// zero.
	DefaultK = 10
	// DefaultLimit is how many facts List returns at most when
	// Page.Limit is zero.
	DefaultLimit = 50
	// MaxLimit is the most facts one List returns.
	MaxLimit = 1000
)

// DefaultAuditThread names the thread whose audit records a user's
// writes through a Memory: "memory-service:" and the user.
func DefaultAuditThread(user string) string { return "memory-service:" + user }

// Config configures a [Memory]. The zero Config is valid: the facts of
// layer "semantic_memory" (semanticmemory's defaults), redaction on, route.Default,
// no audit, no extractor.
type Config struct {
	// Facts configures the semantic memory layer the Memory serves: give
	// the agent's, so both read and write the same facts and rank and pin
	// them alike. Its ID is the Memory's namespace. Its Scope must be
	// zero or layer.ScopeResource: a Memory serves users.
	// Its Consolidate, when set, consolidates the conversations
	// AddMessages gets, gated by Router when Consolidate has no Gate and
	// Router gates (route.Admitter).
	Facts semanticmemory.Config
	// Redaction masks the text of the facts written, as an
	// agentloop.Agent masks its memorize tool's arguments (see
	// redact.Policy): on by default.
	Redaction redact.Policy
	// Router decides where a write goes, or refuses it, as the agent's
	// Config.Router does. Nil is route.Default.
	Router route.Router
	// Audit, when set, records each write as one turn of the user's audit
	// thread (see AuditThread).
	Audit *audit.Log
	// AuditThread names the thread of a user's audit. Nil is
	// DefaultAuditThread.
	AuditThread func(user string) string
	// Extractors are the layers AddMessages hands a conversation to: each
	// a layer.Storer and a layer.Proposer, as in an agent's stack (their
	// templates; they are bound to the user for each call).
	Extractors []layer.Layer
	// Logger receives what a call cannot return: a failed audit commit, a
	// proposal that was not kept. Nil is slog.Default().
	Logger *slog.Logger
}

// Memory is the users' memory in one namespace, for code: see the
// package documentation. It is safe for concurrent use.
type Memory struct {
	store storage.Store
	cfg   Config
	facts *semanticmemory.Layer // the template, bound per call
	ns    string
	rd    *writepath.Redactor // nil: redaction disabled
}

// New returns the memory on store, which must not be nil. It does no
// I/O.
func New(store storage.Store, cfg Config) (*Memory, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: no store", ErrInvalidConfig)
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Router = cmp.Or(cfg.Router, route.Default)
	cfg.Facts.Consolidate = gatedBy(cfg.Facts.Consolidate, cfg.Router)
	tmpl, err := semanticmemory.New(cfg.Facts)
	if err != nil {
		return nil, fmt.Errorf("%w: Facts: %w", ErrInvalidConfig, err)
	}
	// The stack each AddMessages binds: its specs and IDs are checked
	// now (NewStack does no I/O).
	if _, err := layer.NewStack(layer.StackConfig{Layers: append([]layer.Layer{tmpl}, cfg.Extractors...)}); err != nil {
		return nil, fmt.Errorf("%w: extractors: %w", ErrInvalidConfig, err)
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if cfg.AuditThread == nil {
		cfg.AuditThread = DefaultAuditThread
	}
	cfg.Extractors = slices.Clone(cfg.Extractors)
	rd := writepath.NewRedactor(cfg.Redaction)
	cfg.Logger = rd.Logger(cfg.Logger)
	return &Memory{store: store, cfg: cfg, facts: tmpl, ns: tmpl.Spec().ID, rd: rd}, nil
}

// gatedBy returns c gated by router when c has no Gate of its own and
// router gates (route.Admitter), so that consolidation admits what the
// Memory's other writes would.
func gatedBy(c *semanticmemory.Consolidator, router route.Router) *semanticmemory.Consolidator {
	g, ok := router.(route.Admitter)
	if c == nil || c.Gate != nil || !ok {
		return c
	}
	gc := *c
	gc.Gate = g
	return &gc
}

// check reports what New cannot serve in cfg, as an error wrapping
// ErrInvalidConfig.
func (cfg *Config) check() error {
	if s := cfg.Facts.Scope; s != "" && s != layer.ScopeResource {
		return fmt.Errorf("%w: Facts.Scope %q: a Memory serves users (the resource scope)", ErrInvalidConfig, s)
	}
	if i := slices.Index(cfg.Extractors, nil); i >= 0 {
		return fmt.Errorf("%w: extractor %d is nil", ErrInvalidConfig, i)
	}
	return nil
}

// Namespace returns the namespace the Memory serves: its semantic
// layer's ID.
func (m *Memory) Namespace() string { return m.ns }

// session is the Memory bound to one user for one call: a stack of the
// semantic layer (and the extractors) initialised as an agent's run
// would be, and the call's audit.
type session struct {
	m     *Memory
	user  string
	stack *layer.Stack
	facts *semanticmemory.Layer
	audit writepath.Auditor
	n     writepath.Counts
}

// checkUser refuses an empty or too long user ID.
func checkUser(user string) error {
	if err := thread.CheckResourceID(user); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidUser, err)
	}
	return nil
}

// open binds the layers to user. The caller closes the session.
func (m *Memory) open(ctx context.Context, user string, extractors bool) (*session, error) {
	if err := checkUser(user); err != nil {
		return nil, err
	}
	layers := []layer.Layer{m.facts}
	if extractors {
		layers = append(layers, m.cfg.Extractors...)
	}
	st, err := layer.NewStack(layer.StackConfig{Layers: layers, Env: layer.Env{
		ResourceID: user, Store: m.store, Logger: m.cfg.Logger, Redact: m.rd.ForLayers()}})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := st.Init(ctx); err != nil {
		return nil, err
	}
	facts, ok := layer.Find[*semanticmemory.Layer](st, m.ns)
	if !ok {
		_ = st.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("service: the semantic layer %q is disabled for user %s", m.ns, storage.Quote(user))
	}
	return &session{m: m, user: user, stack: st, facts: facts}, nil
}

// close closes the session's layers and commits its audit.
func (s *session) close(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if err := s.stack.Close(ctx); err != nil {
		s.m.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "service: closing the layers failed", slog.String("resource", s.user), slog.Any("error", err))
	}
	writepath.RecordRedactions(&s.audit, 0, 0, nil, s.n.Counts())
	if err := s.m.commit(ctx, s.user, s.audit.Entries()); err != nil {
		s.m.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "service: the audit commit failed", slog.String("resource", s.user), slog.Any("error", err))
	}
}

// commit records entries as one turn of user's audit thread, owned by
// user.
func (m *Memory) commit(ctx context.Context, user string, entries []audit.Entry) error {
	if m.cfg.Audit == nil || len(entries) == 0 {
		return nil
	}
	id := m.cfg.AuditThread(user)
	if err := thread.CheckThreadID(id); err != nil {
		return err
	}
	if err := thread.ClaimOwner(ctx, m.cfg.Audit.Store(), id, user); err != nil {
		return err
	}
	_, err := m.cfg.Audit.Commit(ctx, id, m.rd.Audit(entries))
	return err
}

// keeper is the loop's write path for the session's writes.
func (s *session) keeper() *writepath.Keeper {
	return &writepath.Keeper{Stack: s.stack, Router: s.m.cfg.Router, Logger: s.m.cfg.Logger, Audit: &s.audit, Recovered: s.recovered}
}

// recovered logs a panic recovered in the router or an extractor, and
// returns it as an error.
func (s *session) recovered(ctx context.Context, where string, p any) error {
	err := fmt.Errorf("%w in %s: %v", writepath.ErrPanic, where, p)
	s.m.cfg.Logger.LogAttrs(ctx, slog.LevelError, "service: recovered a panic", slog.String("resource", s.user),
		slog.Any("error", err), slog.String("stack", string(debug.Stack())))
	return err
}

// mask masks text as the loop masks the memorize tool's arguments.
func (s *session) mask(text string) string {
	if !s.m.rd.MasksTools(s.facts) {
		return text
	}
	return s.m.rd.Text(text, nil, &s.n)
}

// Add adds a fact to user's memory as the agent's memorize tool would,
// written by code: masked, routed (a refusal wraps [ErrRefused]), kept by
// semantic memory, audited. A fact that restates a live fact of its kind
// supersedes it (the Fact returned is its next version, same ID); one
// restated word for word writes nothing and returns the fact. An empty
// kind is "fact", a zero importance semanticmemory.DefaultImportance (as
// for the writes a layer proposes in the loop). Bad input is an
// error wrapping semanticmemory.ErrInvalidFact, and stores no fact.
func (m *Memory) Add(ctx context.Context, user string, memo Memo) (Fact, error) {
	s, err := m.open(ctx, user, false)
	if err != nil {
		return Fact{}, fmt.Errorf("service: add: %w", err)
	}
	defer s.close(ctx)
	f, err := s.add(ctx, memo)
	if err != nil {
		return Fact{}, fmt.Errorf("service: add: %w", err)
	}
	return f, nil
}

// add keeps memo through the write path and returns the fact kept.
func (s *session) add(ctx context.Context, memo Memo) (Fact, error) {
	w := s.write(memo)
	if _, err := s.keeper().Keep(ctx, w, s.facts); err != nil {
		if e := s.audit.Entries(); len(e) > 0 && e[len(e)-1].Op == audit.OpRoute && e[len(e)-1].Refused {
			return Fact{}, fmt.Errorf("%w: %w", ErrRefused, err)
		}
		return Fact{}, err
	}
	return s.kept(ctx, w)
}

// write returns memo as the write the loop's memorize tool makes: its
// text masked, its kind lowercased ("fact" when empty), a zero
// importance the default.
func (s *session) write(memo Memo) layer.Write {
	by := cmp.Or(memo.Source.By, "code")
	return layer.Write{Kind: cmp.Or(strings.ToLower(memo.Kind), semanticmemory.DefaultKind), Text: s.mask(memo.Text),
		Importance: cmp.Or(memo.Importance, semanticmemory.DefaultImportance), Source: "by=" + by, Layer: s.m.ns, By: by}
}

// kept returns the fact write w kept: the one the session's audit names,
// or, for a restatement word for word (kept unchanged, not audited), the
// live fact of w's kind with w's text.
func (s *session) kept(ctx context.Context, w layer.Write) (Fact, error) {
	e := s.audit.Entries()
	for i := len(e) - 1; i >= 0; i-- {
		if e[i].Op == audit.OpWrite && e[i].Key != "" {
			return s.facts.Get(ctx, e[i].Key)
		}
	}
	text := strings.Join(strings.Fields(w.Text), " ")
	hits, err := s.facts.SearchKind(ctx, text, w.Kind, 0)
	if err != nil {
		return Fact{}, err
	}
	for _, h := range hits {
		if h.Text == text {
			return h.Fact, nil
		}
	}
	return Fact{}, fmt.Errorf("the fact kept is gone: %w", semanticmemory.ErrNotFound)
}
