package writepath

import (
	"maps"
	"slices"
	"sync"

	"github.com/memlayer/memlayer/audit"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/prompt"
	"github.com/memlayer/memlayer/redact"
)

// Auditor collects the memory operations of a top-level run and of every
// child run under it. A nil Auditor records nothing.
type Auditor struct {
	Full bool // record everything, not only routes and writes
	mu   sync.Mutex
	ev   []audit.Entry
}

func (au *Auditor) Add(entries ...audit.Entry) {
	if au == nil || len(entries) == 0 {
		return
	}
	au.mu.Lock()
	defer au.mu.Unlock()
	au.ev = append(au.ev, entries...)
}

func (au *Auditor) Entries() []audit.Entry {
	if au == nil {
		return nil
	}
	au.mu.Lock()
	defer au.mu.Unlock()
	return slices.Clone(au.ev)
}

// on reports whether recalls, evictions and redactions are recorded.
func (au *Auditor) On() bool { return au != nil && au.Full }

// storeCounters are the counts a layer's Metrics may keep of the writes
// a step makes, and the audit entry each one's growth over a step makes:
// entity memory's evictions and extractions and episodic memory's
// episodes (by their Store), and the key-value memory's writes (by code:
// the run's tools, say).
var storeCounters = []struct {
	name   string
	op     audit.Op
	kind   string
	source string
}{
	{"extractions_total", audit.OpWrite, "extracted", "store"},
	{"episodes_total", audit.OpWrite, "episode", "store"},
	{"evictions_total", audit.OpEvict, "", ""},
	{"writes_total", audit.OpWrite, "kv", "code"},
}

// WriteCounts are the layers of a stack that count their Store's work
// in their Metrics (see storeCounters), by ID.
type WriteCounts map[string]*evictor

// countsOf returns the function that reads l's counts: its Counts when
// it is a [layer.CountReporter], else its Metrics, else nil.
func countsOf(l layer.Layer) func() map[string]int64 {
	if c, ok := layer.As[layer.CountReporter](l); ok {
		return c.Counts
	}
	if m, ok := layer.As[layer.MetricsReporter](l); ok {
		return m.Metrics
	}
	return nil
}

// WatchCounts reads the counts of s's layers that keep storeCounters.
func WatchCounts(s *layer.Stack) WriteCounts {
	w := WriteCounts{}
	for _, l := range s.Layers() {
		if f := countsOf(l); f != nil {
			m := f()
			for _, c := range storeCounters {
				if _, ok := m[c.name]; ok {
					w[l.Spec().ID] = &evictor{f: f, seen: m}
					break
				}
			}
		}
	}
	return w
}

// record adds to au an entry for each count that grew since the last
// call (or WatchCounts), as of step.
func (w WriteCounts) Record(au *Auditor, step, depth int) {
	for _, id := range slices.Sorted(maps.Keys(w)) {
		e := w[id]
		m := e.f()
		for _, c := range storeCounters {
			if n := m[c.name] - e.seen[c.name]; n > 0 {
				au.Add(audit.Entry{Op: c.op, Step: step, Depth: depth, Layer: id, Kind: c.kind, Source: c.source, Count: int(n)})
			}
		}
		e.seen = m
	}
}

// evictor is a layer that counts its Store's work, and the counts the
// audit has seen.
type evictor struct {
	f    func() map[string]int64 // reads the layer's counts
	seen map[string]int64
}

// RecordRedactions adds to au an entry for each kind of data now counts
// more of than before, in the order of the kinds' names.
func RecordRedactions(au *Auditor, step, depth int, before, now map[redact.Kind]int) {
	for _, k := range slices.Sorted(maps.Keys(now)) {
		if n := now[k] - before[k]; n > 0 {
			au.Add(audit.Entry{Op: audit.OpRedact, Step: step, Depth: depth, Kind: string(k), Count: n})
		}
	}
}

// RecallTokens returns the tokens of a layer's recalled items: those
// each reports, counted with c for an item that reports none.
func RecallTokens(items []layer.Item, c prompt.Counter) int {
	n := 0
	for _, it := range items {
		if it.Tokens > 0 {
			n += it.Tokens
		} else {
			n += c.Count(it.Text)
		}
	}
	return n
}
