package reliability

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
	"github.com/memlayer/memlayer/storage"
	"github.com/memlayer/memlayer/workingmemory"
)

// The landed-writes scenario (issue 9, item 7): under short deadlines
// SQLite and Redis sometimes apply a write and still return a context
// error. Worker processes delete the first element of their own list in
// a shared resource-scoped scratchpad, one index-based "$delete" per
// update, under random deadlines, and behave like a model: an update
// reported as failed is sent again. Every element deleted beyond the
// number of deletions asked for is a duplicated delete.

// landedArgs are the arguments of the landed-writes workers.
type landedArgs struct {
	Store    storeSpec `json:"store"`
	Resource string    `json:"resource"`
	Proc     int       `json:"proc"`
	Deletes  int       `json:"deletes"`
	MaxWait  int64     `json:"max_wait_ns"` // deadlines are uniform in [0, MaxWait)
	// Control tells the "model" an update failed whenever the store
	// reported its write as failed, as the layer did before it read
	// failed writes back.
	Control bool `json:"control,omitempty"`
}

// landedResult is what a landed-writes worker reports.
type landedResult struct {
	Attempts   int   `json:"attempts"`
	FailedPuts int64 `json:"failed_puts"` // Puts that returned an error other than a conflict
	Landed     int64 `json:"landed"`      // of those, the writes that were applied all the same (found in the stored write log)
	NotApplied int   `json:"not_applied"` // updates reported as not applied (and sent again)
	Maybe      int   `json:"maybe"`       // updates reported as ErrMaybeApplied
}

// listSlack is how many more elements each list holds than are deleted.
const listSlack = 20

func landedList(proc int) string { return fmt.Sprintf("list-%02d", proc) }

func init() { workers["landed-writer"] = landedWriter }

// probeStore reads back every write its store reports as failed, and
// counts those that landed.
type probeStore struct {
	storage.Store
	failed, landed atomic.Int64
	putFailed      atomic.Bool // a Put failed since the flag was cleared
}

func (p *probeStore) Put(ctx context.Context, key string, value []byte, ifVersion int64) (int64, error) {
	v, err := p.Store.Put(ctx, key, value, ifVersion)
	if err != nil && !errors.Is(err, storage.ErrConflict) {
		p.failed.Add(1)
		p.putFailed.Store(true)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		it, gerr := p.Store.Get(rctx, key)
		cancel()
		// The write landed if its ID (the last of the write log it
		// carries) is in the stored log, even under later writes.
		if ours := writeIDs(value); gerr == nil && len(ours) >= 16 && containsID(writeIDs(it.Value), ours[len(ours)-16:]) {
			p.landed.Add(1)
		}
	}
	return v, err
}

// writeIDs returns the IDs of the write log a scratchpad record carries
// (16 hex digits each, oldest first), or "".
func writeIDs(record []byte) string {
	var r struct {
		Writes string `json:"$writes"`
	}
	_ = json.Unmarshal(record, &r)
	_, ids, _ := strings.Cut(r.Writes, " ")
	return ids
}

func containsID(ids, id string) bool {
	for i := 0; i+16 <= len(ids); i += 16 {
		if ids[i:i+16] == id {
			return true
		}
	}
	return false
}

// listLen reads the stored length of a worker's list.
func listLen(ctx context.Context, st storage.Store, key, list string) (int, error) {
	it, err := st.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	b, err := workingmemory.StoredState(it.Value)
	if err != nil {
		return 0, err
	}
	var state map[string][]any
	if err := json.Unmarshal(b, &state); err != nil {
		return 0, err
	}
	return len(state[list]), nil
}

func landedWriter(ctx context.Context, raw string, in *bufio.Scanner, out *lineWriter) error {
	var args landedArgs
	st, closeFn, err := openWorkerStore(ctx, raw, &args)
	if err != nil {
		return err
	}
	defer closeFn()
	probe := &probeStore{Store: st}
	wm, err := workingmemory.New(workingmemory.Config{Spec: layer.Spec{Scope: layer.ScopeResource}, MaxBytes: 1 << 20})
	if err != nil {
		return err
	}
	bound, err := wm.Init(ctx, layer.Env{ThreadID: fmt.Sprintf("thread-%d", args.Proc), ResourceID: args.Resource, Store: probe})
	if err != nil {
		return err
	}
	pad := bound.(*workingmemory.Layer)
	list := landedList(args.Proc)
	elems := make([]int, args.Deletes+listSlack)
	for i := range elems {
		elems[i] = i
	}
	init, _ := json.Marshal(map[string]any{list: elems})
	if err := pad.Update(ctx, init); err != nil {
		return err
	}
	key := storage.LayerKey(workingmemory.DefaultStorageID, storage.ResourceScope(args.Resource), "state")
	out.Printf("ready")
	if err := waitFor(in, "go"); err != nil {
		return err
	}
	var res landedResult
	patch := json.RawMessage(fmt.Sprintf(`{"$delete":[%q]}`, list+"/0"))
	for done := 0; done < args.Deletes; {
		res.Attempts++
		probe.putFailed.Store(false)
		uctx, cancel := context.WithTimeout(ctx, time.Duration(rand.Int64N(args.MaxWait)))
		err := pad.Update(uctx, patch)
		cancel()
		if args.Control && probe.putFailed.Load() && err == nil {
			err = errors.New("persist failed") // what the layer used to say
		}
		switch {
		case err == nil:
			done++
		case errors.Is(err, workingmemory.ErrMaybeApplied):
			// A careful model looks at the state before sending it again.
			res.Maybe++
			n, rerr := listLen(ctx, st, key, list)
			if rerr != nil {
				return rerr
			}
			if n == len(elems)-done-1 {
				done++
			}
		default:
			res.NotApplied++
		}
	}
	res.FailedPuts, res.Landed = probe.failed.Load(), probe.landed.Load()
	b, _ := json.Marshal(res)
	out.Printf("result %s", b)
	return nil
}

// runLanded runs procs landed-writers and returns their summed results
// and the number of duplicated deletes.
func runLanded(t *testing.T, spec storeSpec, procs, deletes int, maxWait time.Duration, control bool) (landedResult, int) {
	t.Helper()
	const resource = "team-1"
	results, _ := runWorkers[landedResult](t, "landed-writer", procs, 10*time.Minute, func(p int) any {
		return landedArgs{Store: spec, Resource: resource, Proc: p, Deletes: deletes, MaxWait: int64(maxWait), Control: control}
	})
	var sum landedResult
	for _, r := range results {
		sum.Attempts += r.Attempts
		sum.FailedPuts += r.FailedPuts
		sum.Landed += r.Landed
		sum.NotApplied += r.NotApplied
		sum.Maybe += r.Maybe
	}
	st := mustOpen(t, spec)
	dup := 0
	for p := range procs {
		n, err := listLen(t.Context(), st, storage.LayerKey(workingmemory.DefaultStorageID, storage.ResourceScope(resource), "state"), landedList(p))
		if err != nil {
			t.Fatal(err)
		}
		dup += listSlack - n
	}
	return sum, dup
}

// landedWait is the longest deadline of an update, per backend: long
// enough for some writes to complete, short enough for many to be cut.
func landedWait(backend string) time.Duration {
	if backend == "redis" {
		return 600 * time.Microsecond
	}
	return 1500 * time.Microsecond
}

// TestWritesLandedDespiteContextError: writes the store applies while
// returning a context error are reported as applied, so no deletion is
// repeated.
func TestWritesLandedDespiteContextError(t *testing.T) {
	procs, deletes := pick(4, 2), pick(300, 40)
	for _, spec := range sharedBackends(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			r, dup := runLanded(t, spec, procs, deletes, landedWait(spec.Backend), false)
			if dup != 0 {
				t.Errorf("%d duplicated deletes", dup)
			}
			t.Logf("FIGURE landed-writes %s: %d processes x %d index deletes under deadlines (%d attempts): %d writes reported failed by the store, %d of them landed anyway; %d updates reported not applied, %d maybe applied; %d duplicated deletes",
				spec.Backend, procs, deletes, r.Attempts, r.FailedPuts, r.Landed, r.NotApplied, r.Maybe, dup)
		})
	}
}

// TestWritesLandedControl tells the model an update failed whenever the
// store reported its write as failed, as the layer did before: writes
// that landed anyway are then repeated and delete a second element.
func TestWritesLandedControl(t *testing.T) {
	if !heavy() {
		t.Skip("the negative control runs with " + heavyEnv + "=1")
	}
	procs, deletes := 4, 300
	for _, spec := range sharedBackends(t) {
		t.Run(spec.Backend, func(t *testing.T) {
			if spec.Backend == "sqlite" || spec.Backend == "postgres" {
				// A started SQLite or PostgreSQL write runs to its end
				// and is reported as it ended (issue 23 item 8,
				// TestTrust308; storage/postgres's acquire): no write
				// lands while reported failed, so there is nothing for
				// the control to miss.
				t.Skip("storage/" + spec.Backend + " does not report a committed write as failed")
			}
			// Whether a write lands despite its deadline is up to timing:
			// on SQLite few do (1 of 39 in one CI run), so a run may see
			// no duplicate by chance. Up to three runs must show one.
			var r landedResult
			var dup int
			for attempt := 0; attempt < 3 && dup == 0; attempt++ {
				r, dup = runLanded(t, spec, procs, deletes, landedWait(spec.Backend), true)
			}
			if dup == 0 {
				t.Fatalf("no delete duplicated in three runs (%d of %d failed writes landed in the last): the scenario cannot see the failure", r.Landed, r.FailedPuts)
			}
			t.Logf("FIGURE landed-writes control %s: reporting the store's error as the outcome, %d of %d failed writes had landed and %d deletes were duplicated",
				spec.Backend, r.Landed, r.FailedPuts, dup)
		})
	}
}
