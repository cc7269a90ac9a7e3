package entitymemory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt/fence"
	"github.com/memlayer/memlayer/storage"
)

// DefaultID is the layer ID used when Config.ID is empty: its block's
// tag (<entity_memory>).
const DefaultID = "entity_memory"

// DefaultStorageID is the Spec.StorageID of the layer whose ID is
// DefaultID: its ID before the naming scheme, under which its data stays
// stored (see layer.Spec.StorageID).
const DefaultStorageID = "entities"

// DefaultCapacity is how many entities are kept when Config.Capacity is 0.
const DefaultCapacity = 10

// StateName is the name of the layer's value under its scope key:
// storage.LayerKey(id, scopeKey, StateName).
const StateName = "state"

// DefaultMaxRetries is how many compare-and-swap attempts one save makes
// when Config.MaxRetries is 0.
const DefaultMaxRetries = 16

// maxPendingDeletes bounds the deletions a layer remembers while its
// saves fail (see Config.MaxRetries); the oldest are forgotten first.
const maxPendingDeletes = 1024

// Config configures a [Layer]. The zero Config is valid: layer "entity_memory"
// in slot layer.SlotEntities, thread scope, unbounded budget, the 10 most
// recent entities, 3 per list, no expiry, the built-in rules.
type Config struct {
	// Spec is what every layer declares (see layer.Spec):
	//   - ID: ID is the layer ID. Empty means DefaultID.
	//   - StorageID: StorageID names the layer's stored data (see layer.Spec.StorageID). Empty means DefaultStorageID when ID is DefaultID, the ID otherwise.
	//   - Slot: Slot orders the layer in the prompt. Zero means layer.SlotEntities.
	//   - Scope: Scope selects whose entities are kept. Empty means thread.
	//   - Budget: Budget is the layer's token budget. When Recall's budget is smaller than the block, the oldest entities are left out until it fits.
	//   - DisableOnInitError: DisableOnInitError disables the layer for the run when loading its state fails, instead of aborting the run.
	layer.Spec

	// Capacity is how many entities are kept. Zero means DefaultCapacity.
	Capacity int
	// MaxPerList caps the entities taken from one list in a result. Zero
	// means DefaultMaxPerList.
	MaxPerList int
	// TTL drops entities not seen for this long. Zero means never.
	TTL time.Duration
	// ArchiveCapacity is how many entities the archive of one scope
	// keeps; past it, those seen longest ago are evicted. Zero means
	// DefaultArchiveCapacity; negative turns the archive off.
	ArchiveCapacity int
	// ArchiveTTL drops archived entities not seen for this long. Zero
	// means DefaultArchiveTTL; negative means never.
	ArchiveTTL time.Duration
	// MaxRecalled is how many archived entities one recall adds. Zero
	// means DefaultMaxRecalled; negative means none.
	MaxRecalled int
	// Rules decide the entity type of a tool's results before the
	// built-in guess from the tool name.
	Rules Rules
	// NameFields is the order of fields tried for a name. Nil means
	// DefaultNameFields.
	NameFields []string
	// Header is the first line of the block. Empty means [Header]
	// ("[RECENT ENTITIES]"); [LegacyHeader] gives the original
	// "[WORKING MEMORY]" format. It must be one line without '<', so
	// that it can neither end the block nor open another one.
	Header string
	// Instructions replace DefaultInstructions after the entities. Empty
	// means the default; set NoInstructions to render none.
	Instructions string
	// NoInstructions renders the entities without instructions.
	NoInstructions bool
	// RenderEmpty renders the header and EmptyText when no entity is
	// tracked, instead of nothing.
	RenderEmpty bool
	// Disabled makes the layer a no-op: it recalls nothing, stores
	// nothing, persists nothing, and breaks nothing around it.
	Disabled bool
	// Now returns the current time, used for SeenAt, TTL and quarantine
	// keys; a time outside years 0-9999 is clamped into them. Nil means
	// time.Now. The order of the entities never depends on it (see
	// [StateVersion]).
	Now func() time.Time
	// MaxResultBytes caps how much of one tool result is read. Zero means
	// DefaultMaxResultBytes.
	MaxResultBytes int
	// MaxRetries bounds the compare-and-swap attempts of one save, with a
	// growing, jittered wait between them (storage.WaitRetry). Zero means
	// DefaultMaxRetries. A save that runs out fails with an error
	// wrapping storage.ErrConflict and keeps the change for the next
	// Store or Close.
	MaxRetries int
}

// Layer is the entity memory: after each step it extracts entities from
// the tool results and keeps the most recent ones; before each model call
// it renders them, grouped by type, with instructions for resolving
// references like "it" and "this page".
//
// A Layer from [New] is a template, and [Layer.Init] returns a new Layer
// bound to a run, loaded from and saved to the run's store. A template
// belongs to no run: Snapshot, Restore and Clear fail with an error
// wrapping [layer.ErrTemplate]; Add does nothing, and Entities, ByType
// and Recent return none. (A disabled layer is its own bound layer, and
// none of this applies to it.) Methods are safe for
// concurrent use; hooks that touch storage hold the layer's lock while
// they do, so Metrics or a data read wait for a save in progress.
type Layer struct {
	cfg   Config
	spec  layer.Spec
	instr string
	head  string // the header line
	tag   string // the fence tag, from the ID (see Tag)
	ext   *Extractor

	mu      sync.Mutex
	store   storage.Store // nil: nothing persists
	key     string
	scope   string       // the scope key, for quarantine keys
	logger  *slog.Logger // reports quarantined state and extractions; nil: slog.Default()
	version int64        // stored version our list is based on
	dirty   bool         // changes not yet saved
	list    []Entity     // ordered by seq, highest first
	clock   uint64       // the logical clock: the highest seq given out or seen
	base    uint64       // the clock of the stored state list is based on
	deleted []Entity     // deletions not yet saved (type and ID)
	spare   []Entity     // the other buffer of list, reused by addLocked
	ebuf    []Entity     // extraction buffer of Store
	cache   string       // rendered block; "" until rendered after a change
	cacheN  int          // cache's tokens by the default estimate (layer.Query{}.Count)

	saved []byte // the state as last written; nil when unknown. It is the state while !dirty

	arch *archive // every entity the scope has seen; nil when not persisted

	// Counts since the layer was made, for Metrics.
	extracted int64 // entities extracted from tool results
	evicted   int64 // entities pushed out of the list by newer ones
	recalled  int64 // archived entities added to a recall

	// template is set on the Layer New returns (unless disabled, when
	// Init returns it as it is), never on a bound one.
	template bool
}

// New returns an entity memory layer. It does no I/O; see [Layer.Init].
func New(cfg Config) (*Layer, error) {
	cfg.ID = cmp.Or(cfg.ID, DefaultID)
	if cfg.ID == DefaultID {
		cfg.StorageID = cmp.Or(cfg.StorageID, DefaultStorageID)
	}
	cfg.Slot = cmp.Or(cfg.Slot, layer.SlotEntities)
	cfg.Scope = cmp.Or(cfg.Scope, layer.ScopeThread)
	if err := checkConfig(&cfg); err != nil {
		return nil, err
	}
	cfg.Capacity = cmp.Or(cfg.Capacity, DefaultCapacity)
	cfg.ArchiveCapacity = cmp.Or(cfg.ArchiveCapacity, DefaultArchiveCapacity)
	cfg.ArchiveTTL = cmp.Or(cfg.ArchiveTTL, DefaultArchiveTTL)
	cfg.MaxRecalled = cmp.Or(cfg.MaxRecalled, DefaultMaxRecalled)
	cfg.MaxRetries = cmp.Or(cfg.MaxRetries, DefaultMaxRetries)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	spec := cfg.Spec
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	l := &Layer{cfg: cfg, spec: spec, instr: cmp.Or(cfg.Instructions, DefaultInstructions), head: cmp.Or(cfg.Header, Header), tag: fence.Tag(cfg.ID)}
	if cfg.NoInstructions {
		l.instr = ""
	}
	l.ext = NewExtractor(cfg)
	l.template = !cfg.Disabled
	return l, nil
}

// unbound returns the error of method called on a template, or nil on a
// bound layer.
func (l *Layer) unbound(method string) error {
	if l.template {
		return fmt.Errorf("entitymemory: %s on the template of layer %q: call Init first: %w", method, l.cfg.ID, layer.ErrTemplate)
	}
	return nil
}

// checkConfig reports the first setting of cfg that New refuses: a
// negative count or duration, or a header that is not one line without
// '<'.
func checkConfig(cfg *Config) error {
	switch {
	case cfg.Capacity < 0:
		return fmt.Errorf("%w: Capacity %d < 0", ErrInvalidConfig, cfg.Capacity)
	case cfg.MaxPerList < 0:
		return fmt.Errorf("%w: MaxPerList %d < 0", ErrInvalidConfig, cfg.MaxPerList)
	case cfg.TTL < 0:
		return fmt.Errorf("%w: TTL %v < 0", ErrInvalidConfig, cfg.TTL)
	case cfg.MaxResultBytes < 0:
		return fmt.Errorf("%w: MaxResultBytes %d < 0", ErrInvalidConfig, cfg.MaxResultBytes)
	case cfg.MaxRetries < 0:
		return fmt.Errorf("%w: MaxRetries %d < 0", ErrInvalidConfig, cfg.MaxRetries)
	case strings.ContainsAny(cfg.Header, "<\r\n\u2028\u2029"):
		return fmt.Errorf("%w: Header %q must be one line without '<'", ErrInvalidConfig, cfg.Header)
	}
	return nil
}

// Spec returns the layer's spec.
func (l *Layer) Spec() layer.Spec { return l.spec }

// Extractor returns the layer's extractor.
func (l *Layer) Extractor() *Extractor { return l.ext }

// bind returns a layer with l's configuration and the given state.
func (l *Layer) bind(store storage.Store, key string, list []Entity, clock uint64) *Layer {
	return &Layer{cfg: l.cfg, spec: l.spec, instr: l.instr, head: l.head, tag: l.tag, ext: l.ext, logger: l.logger, store: store, key: key, list: list, clock: clock, base: clock}
}

// Init returns the layer bound to env's run, with the entities stored
// under storage.LayerKey(id, env.ScopeKey(scope), StateName) (none when
// nothing is stored, or for the execution scope, which never persists).
// Stored state from a newer version of this package ([ErrVersion]) fails
// Init and is left untouched. Stored state that is unreadable
// ([ErrCorrupt]: not JSON, a bad field, a seenAt past year 9999) is
// moved to a quarantine key, LayerKey(id, scopeKey,
// "quarantine/<unix-nanos>"), reported through env.Logger (slog.Default
// when nil), and the run starts with no entities. The receiver is not
// modified.
func (l *Layer) Init(ctx context.Context, env layer.Env) (layer.Layer, error) {
	if l.cfg.Disabled {
		return l, nil
	}
	if env.Store == nil || l.cfg.Scope == layer.ScopeExecution {
		b := l.bind(nil, "", nil, 0)
		b.logger = env.Logger
		return b, nil
	}
	scope := env.ScopeKey(l.cfg.Scope)
	b := l.bind(env.Store, storage.LayerKey(l.cfg.StorageName(), scope, StateName), nil, 0)
	b.scope, b.logger = scope, env.Logger
	b.arch = newArchive(env.Store, l.cfg.StorageName(), scope, l.cfg)
	if b.logger == nil {
		b.logger = slog.Default()
	}
	list, clock, ver, err := b.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("entitymemory: init: %w", err)
	}
	b.list, b.clock, b.base, b.version = list, clock, clock, ver
	return b, nil
}

// load reads the stored list, its logical clock and its version
// (NoVersion when absent). Unreadable state is quarantined and reads as
// absent.
func (l *Layer) load(ctx context.Context) ([]Entity, uint64, int64, error) {
	for range l.cfg.MaxRetries {
		it, err := l.store.Get(ctx, l.key)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, 0, storage.NoVersion, nil
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("load %s: %w", l.key, err)
		}
		list, clock, err := decodeState(it.Value, l.cfg.Capacity)
		if errors.Is(err, ErrCorrupt) {
			err = l.quarantine(ctx, it, err)
			if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
				continue // someone wrote meanwhile: read again
			}
			if err != nil {
				return nil, 0, 0, fmt.Errorf("load %s: quarantine: %w", l.key, err)
			}
			return nil, 0, storage.NoVersion, nil
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("load %s: %w", l.key, err)
		}
		notAfter(list, l.now())
		list, _ = prune(list, l.now, l.cfg.TTL)
		return list, clock, it.Version, nil
	}
	return nil, 0, 0, fmt.Errorf("load %s: state rewritten during quarantine %d times: %w", l.key, l.cfg.MaxRetries, storage.ErrConflict)
}

// quarantine moves an unreadable stored state aside: it is copied to a
// quarantine key, then deleted from the state key if still unchanged.
func (l *Layer) quarantine(ctx context.Context, it storage.Item, cause error) error {
	qkey, err := storage.Quarantine(ctx, l.store, it, l.cfg.StorageName(), l.scope, l.now())
	if err != nil {
		return err
	}
	l.logger.LogAttrs(ctx, slog.LevelWarn, "entitymemory: stored state quarantined; starting with no entities",
		slog.String("layer", l.cfg.ID), slog.String("key", l.key),
		slog.String("quarantine", qkey), slog.Any("error", cause))
	return nil
}

// Recall renders the tracked entities, fenced with fence.Wrap in a block
// named after the layer ID ([Layer.Tag]; <entity_memory> by default):
//
//	<entity_memory>
//	[RECENT ENTITIES]
//	pages:
//	  - "About Us" (page-123)
//	sections:
//	  - "Hero" (sec-456, parent: page-123)
//
//	To resolve references such as "it", ...
//	</entities>
//
// It returns nothing when no entity is tracked (unless RenderEmpty) or
// the layer is disabled. When q.Budget is positive and finite and the
// block's size ([layer.Query.Count]) exceeds it, the oldest entities are
// left out until it fits. The block is rendered once
// per change and reused.
func (l *Layer) Recall(ctx context.Context, q layer.Query) ([]layer.Item, error) {
	if l.cfg.Disabled {
		return nil, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	named, err := l.recallArchived(ctx, q)
	switch {
	case err != nil:
		return nil, err
	case len(named) > 0:
		return l.recallNamed(q, named), nil
	case len(l.list) > 0:
		return l.recallRecent(q), nil
	case l.cfg.RenderEmpty:
		text := fence.Wrap(l.tag, l.head+"\n"+EmptyText)
		return []layer.Item{{Text: text, Tokens: q.Count(text)}}, nil
	}
	return nil, nil
}

// recallArchived returns the archived entities the query names, when
// the layer keeps an archive and recalls from it. Callers hold l.mu.
func (l *Layer) recallArchived(ctx context.Context, q layer.Query) ([]Entity, error) {
	if l.arch == nil || l.cfg.MaxRecalled <= 0 {
		return nil, nil
	}
	named, err := l.arch.recall(ctx, q.Text, l.list, l.cfg.MaxRecalled, l.now())
	if err != nil {
		return nil, fmt.Errorf("entitymemory: recall: %w", err)
	}
	l.recalled += int64(len(named))
	return named, nil
}

// recallRecent renders the recent list, cached once per change. When
// the block exceeds q.Budget, the oldest entities are left out until it
// fits; nothing is returned when even one entity does not fit. Callers
// hold l.mu.
func (l *Layer) recallRecent(q layer.Query) []layer.Item {
	if l.cache == "" {
		l.cache = fence.Wrap(l.tag, render(l.list, nil, l.head, l.instr)) // never ""
		l.cacheN = layer.Query{}.Count(l.cache)
	}
	tokens := l.cacheN // the default estimate, counted once per change
	if q.Counter != nil {
		tokens = q.Count(l.cache)
	}
	if q.Budget <= 0 || tokens <= q.Budget {
		return []layer.Item{{Text: l.cache, Tokens: tokens}}
	}
	for n := len(l.list) - 1; n > 0; n-- {
		t := fence.Wrap(l.tag, render(l.list[:n], nil, l.head, l.instr))
		if tokens := q.Count(t); tokens <= q.Budget {
			return []layer.Item{{Text: t, Tokens: tokens}}
		}
	}
	return nil
}

// recallNamed renders the recent list with the archived entities the
// conversation names, leaving out the oldest recent ones until the block
// fits q.Budget.
func (l *Layer) recallNamed(q layer.Query, named []Entity) []layer.Item {
	for n := len(l.list); n >= 0; n-- {
		text := fence.Wrap(l.tag, render(l.list[:n], named, l.head, l.instr))
		if tokens := q.Count(text); q.Budget <= 0 || tokens <= q.Budget {
			return []layer.Item{{Text: text, Tokens: tokens}}
		}
	}
	return nil
}

// now is Config.Now, clamped into years 0-9999 (which JSON can hold).
func (l *Layer) now() time.Time {
	t := l.cfg.Now()
	if t.Before(minTime) || t.After(maxTime) {
		return clampTime(t)
	}
	return t
}

// Tag returns the name of the block Recall fences the entities in: the
// layer ID with every '-' replaced by '_' ("entity_memory" for DefaultID,
// "cms_entities" for "cms-entities"). The prompt compiler gives the tag
// to the first layer that fences with it, so no other layer's text can
// pass for this block.
func (l *Layer) Tag() string { return l.tag }

// expire drops entities past their TTL. Callers hold l.mu.
func (l *Layer) expire() {
	var dropped bool
	l.list, dropped = prune(l.list, l.now, l.cfg.TTL)
	if dropped {
		l.cache = ""
		l.dirty = l.store != nil
	}
}

// Store extracts the entities of every successful tool result of the step
// (in order, so the last result's entities end up first) and records
// them; the entities of a delete-like tool ("cms_deletePage",
// "remove_section"), and those the result flags as deleted
// ({"id": "cus_1", "deleted": true}, see [Entity.Deleted]), are forgotten
// instead, so "it" no longer resolves to them. When the list changed and the layer persists, it is saved with
// compare-and-swap: on a lost race the stored list is read and this
// layer's changes since its last save — the entities it recorded, in
// order, and the ones it forgot — are applied to it again, with logical
// times after the stored clock (see [StateVersion]), and the result is
// written (up to Config.MaxRetries attempts). So a deleted entity never
// comes back and an entity just recorded is never cut because another
// writer's clock is ahead; it can only be cut when at least Capacity
// entities were recorded after it. A failed save keeps the change in
// memory and is retried by the next Store and by Close. Cancelling ctx
// abandons the save.
func (l *Layer) Store(ctx context.Context, t layer.Turn) error {
	if l.cfg.Disabled {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.arch != nil {
		l.arch.note(t.Query)
	}
	if len(t.Results) == 0 {
		return nil
	}
	l.expire()
	seen, gone := l.extractLocked(ctx, t)
	var err error
	if l.dirty {
		err = l.saveLocked(ctx)
	}
	if l.arch != nil {
		now := l.now()
		for i := range seen {
			seen[i].SeenAt = now
		}
		err = errors.Join(err, l.archiveLocked(ctx, seen, gone))
	}
	return err
}

// extractLocked records the entities of every successful tool result of
// the step, and returns those seen and those gone, for the archive (none
// when the layer keeps none). Callers hold l.mu.
func (l *Layer) extractLocked(ctx context.Context, t layer.Turn) (seen, gone []Entity) {
	for _, r := range t.Results {
		if r.IsError {
			continue
		}
		name, args := callOf(t, r)
		l.ebuf = l.ext.extractInto(l.ebuf, name, args, r.Content)
		l.extracted += int64(len(l.ebuf))
		destructive := l.ext.Destructive(name)
		l.logExtraction(ctx, name, l.ebuf, destructive)
		if l.arch != nil {
			seen, gone = sortSightings(l.ebuf, destructive, seen, gone)
		}
		l.applyLocked(l.ebuf, destructive)
	}
	return seen, gone
}

// callOf returns the tool name and arguments of result r, taking what r
// leaves out from the step's call of the same ID.
func callOf(t layer.Turn, r layer.ToolResult) (name, args string) {
	name, args = r.Name, r.Arguments
	if name != "" && args != "" {
		return name, args
	}
	for _, c := range t.ToolCalls {
		if c.ID == r.ID {
			name, args = cmp.Or(name, c.Name), cmp.Or(args, c.Arguments)
		}
	}
	return name, args
}

// sortSightings appends the entities of one result to seen, or to gone
// when the tool is destructive or the result flags them as deleted.
func sortSightings(ents []Entity, destructive bool, seen, gone []Entity) ([]Entity, []Entity) {
	for _, e := range ents {
		if destructive || e.Deleted {
			gone = append(gone, e)
		} else {
			seen = append(seen, e)
		}
	}
	return seen, gone
}

// archiveLocked records a step's entities in the archive (and, once per
// run, the recent list, so that entities stored before the archive
// existed join it) and forgets the deleted ones. Callers hold l.mu.
func (l *Layer) archiveLocked(ctx context.Context, seen, gone []Entity) error {
	if err := l.arch.seed(ctx, l.list); err != nil {
		return fmt.Errorf("entitymemory: %w", err)
	}
	if err := l.arch.add(ctx, seen); err != nil {
		return fmt.Errorf("entitymemory: %w", err)
	}
	if len(gone) > 0 {
		if err := l.arch.remove(ctx, gone); err != nil {
			return fmt.Errorf("entitymemory: %w", err)
		}
	}
	return nil
}

// logExtraction reports one extraction at debug level: the tool, how
// many entities it yielded, their types, and whether they were forgotten
// (a delete-like tool) rather than recorded. Nothing is built when debug
// logging is off.
func (l *Layer) logExtraction(ctx context.Context, tool string, ents []Entity, forgotten bool) {
	lg := l.logger
	if lg == nil {
		lg = slog.Default()
	}
	if !lg.Enabled(ctx, slog.LevelDebug) {
		return
	}
	types := make([]string, 0, 2)
	for i := range ents {
		if !slices.Contains(types, ents[i].Type) {
			types = append(types, ents[i].Type)
		}
	}
	lg.LogAttrs(ctx, slog.LevelDebug, "entitymemory: extracted entities",
		slog.String("layer", l.cfg.ID), slog.String("tool", tool), slog.Int("count", len(ents)),
		slog.Any("types", types), slog.Bool("forgotten", forgotten))
}

// Add records entities as if a tool result had just yielded them, in
// order (the first ends up first); an entity flagged Deleted is forgotten
// instead. It does not save them; the next Store or Close does. Entities
// without a type or ID are ignored. On a template, which belongs to no
// run, it does nothing.
func (l *Layer) Add(ents ...Entity) {
	if l.cfg.Disabled || l.template {
		return
	}
	batch := make([]Entity, 0, len(ents))
	for _, e := range ents {
		if c, ok := clean(e); ok {
			batch = append(batch, c)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	l.applyLocked(batch, false)
}

// applyLocked records the entities of one result, in order, and forgets
// those flagged Deleted — or all of them, for a delete-like tool.
// batch may be reordered.
func (l *Layer) applyLocked(batch []Entity, forget bool) {
	if forget {
		l.removeLocked(batch)
		return
	}
	var gone []Entity
	for i := range batch {
		if batch[i].Deleted {
			gone = append(gone, batch[i])
		}
	}
	if len(gone) > 0 {
		l.removeLocked(gone)
		batch = slices.DeleteFunc(batch, func(e Entity) bool { return e.Deleted })
	}
	l.addLocked(batch)
}

func (l *Layer) addLocked(batch []Entity) {
	if len(batch) == 0 {
		return
	}
	now := l.now()
	for i := range batch {
		batch[i].SeenAt = now
	}
	list, clock, changed := addBatch(l.spare[:0], l.list, batch, l.clock, l.cfg.Capacity)
	for i := range l.list {
		if !containsEntity(list, &l.list[i]) {
			l.evicted++
		}
	}
	l.list, l.spare, l.clock = list, l.list[:0], clock
	l.deleted = slices.DeleteFunc(l.deleted, func(e Entity) bool { return containsEntity(batch, &e) })
	l.dirty = l.store != nil
	if changed {
		l.cache = ""
	}
}

// removeLocked forgets the entities a delete-like tool acted on, and
// remembers the deletion until it is saved, whether or not the entity is
// in this layer's list: another writer's may hold it.
func (l *Layer) removeLocked(gone []Entity) {
	n := len(l.list)
	l.list = slices.DeleteFunc(l.list, func(e Entity) bool { return containsEntity(gone, &e) })
	if len(l.list) != n {
		l.cache = ""
		l.dirty = l.store != nil
	}
	if l.store == nil {
		return
	}
	for _, g := range gone {
		if g.ID != "" && !containsEntity(l.deleted, &g) {
			l.deleted = append(l.deleted, Entity{Type: g.Type, ID: g.ID})
			l.dirty = true
		}
	}
	if n := len(l.deleted) - maxPendingDeletes; n > 0 {
		l.deleted = slices.Delete(l.deleted, 0, n)
	}
}

// saveLocked writes the list with compare-and-swap, merging with the
// stored list on conflict. Callers hold l.mu.
func (l *Layer) saveLocked(ctx context.Context) error {
	if l.store == nil {
		l.dirty = false
		return nil
	}
	var read time.Time // when the state the next write merges with was read
	for attempt := range l.cfg.MaxRetries {
		data := encodeState(l.list, l.clock)
		start := time.Now()
		v, err := l.store.Put(ctx, l.key, data, l.version)
		if err == nil {
			l.version, l.dirty, l.base, l.deleted, l.saved = v, false, l.clock, nil, data
			return nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return fmt.Errorf("entitymemory: save %s: %w", l.key, err)
		}
		// After a lost race, wait a jittered delay, growing and scaled to
		// the time an attempt takes, so that contending writers spread
		// out, and only then read what won: the
		// merge is as fresh as it can be when the next attempt writes it
		// (waiting between the read and the write lost to whoever wrote
		// during the wait).
		if err := l.backoff(ctx, attempt, start, read); err != nil {
			return fmt.Errorf("entitymemory: save %s: %w", l.key, err)
		}
		read = time.Now()
		if err := l.mergeStored(ctx); err != nil {
			return fmt.Errorf("entitymemory: save: %w", err)
		}
	}
	return fmt.Errorf("entitymemory: save %s: gave up after %d attempts: %w", l.key, l.cfg.MaxRetries, storage.ErrConflict)
}

// backoff waits after the lost race of attempt, unless it was the last
// one, for a jittered delay scaled to the time an attempt takes: since
// read, when the last merge read the stored state, or else twice what the
// write that started at start took (a read and a write).
func (l *Layer) backoff(ctx context.Context, attempt int, start, read time.Time) error {
	if attempt+1 >= l.cfg.MaxRetries {
		return nil
	}
	took := 2 * time.Since(start) // a read and a write
	if !read.IsZero() {
		took = time.Since(read)
	}
	return storage.WaitRetryAfter(ctx, attempt+1, took)
}

// mergeStored reads the stored state that won a race and applies this
// layer's changes since its last save to it again (see rebase). Callers
// hold l.mu.
func (l *Layer) mergeStored(ctx context.Context) error {
	remote, remoteClock, ver, err := l.load(ctx)
	if err != nil {
		return err
	}
	merged, base, clock := rebase(l.list, l.base, l.clock, l.deleted, remote, remoteClock, l.cfg.Capacity)
	if !sameVisible(merged, l.list) {
		l.cache = ""
	}
	l.list, l.clock, l.base, l.version = merged, clock, base, ver
	return nil
}

// OnSpawn returns the layer a child agent starts with: a copy of the
// current entities that the child updates on its own and never persists
// (the child's changes stay with the child). The child recalls from the
// parent's archive too (the entities its input names), read-only: it
// adds, forgets and expires nothing there. The receiver is not modified.
func (l *Layer) OnSpawn(ctx context.Context, child layer.Env) (layer.Layer, error) {
	if l.cfg.Disabled {
		return l, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.bind(nil, "", slices.Clone(l.list), l.clock)
	if l.arch != nil {
		c.arch = l.arch.child()
	}
	return c, nil
}

// Entities returns the tracked entities, newest first. The slice is a
// copy. A template tracks none.
func (l *Layer) Entities() []Entity {
	if l.template {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	return slices.Clone(l.list)
}

// ByType returns the tracked entities of one type, newest first. The
// type is normalised as the extractor normalises types ("Blog Posts" is
// "blog_post"). The slice is a copy; it is empty when none is tracked,
// and on a template.
func (l *Layer) ByType(typ string) []Entity {
	if l.template {
		return nil
	}
	typ = NormalizeType(typ)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	var out []Entity
	for i := range l.list {
		if l.list[i].Type == typ {
			out = append(out, l.list[i])
		}
	}
	return out
}

// Recent returns the n most recently seen entities, newest first (all of
// them when fewer are tracked; none when n <= 0 or on a template). The
// slice is a copy.
func (l *Layer) Recent(n int) []Entity {
	if n <= 0 || l.template {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	return slices.Clone(l.list[:min(n, len(l.list))])
}

// Snapshot returns the state as versioned JSON (see [StateVersion]).
func (l *Layer) Snapshot(ctx context.Context) (json.RawMessage, error) {
	if err := l.unbound("Snapshot"); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.stateLocked()), nil
}

// stateLocked returns the encoded state: the bytes the last save wrote
// when nothing changed since (the agent loop snapshots every layer each
// step), else encoded afresh. The caller holds l.mu and must not modify
// the result.
func (l *Layer) stateLocked() []byte {
	if l.store != nil && !l.dirty && l.saved != nil {
		return l.saved
	}
	return encodeState(l.list, l.clock)
}

// Restore replaces the state with a snapshot, of this version or an older
// one (which is migrated), and saves it. A snapshot from a newer version
// ([ErrVersion]) or an unreadable one ([ErrCorrupt]) is refused, and a
// failed save is undone: either way the current state is kept.
func (l *Layer) Restore(ctx context.Context, data json.RawMessage) error {
	if err := l.unbound("Restore"); err != nil {
		return err
	}
	list, clock, err := decodeState(data, l.cfg.Capacity)
	if err != nil {
		return fmt.Errorf("entitymemory: restore: %w", err)
	}
	if l.cfg.Disabled {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// The clock never goes back: what is recorded after the restore comes
	// after everything recorded before it.
	clock = max(clock, l.clock)
	if l.store != nil {
		// Replace the stored value whatever its version.
		data := encodeState(list, clock)
		v, err := l.store.Put(ctx, l.key, data, storage.AnyVersion)
		if err != nil {
			return fmt.Errorf("entitymemory: restore: save %s: %w", l.key, err)
		}
		l.version, l.dirty, l.saved = v, false, data
	}
	l.list, l.clock, l.base, l.deleted, l.cache = list, clock, clock, nil, ""
	return nil
}

// Clear forgets every entity, in memory and in storage.
func (l *Layer) Clear(ctx context.Context) error {
	if err := l.unbound("Clear"); err != nil {
		return err
	}
	if l.cfg.Disabled {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list, l.cache, l.dirty, l.deleted, l.base, l.saved = nil, "", false, nil, l.clock, nil
	if l.store == nil {
		l.arch = nil // a child forgets its view of the parent's archive
		return nil
	}
	if err := l.store.Delete(ctx, l.key, storage.AnyVersion); err != nil {
		return fmt.Errorf("entitymemory: clear %s: %w", l.key, err)
	}
	l.version = storage.NoVersion
	if l.arch != nil {
		if err := l.arch.clear(ctx); err != nil {
			return fmt.Errorf("entitymemory: clear: %w", err)
		}
	}
	return nil
}

// Metrics returns the layer's figures (see layer.MetricsReporter;
// agentloop exports them as OpenTelemetry metrics): "entries", the
// entities tracked now, and "bytes", the size of their stored form;
// "extractions_total", the entities extracted from tool results since
// the layer was made; and "evictions_total", those pushed out of the
// list by newer ones (at Config.Capacity); "recalled_total", the archived
// entities recalls added because the conversation named them.
func (l *Layer) Metrics() map[string]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire()
	n := len(l.stateLocked())
	return map[string]int64{"entries": int64(len(l.list)), "bytes": int64(n),
		"extractions_total": l.extracted, "evictions_total": l.evicted, "recalled_total": l.recalled}
}

// Close saves changes a failed Store could not save.
func (l *Layer) Close(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.dirty {
		return nil
	}
	return l.saveLocked(ctx)
}

// Interface guards.
var (
	_ layer.Layer           = (*Layer)(nil)
	_ layer.Initializer     = (*Layer)(nil)
	_ layer.Storer          = (*Layer)(nil)
	_ layer.Spawner         = (*Layer)(nil)
	_ layer.Snapshotter     = (*Layer)(nil)
	_ layer.Clearer         = (*Layer)(nil)
	_ layer.Closer          = (*Layer)(nil)
	_ layer.MetricsReporter = (*Layer)(nil)
)
