package episodicmemory

import (
	"cmp"
	"fmt"
	"time"

	"github.com/memlayer/memlayer/layer"
)

// DefaultID is the layer ID used when Config.ID is empty: the prefix of
// its tool's name ("episodic_memory_read") and its block's tag
// (<episodic_memory>).
const DefaultID = "episodic_memory"

// DefaultStorageID is the Spec.StorageID of the layer whose ID is
// DefaultID: its ID before the naming scheme, under which its data stays
// stored (see layer.Spec.StorageID).
const DefaultStorageID = "episodic-memory"

// Defaults of the zero Config.
const (
	// DefaultMaxRecall is how many episodes Recall shows at most.
	DefaultMaxRecall = 8
	// DefaultMaxResultBytes is how much of one result an episode keeps
	// whole (1 MiB): far above agentloop's history cap (16 KiB), so a
	// result the history cut is read back whole by the read tool.
	DefaultMaxResultBytes = 1 << 20
	// DefaultCompactAfter is how many raw (unfolded) episodes trigger a
	// compaction.
	DefaultCompactAfter = 64
	// DefaultCompactTokens is how many tokens of raw episodes (arguments
	// and results, by the default estimate) trigger a compaction.
	DefaultCompactTokens = 50_000
	// DefaultRetain is how many of the newest segments (one per recorded
	// step) keep their raw episodes; older folded segments are deleted.
	DefaultRetain = 1000
	// DefaultMaxDigests is how many digests of folded episodes a run
	// holds in memory (for Metrics and snapshots without a store; on a
	// store without search, for recall).
	DefaultMaxDigests = 512
	// DefaultHalfLife is the recency half-life, in steps (segments).
	DefaultHalfLife = 16
	// DefaultSnapshotResultBytes is how much of each result a snapshot
	// carries.
	DefaultSnapshotResultBytes = 128
	// DefaultSnapshotDigests is how many of the newest digests a snapshot
	// carries.
	DefaultSnapshotDigests = 8
	// DefaultSnapshotEpisodes is how many of the newest raw episodes a
	// snapshot carries.
	DefaultSnapshotEpisodes = 8
	// DefaultReadPageBytes is the largest page the read tool returns
	// (12 KiB): below agentloop's history cap with room for the note.
	DefaultReadPageBytes = 12 << 10
	// DefaultMaxRetries is how many compare-and-swap attempts one write
	// of the head makes.
	DefaultMaxRetries = 16
)

// Weights of Recall's score: similarity·SimilarityWeight +
// recency·RecencyWeight (see [Layer.Recall]).
const (
	SimilarityWeight = 0.6
	RecencyWeight    = 0.4
)

// Config configures a [Layer]. The zero Config is valid: layer
// "episodic_memory" in slot layer.SlotEpisodic, thread scope, unbounded
// budget and the defaults above.
type Config struct {
	// Spec is what every layer declares (see layer.Spec):
	//   - ID: ID is the layer ID. Empty means DefaultID. It names the block Recall fences its text in (fence.Tag: <episodic_memory> by default), the read tool ("<id>_read") and the storage keys.
	//   - StorageID: StorageID names the layer's stored data (see layer.Spec.StorageID). Empty means DefaultStorageID when ID is DefaultID, the ID otherwise.
	//   - Slot: Slot orders the layer in the prompt. Zero means layer.SlotEpisodic.
	//   - Scope: Scope is layer.ScopeThread (the default: one log per thread) or layer.ScopeResource (one log shared by the resource's threads); layer.ScopeExecution keeps a log for the run only. Global is refused.
	//   - Budget: Budget is the layer's token budget.
	//   - DisableOnInitError: DisableOnInitError disables the layer for the run when loading its log fails, instead of aborting the run.
	layer.Spec

	// MaxRecall caps the episodes Recall shows. Zero means
	// DefaultMaxRecall.
	MaxRecall int
	// MaxResultBytes caps the result an episode keeps; a longer result
	// keeps its beginning and its full size, and the read tool says it
	// was cut. Zero means DefaultMaxResultBytes; negative means no cap.
	MaxResultBytes int
	// CompactAfter and CompactTokens trigger a compaction when the raw
	// episodes not yet folded number more than CompactAfter or hold more
	// than CompactTokens tokens: the oldest are folded into digests
	// until at most half of each remains. Zero means the default.
	CompactAfter  int
	CompactTokens int
	// Retain is how many of the newest segments (one per recorded step)
	// keep their raw episodes once folded; older ones are deleted, and
	// the read tool gives their digest. Zero means DefaultRetain;
	// negative keeps every raw episode.
	Retain int
	// MaxDigests caps the digests of folded episodes a run holds in
	// memory: the newest, for Metrics, for snapshots without a store and,
	// on a store without search, for recall. Recall through the store's
	// index covers every digest.
	// Zero means DefaultMaxDigests.
	MaxDigests int
	// HalfLife is the recency half-life in steps: an episode n segments
	// (steps) older than the newest has recency 0.5^(n/HalfLife). Zero
	// means DefaultHalfLife.
	HalfLife int
	// SnapshotResultBytes caps each result in a snapshot without a store,
	// SnapshotDigests the digests it carries and SnapshotEpisodes the raw
	// episodes (the newest of each). With a store, a snapshot is a mark of
	// the log's position, and these do not apply.
	// Zero means DefaultSnapshotResultBytes, DefaultSnapshotDigests,
	// DefaultSnapshotEpisodes.
	SnapshotResultBytes int
	SnapshotDigests     int
	SnapshotEpisodes    int
	// ReadPageBytes is the largest page of a result the read tool
	// returns at once. Zero means DefaultReadPageBytes.
	ReadPageBytes int
	// MaxRetries bounds the compare-and-swap attempts of one write of the
	// head. Zero means DefaultMaxRetries.
	MaxRetries int
	// EpisodeGap is the pause after which a thread's next request starts
	// a new task episode (see [Layer.Task]). Zero means
	// DefaultEpisodeGap; negative means no pause starts one.
	EpisodeGap time.Duration
	// MaxLinks caps the task episodes of other threads that Recall
	// follows links to (see [Layer.Links]). Zero means DefaultMaxLinks;
	// negative follows none.
	MaxLinks int

	// Now returns the current time, recorded in each episode. Nil means
	// time.Now. Recall never depends on it; Candidates bounds by it the
	// episode times it gives scored assembly.
	Now func() time.Time
	// Capacity bounds the episodes the store's index holds for recall,
	// by count and by tokens, and says which leave first (see
	// [Capacity]). The zero Capacity is the defaults.
	Capacity Capacity
}

// withDefaults validates cfg and fills in its defaults.
func (cfg Config) withDefaults() (Config, error) {
	cfg.ID = cmp.Or(cfg.ID, DefaultID)
	if cfg.ID == DefaultID {
		cfg.StorageID = cmp.Or(cfg.StorageID, DefaultStorageID)
	}
	cfg.Slot = cmp.Or(cfg.Slot, layer.SlotEpisodic)
	cfg.Scope = cmp.Or(cfg.Scope, layer.ScopeThread)
	if cfg.Scope == layer.ScopeGlobal {
		return cfg, fmt.Errorf("%w: Scope global: an episode log belongs to a thread or a resource", ErrInvalidConfig)
	}
	for name, v := range map[string]int{"MaxRecall": cfg.MaxRecall, "CompactAfter": cfg.CompactAfter, "CompactTokens": cfg.CompactTokens,
		"MaxDigests": cfg.MaxDigests, "HalfLife": cfg.HalfLife, "SnapshotResultBytes": cfg.SnapshotResultBytes, "ReadPageBytes": cfg.ReadPageBytes, "SnapshotDigests": cfg.SnapshotDigests, "SnapshotEpisodes": cfg.SnapshotEpisodes, "MaxRetries": cfg.MaxRetries} {
		if v < 0 {
			return cfg, fmt.Errorf("%w: %s %d < 0", ErrInvalidConfig, name, v)
		}
	}
	cfg.MaxRecall = cmp.Or(cfg.MaxRecall, DefaultMaxRecall)
	cfg.MaxResultBytes = cmp.Or(cfg.MaxResultBytes, DefaultMaxResultBytes)
	cfg.CompactAfter = cmp.Or(cfg.CompactAfter, DefaultCompactAfter)
	cfg.CompactTokens = cmp.Or(cfg.CompactTokens, DefaultCompactTokens)
	cfg.Retain = cmp.Or(cfg.Retain, DefaultRetain)
	cfg.MaxDigests = cmp.Or(cfg.MaxDigests, DefaultMaxDigests)
	cfg.HalfLife = cmp.Or(cfg.HalfLife, DefaultHalfLife)
	cfg.SnapshotResultBytes = cmp.Or(cfg.SnapshotResultBytes, DefaultSnapshotResultBytes)
	cfg.ReadPageBytes = cmp.Or(cfg.ReadPageBytes, DefaultReadPageBytes)
	cfg.SnapshotDigests = cmp.Or(cfg.SnapshotDigests, DefaultSnapshotDigests)
	cfg.SnapshotEpisodes = cmp.Or(cfg.SnapshotEpisodes, DefaultSnapshotEpisodes)
	cfg.MaxRetries = cmp.Or(cfg.MaxRetries, DefaultMaxRetries)
	cfg.EpisodeGap = cmp.Or(cfg.EpisodeGap, DefaultEpisodeGap)
	cfg.MaxLinks = cmp.Or(cfg.MaxLinks, DefaultMaxLinks)
	var err error
	if cfg.Capacity, err = cfg.Capacity.withDefaults(); err != nil {
		return cfg, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg, nil
}
