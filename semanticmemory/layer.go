package semanticmemory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/embeddings"

	"github.com/memlayer/memlayer/internal/seqlog"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/storage"
)

// DefaultID is the layer ID used when Config.ID is empty: the prefix of
// its tools' names ("semantic_memory_memorize") and its block's tag
// (<semantic_memory>).
const DefaultID = "semantic_memory"

// DefaultStorageID is the Spec.StorageID of the layer whose ID is
// DefaultID: its ID before the naming scheme, under which its data stays
// stored (see layer.Spec.StorageID).
const DefaultStorageID = "semantic"

// DefaultTopK is how many facts Recall puts in the prompt at most when
// Config.TopK is 0.
const DefaultTopK = 8

// DefaultMaxRetries is how many compare-and-swap attempts one write makes
// when Config.MaxRetries is 0. A write publishes its record and the
// capacity ledger under one compare-and-swap of the head, so writers of
// one user at once retry more often than one a record; 16 attempts (8
// before the ledger) keep three concurrent writers of one user from
// giving up under the race detector.
const DefaultMaxRetries = 16

// Defaults of the pinned facts: the facts Recall shows whatever the
// query (see Config.PinKinds).
const (
	// DefaultPinImportance is the importance from which a fact is pinned
	// when Config.PinImportance is 0.
	DefaultPinImportance = 0.8
	// DefaultMaxPinned is how many pinned facts Recall shows at most when
	// Config.MaxPinned is 0.
	DefaultMaxPinned = 4
	// DefaultFallbackFacts is how many of the newest fact versions a run
	// reads into its own index on a store without search, when
	// Config.FallbackFacts is 0.
	DefaultFallbackFacts = 4096
)

// DefaultPinKinds are the kinds of fact that describe the user, pinned
// when Config.PinKinds is nil.
var DefaultPinKinds = []string{"profile", "preference"}

// Config configures a [Layer]. The zero Config is valid: layer "semantic_memory"
// in slot layer.SlotSemanticRecall, resource scope, unbounded budget,
// sparse retrieval only, the 8 best facts per Recall.
type Config struct {
	// Spec is what every layer declares (see layer.Spec):
	//   - ID: ID is the layer ID. Empty means DefaultID.
	//   - StorageID: StorageID names the layer's stored data (see layer.Spec.StorageID). Empty means DefaultStorageID when ID is DefaultID, the ID otherwise.
	//   - Slot: Slot orders the layer in the prompt. Zero means layer.SlotSemanticRecall.
	//   - Scope: Scope selects whose facts are kept. Empty means resource: every thread of a resource shares its facts.
	//   - Budget: Budget is the layer's token budget.
	//   - DisableOnInitError: DisableOnInitError disables the layer for the run when loading its facts fails, instead of aborting the run.
	//   - Timeout: Timeout bounds each hook call (see layer.Spec.Timeout).
	layer.Spec

	// TopK caps the facts one Recall renders, and the candidates it
	// offers scored assembly (so assembly never shows more). Zero means
	// DefaultTopK.
	TopK int
	// Embedder, when set, adds dense retrieval: each fact version is
	// embedded once, when it is written, and the embedding stored with
	// it; each Recall embeds its query. Nil means sparse only.
	Embedder embeddings.Embedder
	// VectorStore, when set, mirrors every fact version into a
	// langchaingo vector store and makes its search the dense ranker
	// (instead of the Embedder's cosine), for corpora beyond one
	// machine. See [VectorStore].
	VectorStore *VectorStore
	// NoSparse leaves BM25 out of retrieval: the dense ranker alone (to
	// measure it, or for texts BM25 serves badly). It needs an Embedder
	// or a VectorStore.
	NoSparse bool
	// Now returns the current time, for Created, Updated and quarantine
	// keys; it is clamped into years 1-9999. Nil means time.Now. It must
	// be safe for concurrent use: runs of several users call it at once.
	Now func() time.Time
	// MaxRetries bounds the compare-and-swap attempts of one write. Zero
	// means DefaultMaxRetries.
	MaxRetries int
	// PinKinds are the kinds of fact that describe the user: Recall shows
	// them (the newest first, at most MaxPinned) even when the query
	// shares no word with them. Nil means DefaultPinKinds; an empty
	// non-nil slice pins no kind. A fact is pinned as it is indexed, so a
	// change applies to facts written after it (or to all of them after
	// the index is rebuilt).
	PinKinds []string
	// PinImportance pins the facts of at least this importance too. Zero
	// means DefaultPinImportance; above 1 pins none by importance.
	PinImportance float64
	// MaxPinned caps the pinned facts one Recall shows, before the facts
	// that match the query. Zero means DefaultMaxPinned; negative shows
	// none.
	MaxPinned int
	// FallbackFacts is how many of the newest fact versions a run reads
	// into an index of its own when the store has no search
	// (storage.Searcher): older facts are not recalled there. Zero means
	// DefaultFallbackFacts.
	FallbackFacts int
	// Capacity bounds the live facts by count and by tokens, and says
	// which to evict first (see [Capacity]). The zero value means the
	// defaults.
	Capacity Capacity
	// NoSkills turns skill extraction off: Store learns nothing. Skills
	// already stored are still recalled, as facts. See [Layer.Store].
	NoSkills bool
	// Skills tunes skill extraction; the zero value is the defaults.
	Skills SkillConfig
	// Consolidate, when set, extracts facts from each turn with a model
	// and reconciles them with the stored facts, off the step (see
	// [Consolidator]). Nil extracts nothing.
	Consolidate *Consolidator
}

// Layer is the semantic memory: distilled facts of a resource (or thread,
// or everyone), written by the model through the memorize and forget
// tools and by code, and recalled by hybrid retrieval for the user's
// latest message.
//
// A Layer from [New] is a template, and [Layer.Init] returns a new Layer
// bound to a run's store and scope. A template belongs to no run: its
// methods that read or write facts (Remember, Update, Forget, Get, Facts,
// Versions, Search, SearchKind, Snapshot, Restore, Clear, Keep and the tools' calls) fail with
// an error wrapping [layer.ErrTemplate], and its Recall recalls nothing.
// Methods are safe for concurrent use.
type Layer struct {
	cfg  Config
	spec layer.Spec
	tag  string
	// log is the stored log, and the logger, set when the layer is made
	// and never changed; its I/O runs with mu held.
	log seqlog.Log

	mu     sync.Mutex
	thread string // the run's thread, for Source
	step   int    // the step of the last Recall, for Source
	head   head
	hver   int64
	// ix is the index recall queries: the store's (storage.Searcher) or,
	// when the store has none, a private storage.MemoryIndex filled from
	// the newest records (private).
	ix    storage.Searcher
	col   string // the facts' collection in ix
	evcol string // the eviction documents' collection in ix
	// uses notes the facts recalled since the last flush (see flushUses).
	uses    map[string]int64
	private bool
	mark    marker // the index's marker as this layer last wrote or read it
	// template is set on the Layer New returns, never on a bound one.
	template bool
	// seq is the tool sequence of the turn the run is in (see Store).
	seq turnSeq
	// cons is the run's model-based consolidation; nil without one.
	cons *consolidator
}

// New returns a semantic memory layer. It does no I/O; see [Layer.Init].
func New(cfg Config) (*Layer, error) {
	cfg.ID = cmp.Or(cfg.ID, DefaultID)
	if cfg.ID == DefaultID {
		cfg.StorageID = cmp.Or(cfg.StorageID, DefaultStorageID)
	}
	cfg.Slot = cmp.Or(cfg.Slot, layer.SlotSemanticRecall)
	cfg.Scope = cmp.Or(cfg.Scope, layer.ScopeResource)
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.PinKinds == nil {
		cfg.PinKinds = DefaultPinKinds
	}
	cfg.PinKinds = slices.Clone(cfg.PinKinds)
	for i, k := range cfg.PinKinds {
		cfg.PinKinds[i] = strings.ToLower(k)
	}
	cfg.PinImportance = cmp.Or(cfg.PinImportance, DefaultPinImportance)
	cfg.MaxPinned = cmp.Or(cfg.MaxPinned, DefaultMaxPinned)
	cfg.FallbackFacts = cmp.Or(cfg.FallbackFacts, DefaultFallbackFacts)
	cfg.TopK = cmp.Or(cfg.TopK, DefaultTopK)
	cfg.MaxRetries = cmp.Or(cfg.MaxRetries, DefaultMaxRetries)
	capacity, err := cfg.Capacity.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.Capacity = capacity
	cfg.Skills.defaults()
	if cfg.Consolidate != nil {
		c, err := cfg.Consolidate.withDefaults()
		if err != nil {
			return nil, err
		}
		cfg.Consolidate = &c
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	spec := cfg.Spec
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	l := &Layer{cfg: cfg, spec: spec, tag: fence.Tag(cfg.ID)}
	t := l.bind(storage.NewMemoryStore(), "template", layer.Env{})
	t.template = true
	return t, nil
}

// unbound returns the error of method called on a template, or nil on a
// bound layer.
func (l *Layer) unbound(method string) error {
	if l.template {
		return fmt.Errorf("semanticmemory: %s on the template of layer %q: call Init first: %w", method, l.cfg.ID, layer.ErrTemplate)
	}
	return nil
}

// check reports the first field of cfg out of its range, as an error
// wrapping ErrInvalidConfig.
func (cfg *Config) check() error {
	switch {
	case cfg.TopK < 0:
		return fmt.Errorf("%w: TopK %d < 0", ErrInvalidConfig, cfg.TopK)
	case cfg.MaxRetries < 0:
		return fmt.Errorf("%w: MaxRetries %d < 0", ErrInvalidConfig, cfg.MaxRetries)
	case cfg.NoSparse && cfg.Embedder == nil && cfg.VectorStore == nil:
		return fmt.Errorf("%w: NoSparse without an Embedder or a VectorStore leaves no ranker", ErrInvalidConfig)
	case cfg.VectorStore != nil && cfg.VectorStore.Store == nil:
		return fmt.Errorf("%w: VectorStore has no Store", ErrInvalidConfig)
	case !(cfg.PinImportance >= 0): // NaN too
		return fmt.Errorf("%w: PinImportance %v < 0", ErrInvalidConfig, cfg.PinImportance)
	case cfg.FallbackFacts < 0:
		return fmt.Errorf("%w: FallbackFacts %d < 0", ErrInvalidConfig, cfg.FallbackFacts)
	}
	return cfg.Skills.check()
}

// Spec returns the layer's spec.
func (l *Layer) Spec() layer.Spec { return l.spec }

// Tag returns the fence tag of the layer's block: its ID with '-' as '_'.
func (l *Layer) Tag() string { return l.tag }

func (l *Layer) now() time.Time {
	t := l.cfg.Now().UTC()
	lo, hi := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
	if t.Before(lo) {
		return lo
	}
	if t.After(hi) {
		return hi
	}
	return t
}

// Init returns the layer bound to env's run: its facts are those stored
// under storage.LayerPrefix(id, env.ScopeKey(scope)). It reads the head
// and the index's marker, and indexes the records the index lacks (none
// in a steady state; every record, once, on a log written before the
// index): its cost does not grow with the number of facts. On a store
// without search it reads the newest records holding
// Config.FallbackFacts fact versions into an index of its own. The
// execution scope, or an Env without a store, keeps
// facts in a private in-memory store for the run. A stored record from a
// newer version of this package ([ErrVersion]) fails Init and is left
// untouched; an unreadable one is quarantined (storage.Quarantine),
// reported through env.Logger, and its facts are left out. The receiver
// is not modified.
func (l *Layer) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	store := env.Store
	if l.cfg.Scope == layer.ScopeExecution {
		store = nil // a private in-memory store
	}
	b := l.bind(store, env.ScopeKey(l.cfg.Scope), env)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.open(ctx); err != nil {
		return nil, fmt.Errorf("semanticmemory: init: %w", err)
	}
	return b, nil
}

// open reads the head and brings the index up to it.
func (l *Layer) open(ctx context.Context) error {
	if err := l.sync(ctx); err != nil {
		return err
	}
	if l.private {
		return nil // sync caught the private index up
	}
	return l.catchUp(ctx)
}

// bind returns an unloaded layer with l's configuration on store and
// scope.
func (l *Layer) bind(store storage.Store, scope string, env layer.Env) *Layer {
	if store == nil {
		store = storage.NewMemoryStore()
	}
	b := &Layer{cfg: l.cfg, spec: l.spec, tag: l.tag, thread: env.ThreadID, head: head{Version: FormatVersion}}
	b.log = seqlog.Log{Store: store, LayerID: l.cfg.StorageName(), Scope: scope, Pkg: "semanticmemory", ErrVersion: ErrVersion,
		MaxRetries: l.cfg.MaxRetries, Logger: cmp.Or(env.Logger, slog.Default()), Now: b.now}
	b.col = storage.IndexName(l.cfg.StorageName(), scope, "facts")
	b.evcol = storage.IndexName(l.cfg.StorageName(), scope, "evict")
	if x, ok := searcherOf(store); ok {
		b.ix = x
	} else {
		b.ix, b.private = &storage.MemoryIndex{}, true
	}
	b.cons = newConsolidator(l.cfg.Consolidate, b, env)
	return b
}

// OnSpawn returns the child's layer. A child of a resource- or
// global-scoped layer works on the same stored facts (what it memorizes
// the parent sees on its next Recall); a thread- or execution-scoped
// layer gives the child its own thread's facts, as Init would.
func (l *Layer) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	switch l.cfg.Scope {
	case layer.ScopeResource, layer.ScopeGlobal:
		b := l.bind(l.log.Store, l.log.Scope, child)
		b.mu.Lock()
		defer b.mu.Unlock()
		if err := b.open(ctx); err != nil {
			return nil, fmt.Errorf("semanticmemory: spawn: %w", err)
		}
		return b, nil
	}
	return l.Init(ctx, child)
}

// Remember stores a fact written by code (Source.By "code" when m's is
// empty) and returns the version written. A fact that restates a live
// fact of the same kind (see [SupersedeThreshold]) supersedes it: it is
// written as that fact's next version, keeping its ID and Created; the
// old version stays readable through [Layer.Versions]. Restating a fact
// word for word with the same importance writes nothing and returns the
// fact. Bad input is an error wrapping [ErrInvalidFact] and stores
// nothing.
func (l *Layer) Remember(ctx context.Context, m Memo) (Fact, error) {
	f, _, err := l.keep(ctx, m)
	return f, err
}

// keep is Remember, also returning the IDs of the facts the write
// evicted.
func (l *Layer) keep(ctx context.Context, m Memo) (Fact, []string, error) {
	if err := l.unbound("Remember"); err != nil {
		return Fact{}, nil, err
	}
	if m.Source.By == "" {
		m.Source.By = "code"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rememberEvicting(ctx, m)
}

func (l *Layer) remember(ctx context.Context, m Memo) (Fact, error) {
	f, _, err := l.rememberEvicting(ctx, m)
	return f, err
}

// rememberEvicting is remember, also returning the IDs of the facts the
// write evicted to make room (see [Capacity]).
func (l *Layer) rememberEvicting(ctx context.Context, m Memo) (Fact, []string, error) {
	m, err := m.normalize()
	if err != nil {
		return Fact{}, nil, err
	}
	m.Source.Thread = cmp.Or(m.Source.Thread, l.thread)
	emb, err := l.embed(ctx, m.Text)
	if err != nil {
		return Fact{}, nil, fmt.Errorf("semanticmemory: remember: %w", err)
	}
	if err := l.sync(ctx); err != nil {
		return Fact{}, nil, fmt.Errorf("semanticmemory: remember: %w", err)
	}
	written, same, err := l.writeVersion(ctx, m, emb)
	if err != nil {
		return Fact{}, nil, fmt.Errorf("semanticmemory: remember: %w", err)
	}
	if same != nil {
		return clone(*same), nil, nil
	}
	if err := l.catchUp(ctx); err != nil {
		return Fact{}, nil, fmt.Errorf("semanticmemory: remember: stored, but %w", err)
	}
	l.mirror(ctx, written)
	return clone(written[0]), evictedIDs(written[1:]), nil
}

// evictedIDs returns the IDs of the evicted versions among facts.
func evictedIDs(facts []Fact) []string {
	var ids []string
	for _, f := range facts {
		if f.Evicted {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

// writeVersion appends the fact m writes (see newVersion) and returns
// it, or returns as same the live fact that says the same already.
func (l *Layer) writeVersion(ctx context.Context, m Memo, emb []float32) (written []Fact, same *Fact, err error) {
	r, err := l.appendRecord(ctx, false, func(seq int64) (record, error) {
		f, old, err := l.newVersion(ctx, m, emb, seq)
		same = old
		if err != nil || old != nil {
			return record{}, err
		}
		return l.admit(ctx, []Fact{f})
	})
	return r.Facts, same, err
}

// newVersion returns the fact m writes in record seq: a new fact, or
// the next version of the live fact m restates. When that fact says the
// same already, it returns it as same, and nothing to write.
func (l *Layer) newVersion(ctx context.Context, m Memo, emb []float32, seq int64) (f Fact, same *Fact, err error) {
	now := l.now()
	id, err := l.newID(ctx, seq)
	if err != nil {
		return Fact{}, nil, err
	}
	f = Fact{ID: id, Text: m.Text, Kind: m.Kind, Importance: m.Importance, Source: m.Source, Created: now, Updated: now, Version: 1, Embedding: emb}
	old, ok, err := l.restated(ctx, m.Kind, m.Text)
	switch {
	case err != nil:
		return Fact{}, nil, err
	case ok && old.Text == m.Text && old.Importance == m.Importance:
		return Fact{}, &old, nil
	case ok:
		f.ID, f.Created, f.Version = old.ID, old.Created, old.Version+1
	}
	if err := f.validate(); err != nil {
		return Fact{}, nil, fmt.Errorf("%w: %w", ErrInvalidFact, err)
	}
	return f, nil, nil
}

// embed returns the embedding of a fact's text, or nil without an
// Embedder.
func (l *Layer) embed(ctx context.Context, text string) ([]float32, error) {
	if l.cfg.Embedder == nil {
		return nil, nil
	}
	vs, err := l.cfg.Embedder.EmbedDocuments(ctx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("embedder returned %d vectors for 1 text", len(vs))
	}
	return vs[0], nil
}

// newID returns the ID of a fact first written in record seq: "f<seq>",
// or with a suffix in the rare case a restored fact holds it.
func (l *Layer) newID(ctx context.Context, seq int64) (string, error) {
	base := "f" + strconv.FormatInt(seq, 10)
	id := base
	for n := 1; ; n++ {
		_, taken, err := l.lookupDoc(ctx, id)
		if err != nil || !taken {
			return id, err
		}
		id = base + "." + strconv.Itoa(n)
	}
}

// Forget removes the live fact id from recall: it writes a last version
// marked Forgotten, and keeps every version for the audit. An unknown or
// already forgotten ID is an error wrapping [ErrNotFound].
func (l *Layer) Forget(ctx context.Context, id string) error {
	if err := l.unbound("Forget"); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.forget(ctx, id, Source{By: "code"})
}

func (l *Layer) forget(ctx context.Context, id string, src Source) error {
	if err := l.sync(ctx); err != nil {
		return fmt.Errorf("semanticmemory: forget: %w", err)
	}
	src.Thread = cmp.Or(src.Thread, l.thread)
	_, err := l.appendRecord(ctx, false, func(int64) (record, error) {
		f, err := l.forgotten(ctx, id, src)
		if err != nil {
			return record{}, err
		}
		return l.admit(ctx, f)
	})
	if err != nil {
		return fmt.Errorf("semanticmemory: forget: %w", err)
	}
	if err := l.catchUp(ctx); err != nil {
		return fmt.Errorf("semanticmemory: forget: forgotten, but %w", err)
	}
	return nil
}

// forgotten returns the version of live fact id that forgets it, written
// by src.
func (l *Layer) forgotten(ctx context.Context, id string, src Source) ([]Fact, error) {
	f, err := l.live(ctx, id)
	if err != nil {
		return nil, err
	}
	f.Version++
	f.Updated, f.Source, f.Forgotten, f.Embedding = l.now(), src, true, nil
	return []Fact{f}, nil
}

// Get returns the live fact id (its last version): one query of the
// index and one read of the record that holds it. An unknown or
// forgotten ID is an error wrapping [ErrNotFound].
func (l *Layer) Get(ctx context.Context, id string) (Fact, error) {
	if err := l.unbound("Get"); err != nil {
		return Fact{}, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.sync(ctx); err != nil {
		return Fact{}, fmt.Errorf("semanticmemory: get: %w", err)
	}
	f, err := l.live(ctx, id)
	if err != nil {
		return Fact{}, fmt.Errorf("semanticmemory: get: %w", err)
	}
	return clone(f), nil
}

// live returns the last version of the live fact id, or an error
// wrapping ErrNotFound.
func (l *Layer) live(ctx context.Context, id string) (Fact, error) {
	v, ok, err := l.lookup(ctx, id)
	if err != nil {
		return Fact{}, err
	}
	var f Fact
	if ok {
		f, ok, err = l.fact(ctx, v)
		if err != nil {
			return Fact{}, err
		}
	}
	if !ok {
		return Fact{}, fmt.Errorf("%w: %s", ErrNotFound, storage.Quote(id))
	}
	return f, nil
}

// Change is what [Layer.Update] changes in a fact: the fields set. An
// empty Text or Kind, or a nil Importance, keeps the fact's.
type Change struct {
	Text       string
	Kind       string
	Importance *float64
	// Source says who changed it; an empty By is "code".
	Source Source
}

// Update writes the next version of the live fact id with c applied,
// keeping its ID and Created; the old version stays readable through
// [Layer.Versions]. A change that leaves the fact as it is writes
// nothing and returns the fact. An unknown or forgotten ID is an error
// wrapping [ErrNotFound]; bad input one wrapping [ErrInvalidFact]; both
// store nothing.
func (l *Layer) Update(ctx context.Context, id string, c Change) (Fact, error) {
	if err := l.unbound("Update"); err != nil {
		return Fact{}, err
	}
	c.Source.By = cmp.Or(c.Source.By, "code")
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.sync(ctx); err != nil {
		return Fact{}, fmt.Errorf("semanticmemory: update: %w", err)
	}
	c.Source.Thread = cmp.Or(c.Source.Thread, l.thread)
	var same *Fact
	r, err := l.appendRecord(ctx, false, func(int64) (record, error) {
		f, unchanged, err := l.changed(ctx, id, c)
		if unchanged {
			same = &f
			return record{}, err
		}
		if err != nil {
			return record{}, err
		}
		return l.admit(ctx, []Fact{f})
	})
	written := r.Facts
	switch {
	case err != nil:
		return Fact{}, fmt.Errorf("semanticmemory: update: %w", err)
	case same != nil:
		return clone(*same), nil
	}
	if err := l.catchUp(ctx); err != nil {
		return Fact{}, fmt.Errorf("semanticmemory: update: stored, but %w", err)
	}
	l.mirror(ctx, written)
	return clone(written[0]), nil
}

// applied returns the memo of fact f with c applied.
func (c Change) applied(f Fact) Memo {
	m := Memo{Text: cmp.Or(c.Text, f.Text), Kind: cmp.Or(c.Kind, f.Kind), Importance: f.Importance}
	if c.Importance != nil {
		m.Importance = *c.Importance
	}
	return m
}

// changed returns the next version of live fact id with c applied, or
// the fact and true when c changes nothing.
func (l *Layer) changed(ctx context.Context, id string, c Change) (Fact, bool, error) {
	f, err := l.live(ctx, id)
	if err != nil {
		return Fact{}, false, err
	}
	m, err := c.applied(f).normalize()
	if err != nil {
		return Fact{}, false, err
	}
	if m.Text == f.Text && m.Kind == f.Kind && m.Importance == f.Importance {
		return f, true, nil
	}
	if m.Text != f.Text {
		if f.Embedding, err = l.embed(ctx, m.Text); err != nil {
			return Fact{}, false, err
		}
	}
	f.Text, f.Kind, f.Importance, f.Source = m.Text, m.Kind, m.Importance, c.Source
	f.Version++
	f.Updated = l.now()
	return f, false, f.validate()
}

// Facts returns the live facts (last versions, not forgotten), by ID,
// after reading what other processes wrote. It reads the whole log (the
// audit's view); no recall calls it.
func (l *Layer) Facts(ctx context.Context) ([]Fact, error) {
	if err := l.unbound("Facts"); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h, err := l.audit(ctx)
	if err != nil {
		return nil, fmt.Errorf("semanticmemory: facts: %w", err)
	}
	out := make([]Fact, 0, len(h.live))
	for _, id := range slices.Sorted(maps.Keys(h.live)) {
		out = append(out, clone(*h.live[id]))
	}
	return out, nil
}

// audit syncs with the store and reads every record.
func (l *Layer) audit(ctx context.Context) (history, error) {
	if err := l.sync(ctx); err != nil {
		return history{}, err
	}
	return l.readHistory(ctx)
}

// Versions returns every version of fact id, oldest first, superseded and
// forgotten ones included (the audit); none for an unknown ID. It reads
// the whole log; no recall calls it.
func (l *Layer) Versions(ctx context.Context, id string) ([]Fact, error) {
	if err := l.unbound("Versions"); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h, err := l.audit(ctx)
	if err != nil {
		return nil, fmt.Errorf("semanticmemory: versions: %w", err)
	}
	vs := h.versions[id]
	out := make([]Fact, len(vs))
	for i := range vs {
		out[i] = clone(vs[i])
	}
	return out, nil
}

// Hit is one fact found by [Layer.Search], with its fused score
// normalised to [0, 1] (see [Layer.Candidates]).
type Hit struct {
	Fact
	Score float64
}

// Search returns up to k live facts for query, best first (see
// [Layer.Candidates] for the ranking); k <= 0 means up to storage.MaxK.
// It reads each hit's record for the whole fact.
func (l *Layer) Search(ctx context.Context, query string, k int) ([]Hit, error) {
	if err := l.unbound("Search"); err != nil {
		return nil, err
	}
	return l.search(ctx, query, "", k)
}

// SearchKind is [Layer.Search] among the live facts of one kind: the
// index's search filtered by the kind, so the k best of that kind are
// found however many facts of other kinds rank above them. An empty kind
// searches every fact, as Search does.
func (l *Layer) SearchKind(ctx context.Context, query, kind string, k int) ([]Hit, error) {
	if err := l.unbound("SearchKind"); err != nil {
		return nil, err
	}
	return l.search(ctx, query, strings.ToLower(kind), k)
}

// search returns up to k live facts of kind ("" for any) for query.
func (l *Layer) search(ctx context.Context, query, kind string, k int) ([]Hit, error) {
	if kind != "" {
		if err := validKind(kind); err != nil {
			return nil, fmt.Errorf("semanticmemory: search: %w", err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.sync(ctx); err != nil {
		return nil, fmt.Errorf("semanticmemory: search: %w", err)
	}
	if k <= 0 {
		k = storage.MaxK
	}
	ranked, n, err := l.retrieve(ctx, query, kind, k)
	if err != nil {
		return nil, fmt.Errorf("semanticmemory: search: %w", err)
	}
	out, err := l.hits(ctx, ranked[:min(len(ranked), k)], n)
	if err != nil {
		return nil, fmt.Errorf("semanticmemory: search: %w", err)
	}
	return out, nil
}

// hits reads the facts ranked by rankers rankers from their records.
func (l *Layer) hits(ctx context.Context, ranked []scored, rankers int) ([]Hit, error) {
	out := make([]Hit, 0, len(ranked))
	for _, s := range ranked {
		f, ok, err := l.fact(ctx, s.fact)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, Hit{Fact: clone(f), Score: normalise(s.score, rankers)})
		}
	}
	return out, nil
}

// normalise maps a fused score to [0, 1]: 1 for a fact ranked first by
// every ranker.
func normalise(score float64, rankers int) float64 {
	if rankers == 0 {
		return 0
	}
	return min(score*float64(RRFK+1)/float64(rankers), 1)
}

func clone(f Fact) Fact {
	f.Embedding = slices.Clone(f.Embedding)
	return f
}

// line renders one fact as it appears in the prompt: "[f12 preference]
// The user prefers tea." Fact text is one line, so it cannot start a
// line of its own.
func line(f view) string { return "[" + f.ID + " " + f.Kind + "] " + f.Text }

// Recall puts the facts best matching q.Text in the prompt, fenced with
// fence.Wrap in a block named after the layer ID (<semantic_memory> by
// default), one line per fact with its ID and kind:
//
//	<semantic_memory>
//	[f3 preference] The user prefers tea to coffee.
//	[f7 profile] The user lives in Lisbon.
//	</semantic>
//
// The query is q.Situation (the user's message, the
// scratchpad's goal and plan, the entities the recent turns touched)
// when the stack gives it, else q.Text. The pinned facts come first —
// the kinds that describe the user (Config.PinKinds) and the important
// ones (Config.PinImportance), the newest first, at most
// Config.MaxPinned, whatever the query — then the facts that match it,
// best first (see [Layer.Candidates]), at most Config.TopK in all; with a
// finite budget, facts are added while the block fits it. No pinned and
// no matching fact recalls nothing. Recall queries the index only: a fact
// is indexed before Remember returns, so one acknowledged by another
// process before the Recall starts is in it. (On a store without search,
// Recall reads the head, one Get, and the records written since.)
func (l *Layer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.step = q.Step
	if l.private {
		if err := l.sync(ctx); err != nil {
			return nil, fmt.Errorf("semanticmemory: recall: %w", err)
		}
	}
	ranked, err := l.shown(ctx, cmp.Or(q.Situation, q.Text))
	if err != nil {
		return nil, fmt.Errorf("semanticmemory: recall: %w", err)
	}
	text, tokens, shown := l.fit(ranked, q)
	if text == "" {
		return nil, nil
	}
	for _, s := range ranked[:shown] {
		l.used(s.fact.ID)
	}
	return []layer.Item{{Text: text, Tokens: tokens}}, nil
}

// fit returns the block of the ranked facts that fits q's budget, the
// first facts in order while it fits, its tokens and how many facts it
// shows.
func (l *Layer) fit(ranked []scored, q layer.Query) (text string, tokens, shown int) {
	var lines []string
	for _, s := range ranked {
		t := fence.Wrap(l.tag, strings.Join(append(lines, line(s.fact)), "\n"))
		n := q.Count(t)
		if q.Budget > 0 && n > q.Budget {
			break
		}
		lines = append(lines, line(s.fact))
		text, tokens = t, n
	}
	return text, tokens, len(lines)
}

// Candidates returns the facts matching q.Text as scored candidates for
// prompt.Assemble: the Config.TopK best by the fused ranking (as Recall
// takes them), best first. Key is the fact ID, Text its line (as in
// Recall, unfenced) and Tokens its count with q's counter, Time the
// fact's Updated as the store's order bounds it, Importance its
// importance and Source its Source.String(). Time does not trust the
// writer's clock: a fact written after another is never older than it,
// and one stamped after the reader's now (Config.Now) counts as no newer
// than now or than the facts written after it, so a process whose clock
// is ahead or behind cannot make an old fact win on recency. Similarity is the best of the rankers' own
// similarities to q.Text, in [0, 1]: BM25 divided by the query's top
// score, and the cosine of the embeddings (or the vector store's score).
// It is not the fused score, which only orders: reciprocal-rank fusion
// gives the fifth fact 0.95 of the first's score however poorly it
// matches, and assembly weighs similarity against recency and
// importance.
func (l *Layer) Candidates(ctx context.Context, q layer.Query) ([]layer.Candidate, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.private {
		if err := l.sync(ctx); err != nil {
			return nil, fmt.Errorf("semanticmemory: candidates: %w", err)
		}
	}
	ranked, err := l.shown(ctx, cmp.Or(q.Situation, q.Text))
	if err != nil {
		return nil, fmt.Errorf("semanticmemory: candidates: %w", err)
	}
	out := make([]layer.Candidate, len(ranked))
	now := l.now()
	for i, s := range ranked {
		t := line(s.fact)
		out[i] = layer.Candidate{Layer: l.cfg.ID, Key: s.fact.ID, Text: t, Tokens: q.Count(t),
			Similarity: s.sim, Time: recency(ranked, i, now), Importance: s.fact.Importance, Source: s.fact.Source}
	}
	return out, nil
}

// RenderBlock shows the facts scored assembly packed as Recall shows
// its own: one line each, in the order Candidates offers them (the pinned
// facts, then the best matches), fenced in the layer's block. With every
// candidate, it is Recall's block.
//
// A fact it shows counts as recalled (see Config.Capacity): Candidates
// counts none, since what it offers may not be shown (scored assembly
// drops some; the write gate reads them to compare a write with).
func (l *Layer) RenderBlock(won []layer.Candidate) string {
	if len(won) == 0 {
		return ""
	}
	lines := make([]string, len(won))
	l.mu.Lock()
	for i, c := range won {
		lines[i] = c.Text
		if c.Layer == l.cfg.ID {
			l.used(c.Key)
		}
	}
	l.mu.Unlock()
	return fence.Wrap(l.tag, strings.Join(lines, "\n"))
}

// recency returns the time scored assembly measures fact i's recency
// from: its Updated, as the store's order of writes bounds it among the
// facts offered, since the writer's clock may be wrong. A fact written
// after another (in a later record) is never older than it; a time after
// now (a writer whose clock is ahead) counts as no later than the facts
// written after it, nor than now.
func recency(facts []scored, i int, now time.Time) time.Time {
	return prompt.OrderedTime(facts[i].fact.Seq, facts[i].fact.Updated, now, func(yield func(int64, time.Time) bool) {
		for _, o := range facts {
			if !yield(o.fact.Seq, o.fact.Updated) {
				return
			}
		}
	})
}

// Snapshot returns every version of every fact (the live ones, the
// superseded and the forgotten), by ID then version, as JSON:
// {"version":1,"facts":[...]}.
func (l *Layer) Snapshot(ctx context.Context) (json.RawMessage, error) {
	if err := l.unbound("Snapshot"); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h, err := l.audit(ctx)
	if err != nil {
		return nil, fmt.Errorf("semanticmemory: snapshot: %w", err)
	}
	return encode(h.snapshot()), nil
}

// Restore replaces the facts with a snapshot's, atomically: the
// snapshot's versions are written as one record that replaces every fact
// before it, then the older records are deleted. Data that is not a
// snapshot this package can read is an error (wrapping [ErrCorrupt] or
// [ErrVersion]) and changes nothing. Restoring the facts the layer holds
// changes nothing.
func (l *Layer) Restore(ctx context.Context, data json.RawMessage) error {
	if err := l.unbound("Restore"); err != nil {
		return err
	}
	s, err := decodeSnapshot(data)
	if err != nil {
		return fmt.Errorf("semanticmemory: restore: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h, err := l.audit(ctx)
	if err != nil {
		return fmt.Errorf("semanticmemory: restore: %w", err)
	}
	if string(encode(s)) == string(encode(h.snapshot())) {
		return nil
	}
	r, err := l.appendRecord(ctx, true, func(int64) (record, error) { return record{Facts: s.Facts, Ledger: l.ledgerOf(s.Facts)}, nil })
	if err != nil {
		return fmt.Errorf("semanticmemory: restore: %w", err)
	}
	l.mirror(ctx, r.Facts)
	if err := l.replaced(ctx, r.Seq); err != nil {
		return fmt.Errorf("semanticmemory: restore: restored, but %w", err)
	}
	return nil
}

// replaced finishes a record seq that replaces every fact before it
// (Restore, Clear): it moves the log's base to seq, deleting the older
// records, and brings the index up to date.
func (l *Layer) replaced(ctx context.Context, seq int64) error {
	if err := l.rebase(ctx, seq); err != nil {
		return err
	}
	return l.catchUp(ctx)
}

// Clear forgets every fact and its history, in memory and in the store:
// it writes an empty record that replaces every fact before it, then
// deletes the older records and the skill candidates. Quarantined
// records are kept.
func (l *Layer) Clear(ctx context.Context) error {
	if err := l.unbound("Clear"); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.sync(ctx); err != nil {
		return fmt.Errorf("semanticmemory: clear: %w", err)
	}
	r, err := l.appendRecord(ctx, true, func(int64) (record, error) { return record{Ledger: l.ledgerOf(nil)}, nil })
	if err != nil {
		return fmt.Errorf("semanticmemory: clear: %w", err)
	}
	if err := l.replaced(ctx, r.Seq); err != nil {
		return fmt.Errorf("semanticmemory: clear: cleared, but %w", err)
	}
	if err := l.clearCandidates(ctx); err != nil {
		return fmt.Errorf("semanticmemory: clear: cleared the facts, but not the skill candidates: %w", err)
	}
	return nil
}

// Metrics returns the layer's figures (see layer.MetricsReporter;
// agentloop exports them as OpenTelemetry metrics): "entries", the live
// facts the index held when this layer last brought it up to date (its
// marker's count: exact for one writer, approximate while several
// processes write at once); and, once the log has a capacity ledger (see
// [Capacity]), "facts" and "tokens", the live facts and their tokens as
// the head this layer last read counts them (exact).
func (l *Layer) Metrics() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[string]int64{"entries": l.mark.Live}
	if g := l.head.Ledger; g != nil {
		m["facts"], m["tokens"] = g.Count, g.Tokens
	}
	return m
}

// Keeps implements layer.Keeper: semantic memory keeps durable facts.
func (l *Layer) Keeps() string { return layer.KeepsSemantic }

// Keep implements layer.Keeper: it remembers w as a fact, superseding one
// it restates, and tells the model the fact's ID and version. A
// restatement word for word writes nothing and keeps the fact as it was,
// written by someone else: it is Unchanged. Kept.Evicted names the facts
// the write evicted to make room (see [Capacity]).
func (l *Layer) Keep(ctx context.Context, w layer.Write) (layer.Kept, error) {
	if err := l.unbound("Keep"); err != nil {
		return layer.Kept{}, err
	}
	src := Source{By: w.By, Step: w.Step, Tool: w.Tool}
	f, evicted, err := l.keep(ctx, Memo{Text: w.Text, Kind: w.Kind, Importance: w.Importance, Source: src})
	if err != nil {
		return layer.Kept{}, err
	}
	k := layer.Kept{Reply: "remembered fact " + f.ID, Key: f.ID, Version: f.Version, Kind: f.Kind, Text: f.Text, Source: f.Source.String(), Evicted: evicted}
	if f.Version > 1 {
		k.Reply = fmt.Sprintf("updated fact %s (version %d)", f.ID, f.Version)
	}
	k.Unchanged = f.Source.By != src.By || f.Source.Step != src.Step || f.Source.Tool != src.Tool
	return k, nil
}

// Close waits for the turns queued for consolidation (see [Layer.Flush]),
// then writes the recalls the run noted for eviction (see [Capacity]):
// one query per fact recalled and one index write. Every fact is stored
// when it is acknowledged.
func (l *Layer) Close(ctx context.Context) error {
	if l.template {
		return nil
	}
	cerr := l.cons.flush(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := errors.Join(cerr, l.flushUses(ctx)); err != nil {
		return fmt.Errorf("semanticmemory: close: %w", err)
	}
	return nil
}

// memorizeSchema and forgetSchema are the tools' JSON-Schema parameters.
var (
	memorizeSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"text":{"type":"string","minLength":1,"maxLength":2000,"description":"The fact, one self-contained sentence."},` +
		`"kind":{"type":"string","pattern":"^[A-Za-z0-9_-]{1,32}$","description":"What sort of fact: preference, profile, fact, decision ... (default fact)."},` +
		`"importance":{"type":"number","minimum":0,"maximum":1,"description":"How much it matters, 0 to 1 (default 0.5)."}},` +
		`"required":["text"],"additionalProperties":false}`)
	forgetSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"id":{"type":"string","minLength":1,"description":"The ID of the fact, as shown in brackets."}},` +
		`"required":["id"],"additionalProperties":false}`)
)

// Provides offers two tools: "memorize" {text, kind?, importance?}
// stores a durable fact (superseding one it restates) and answers with
// its ID and version; "forget" {id} forgets a fact. Arguments that do not
// fit the schema are an error saying what to fix, and store nothing. Code
// reads the facts with [Layer.Facts].
func (l *Layer) Functions() []layer.Function {
	return []layer.Function{
		{Name: "memorize", Description: "Remember a durable fact about the user or the task for later conversations. A fact restating an earlier one replaces it.",
			Parameters: memorizeSchema, Call: l.callMemorize, Effect: layer.EffectWrite},
		{Name: "forget", Description: "Forget a remembered fact that is wrong or no longer true, by its ID.",
			Parameters: forgetSchema, Call: l.callForget, Effect: layer.EffectForget},
	}
}

// decodeArgs decodes a tool's JSON object arguments strictly into v.
func decodeArgs(args json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments must be a JSON object of the tool's parameters: %w", err)
	}
	if dec.More() {
		return errors.New("arguments must be one JSON object")
	}
	return nil
}

func (l *Layer) callMemorize(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Text       *string  `json:"text"`
		Kind       string   `json:"kind"`
		Importance *float64 `json:"importance"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return "", fmt.Errorf("memorize: %w", err)
	}
	if a.Text == nil {
		return "", errors.New(`memorize: "text" is required: the fact to remember`)
	}
	if err := l.unbound("memorize"); err != nil {
		return "", err
	}
	m := Memo{Text: *a.Text, Kind: a.Kind, Importance: DefaultImportance}
	if a.Importance != nil {
		m.Importance = *a.Importance
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m.Source = Source{By: "model", Step: l.step, Tool: layer.ToolName(l.cfg.ID, "memorize")}
	f, err := l.remember(ctx, m)
	if err != nil {
		return "", fmt.Errorf("memorize: %w", err)
	}
	if f.Version > 1 {
		return fmt.Sprintf("updated fact %s (version %d)", f.ID, f.Version), nil
	}
	return "remembered fact " + f.ID, nil
}

func (l *Layer) callForget(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		ID string `json:"id"`
	}
	if err := decodeArgs(args, &a); err != nil {
		return "", fmt.Errorf("forget: %w", err)
	}
	if a.ID == "" {
		return "", errors.New(`forget: "id" is required: the fact's ID, as shown in brackets`)
	}
	if err := l.unbound("forget"); err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.forget(ctx, a.ID, Source{By: "model", Step: l.step, Tool: layer.ToolName(l.cfg.ID, "forget")}); err != nil {
		return "", fmt.Errorf("forget: %w", err)
	}
	return "forgot fact " + a.ID, nil
}

// Interface guards.
var (
	_ layer.Layer           = (*Layer)(nil)
	_ layer.Initializer     = (*Layer)(nil)
	_ layer.Provider        = (*Layer)(nil)
	_ layer.CandidateSource = (*Layer)(nil)
	_ layer.MetricsReporter = (*Layer)(nil)
	_ layer.Keeper          = (*Layer)(nil)
	_ layer.Storer          = (*Layer)(nil)
)
