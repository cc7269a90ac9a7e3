package reliability

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memlayer/memlayer/entitymemory"
	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
)

// The entity-skew scenario (issue 9, items 8 and 9): processes whose
// clocks disagree by up to an hour share one resource's entity memory.
// Each creates a page per round and deletes the one it created the round
// before, so at most two pages per process are live and the list
// (capacity: two per process) never has to cut a live page. Counted:
// pages a process has just created that are missing from the stored
// list (lost), and deleted pages that show up again (resurrected).

// skewArgs are the arguments of an entity-skew worker.
type skewArgs struct {
	Store    storeSpec     `json:"store"`
	Proc     int           `json:"proc"`
	Rounds   int           `json:"rounds"`
	Resource string        `json:"resource"`
	Skew     time.Duration `json:"skew"`
	Capacity int           `json:"capacity"`
	// WallClock makes the worker save the way entity memory did before
	// the fix: on a lost race, a union of its list and the stored one,
	// ordered by each writer's wall clock and cut to capacity. The
	// negative control.
	WallClock bool `json:"wall_clock,omitempty"`
}

// skewResult is what an entity-skew worker reports.
type skewResult struct {
	Created     int      `json:"created"`
	Deleted     []string `json:"deleted"`
	Last        string   `json:"last"`        // the page created last, never deleted
	Lost        int      `json:"lost"`        // creates missing from the stored list right after their save
	Resurrected []string `json:"resurrected"` // own deleted pages seen stored again
	Conflicts   int64    `json:"conflicts"`
}

func init() {
	workers["entity-skew"] = entitySkewWorker
}

// skewPage is the ID of the page process proc creates in round i.
func skewPage(proc, i int) string { return fmt.Sprintf("page-p%d-%03d", proc, i) }

// entityWriter is what a worker saves entities through: the layer, or
// the pre-fix algorithm of the negative control.
type entityWriter interface {
	create(ctx context.Context, id string) error
	remove(ctx context.Context, id string) error
}

// layerWriter saves through entity memory itself, as an agent's run does.
type layerWriter struct{ l *entitymemory.Layer }

func (w layerWriter) create(ctx context.Context, id string) error {
	return w.save(ctx, layer.ToolResult{ToolCall: layer.ToolCall{Name: "cms_createPage"}, Content: fmt.Sprintf(`{"page":{"id":%q,"title":"Page %s"}}`, id, id)})
}

func (w layerWriter) remove(ctx context.Context, id string) error {
	return w.save(ctx, layer.ToolResult{ToolCall: layer.ToolCall{Name: "cms_deletePage", Arguments: fmt.Sprintf(`{"pageId":%q}`, id)}, Content: fmt.Sprintf(`{"page":{"id":%q}}`, id)})
}

// save stores one step; a save that ran out of attempts keeps the change
// and is finished by Close, as the end of a run would.
func (w layerWriter) save(ctx context.Context, r layer.ToolResult) error {
	err := w.l.Store(ctx, layer.Turn{Results: []layer.ToolResult{r}})
	for errors.Is(err, storage.ErrConflict) {
		err = w.l.Close(ctx)
	}
	return err
}

// wallClockWriter is the negative control: the save of entity memory
// before the fix, a list merged by wall clock after a lost race.
type wallClockWriter struct {
	st       storage.Store
	key      string
	now      func() time.Time
	capacity int
	list     []entitymemory.Entity
	version  int64
}

func (w *wallClockWriter) create(ctx context.Context, id string) error {
	e := entitymemory.Entity{Type: "page", ID: id, Name: "Page " + id, SeenAt: w.now()}
	w.list = append([]entitymemory.Entity{e}, slices.DeleteFunc(w.list, func(x entitymemory.Entity) bool { return x.ID == id })...)
	w.list = w.list[:min(len(w.list), w.capacity)]
	return w.save(ctx)
}

func (w *wallClockWriter) remove(ctx context.Context, id string) error {
	w.list = slices.DeleteFunc(w.list, func(x entitymemory.Entity) bool { return x.ID == id })
	return w.save(ctx)
}

func (w *wallClockWriter) save(ctx context.Context) error {
	for {
		data, err := json.Marshal(map[string]any{"version": 1, "entities": w.list})
		if err != nil {
			return err
		}
		v, err := w.st.Put(ctx, w.key, data, w.version)
		if err == nil {
			w.version = v
			return nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return err
		}
		remote, ver, err := readEntities(ctx, w.st, w.key)
		if err != nil {
			return err
		}
		// The merge before the fix: every entity of either list, the most
		// recently seen copy of each, newest first by SeenAt, cut.
		all := slices.Clone(w.list)
		for _, r := range remote {
			i := slices.IndexFunc(all, func(x entitymemory.Entity) bool { return x.ID == r.ID })
			switch {
			case i < 0:
				all = append(all, r)
			case r.SeenAt.After(all[i].SeenAt):
				all[i] = r
			}
		}
		slices.SortStableFunc(all, func(a, b entitymemory.Entity) int { return b.SeenAt.Compare(a.SeenAt) })
		w.list, w.version = all[:min(len(all), w.capacity)], ver
	}
}

// readEntities reads the entities stored under key, in any state version,
// through the layer's own decoding (Restore on a layer without a store).
func readEntities(ctx context.Context, st storage.Store, key string) ([]entitymemory.Entity, int64, error) {
	it, err := st.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, storage.NoVersion, nil
	}
	if err != nil {
		return nil, 0, err
	}
	tmpl, err := entitymemory.New(entitymemory.Config{Capacity: 1000})
	if err != nil {
		return nil, 0, err
	}
	// A run without a store decodes the stored state.
	run, err := tmpl.Init(ctx, layer.Env{ThreadID: "decode"})
	if err != nil {
		return nil, 0, err
	}
	l := run.(*entitymemory.Layer)
	if err := l.Restore(ctx, it.Value); err != nil {
		return nil, 0, fmt.Errorf("stored entities: %w", err)
	}
	return l.Entities(), it.Version, nil
}

func hasEntity(list []entitymemory.Entity, id string) bool {
	return slices.ContainsFunc(list, func(e entitymemory.Entity) bool { return e.ID == id })
}

// skewKey is where the scenario's entities are stored.
func skewKey(resource string) string {
	return storage.LayerKey(entitymemory.DefaultStorageID, storage.ResourceScope(resource), entitymemory.StateName)
}

func entitySkewWorker(ctx context.Context, raw string, in *bufio.Scanner, out *lineWriter) error {
	var args skewArgs
	st, closeFn, err := openWorkerStore(ctx, raw, &args)
	if err != nil {
		return err
	}
	defer closeFn()
	counted := &countingStore{Store: st}
	now := func() time.Time { return time.Now().Add(args.Skew) }
	key := skewKey(args.Resource)
	var w entityWriter
	if args.WallClock {
		w = &wallClockWriter{st: counted, key: key, now: now, capacity: args.Capacity, version: storage.NoVersion}
	} else {
		tmpl, err := entitymemory.New(entitymemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, Capacity: args.Capacity, Now: now})
		if err != nil {
			return err
		}
		bound, err := tmpl.Init(ctx, layer.Env{ThreadID: fmt.Sprintf("thread-%d", args.Proc), ResourceID: args.Resource, Store: counted})
		if err != nil {
			return err
		}
		w = layerWriter{l: bound.(*entitymemory.Layer)}
	}
	out.Printf("ready")
	if err := waitFor(in, "go"); err != nil {
		return err
	}
	res := skewResult{}
	resurrected := map[string]bool{}
	checkDeleted := func() error {
		stored, _, err := readEntities(ctx, st, key)
		if err != nil {
			return err
		}
		for _, id := range res.Deleted {
			if hasEntity(stored, id) && !resurrected[id] {
				resurrected[id] = true
				res.Resurrected = append(res.Resurrected, id)
			}
		}
		return nil
	}
	for i := range args.Rounds {
		id := skewPage(args.Proc, i)
		if err := w.create(ctx, id); err != nil {
			return fmt.Errorf("create %s: %w", id, err)
		}
		res.Created++
		res.Last = id
		stored, _, err := readEntities(ctx, st, key)
		if err != nil {
			return err
		}
		if !hasEntity(stored, id) {
			res.Lost++
		}
		if i > 0 {
			prev := skewPage(args.Proc, i-1)
			if err := w.remove(ctx, prev); err != nil {
				return fmt.Errorf("delete %s: %w", prev, err)
			}
			res.Deleted = append(res.Deleted, prev)
		}
		if err := checkDeleted(); err != nil {
			return err
		}
	}
	res.Conflicts = counted.conflicts.Load()
	b, _ := json.Marshal(res)
	out.Printf("result %s", b)
	return nil
}

// skews are the workers' clock offsets: one an hour behind, one an hour
// ahead, the others in between.
var skews = []time.Duration{-time.Hour, 0, time.Hour, -30 * time.Minute, 10 * time.Minute, -5 * time.Minute}

// runEntitySkew runs procs workers on one resource of spec and returns
// what they report and the stored list at the end.
func runEntitySkew(t *testing.T, spec storeSpec, procs, rounds int, wallClock bool) ([]skewResult, []entitymemory.Entity, time.Duration) {
	t.Helper()
	const resource = "site-1"
	results, elapsed := runWorkers[skewResult](t, "entity-skew", procs, 5*time.Minute, func(p int) any {
		return skewArgs{Store: spec, Proc: p, Rounds: rounds, Resource: resource,
			Skew: skews[p%len(skews)], Capacity: 2 * procs, WallClock: wallClock}
	})
	final, _, err := readEntities(t.Context(), mustOpen(t, spec), skewKey(resource))
	if err != nil {
		t.Fatal(err)
	}
	return results, final, elapsed
}

// skewCounts sums the workers' reports and checks the final list: lost
// counts creates missing right after their save plus each process's last
// page missing at the end; resurrected counts deleted pages seen again,
// by a worker or in the final list.
func skewCounts(results []skewResult, final []entitymemory.Entity) (created, deleted, lost, resurrected int, conflicts int64) {
	back := map[string]bool{}
	for _, r := range results {
		created += r.Created
		deleted += len(r.Deleted)
		lost += r.Lost
		conflicts += r.Conflicts
		if r.Last != "" && !hasEntity(final, r.Last) {
			lost++
		}
		for _, id := range r.Resurrected {
			back[id] = true
		}
		for _, id := range r.Deleted {
			if hasEntity(final, id) {
				back[id] = true
			}
		}
	}
	return created, deleted, lost, len(back), conflicts
}

func skewLabel(procs int) string {
	var parts []string
	for p := range procs {
		parts = append(parts, fmt.Sprintf("%+v", skews[p%len(skews)]))
	}
	return strings.Join(parts, ", ")
}

// TestEntitySkew runs processes with clocks up to an hour apart creating
// and deleting entities of one resource, on SQLite and Redis: no page
// just created is missing, no deleted page comes back.
func TestEntitySkew(t *testing.T) {
	parallelInMakeTest(t)
	procs, rounds := pick(6, 3), pick(300, 25)
	for _, spec := range sharedBackends(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			if spec.Backend == "redis" {
				spec.Namespace += "entity-skew:"
			}
			results, final, elapsed := runEntitySkew(t, spec, procs, rounds, false)
			created, deleted, lost, back, conflicts := skewCounts(results, final)
			if lost != 0 || back != 0 {
				t.Errorf("%d pages lost, %d deleted pages resurrected; final list %v", lost, back, entityIDs(final))
			}
			if len(final) != procs {
				t.Errorf("final list holds %d pages, want one per process: %v", len(final), entityIDs(final))
			}
			t.Logf("FIGURE entity-skew %s: %d processes (clocks %s), %d creates and %d deletes in %v, lost %d, resurrected %d, %d CAS conflicts",
				spec.Backend, procs, skewLabel(procs), created, deleted, elapsed.Round(time.Millisecond), lost, back, conflicts)
		})
	}
}

// TestEntitySkewControl runs the workers of TestEntitySkew with the
// pre-fix save (a union ordered by wall clock): pages are lost and
// deleted pages come back, which shows that TestEntitySkew can see both.
func TestEntitySkewControl(t *testing.T) {
	if !heavy() {
		t.Skip("the negative control runs with " + heavyEnv + "=1")
	}
	procs, rounds := 6, 300
	for _, spec := range sharedBackends(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			if spec.Backend == "redis" {
				spec.Namespace += "entity-skew-control:"
			}
			results, final, elapsed := runEntitySkew(t, spec, procs, rounds, true)
			created, deleted, lost, back, conflicts := skewCounts(results, final)
			if lost == 0 || back == 0 {
				t.Errorf("wall-clock merge: %d lost, %d resurrected: the scenario cannot see both", lost, back)
			}
			t.Logf("FIGURE entity-skew control %s: wall-clock merge, %d processes (clocks %s), %d creates and %d deletes in %v, lost %d, resurrected %d, %d CAS conflicts",
				spec.Backend, procs, skewLabel(procs), created, deleted, elapsed.Round(time.Millisecond), lost, back, conflicts)
		})
	}
}

func entityIDs(list []entitymemory.Entity) []string {
	ids := make([]string, len(list))
	for i, e := range list {
		ids[i] = e.ID
	}
	return slices.SortedFunc(slices.Values(ids), cmp.Compare[string])
}
