package layer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// This file is the hook runner: how the stack calls hooks under timeouts
// without letting one slow layer hold up the others.
//
// Every hook call runs on a goroutine other than the caller's, under
// context.WithTimeout of the caller's context and the hook's timeout, and
// the caller waits for it or for that context, whichever ends first. At
// the deadline the caller abandons the hook (its result is dropped) and
// goes on, so a hook that ignores its context cannot hold up the caller.
// A stack method (Recall, Store, ...) builds a batch of jobs, one per
// layer: a sequential batch (Recall, Snapshot, Clear) runs them one
// after the other in slot order on one goroutine, replaced only when
// the caller abandons a hook it is running; a concurrent one (Store)
// starts a goroutine per job and waits for each. Hooks of one layer never
// overlap: each holds the layer's semaphore while it runs.
//
// A tool call (CallTool) whose caller's context ends while it runs is
// the exception: it is told to stop (its context ends), and its verdict
// is waited for up to settleTimeout more (never past its own timeout),
// since a write it made may have landed; abandoned after that, its error
// says that whether it took effect is unknown.
//
// A hook that ignores its context keeps its goroutine after it is
// abandoned, until it returns; Go cannot stop it. Each run has a stack of
// its own, so without a bound a hook stuck for good would leak a goroutine
// per run. At most maxAbandonedHooks abandoned hooks of one layer may be
// running at a time, counted across all stacks of the process; beyond
// that, that layer's hooks are refused at once (an error wrapping
// ErrTimeout) until some return.

// settleTimeout is how long CallTool still waits for a running tool
// call once its caller's context ended: the call's own verdict (the
// scratchpad reads back a write that may have landed) is worth more than
// the context's error.
const settleTimeout = 5 * time.Second

// maxAbandonedHooks is how many hook calls of one layer may still be
// running after the stack gave up on them at their timeout, across all
// the stacks of the process. A layer is told apart by the type of the
// value registered in the stack and its ID. While that many are running,
// every further hook call of the layer fails at once with an error
// wrapping [ErrTimeout], without calling the hook.
const maxAbandonedHooks = 16

// Job states. A job goes pending → running → done when the hook returns
// in time; pending → abandoned when the caller gives up before the hook
// starts (it then never runs); running → abandonedRunning when the caller
// gives up while the hook runs.
const (
	jobPending = iota
	jobRunning
	jobDone
	jobAbandoned
	jobAbandonedRunning
)

// job is one hook call of one layer.
type job struct {
	e    *entry
	hook string
	// run calls the hook. It may use the fields below as its input and
	// output; the caller reads outputs only when the job is done.
	run   func(ctx context.Context, j *job) error
	call  func(ctx context.Context) error // for runClosure
	query Query
	turn  *Turn
	items []Item
	data  json.RawMessage // Snapshot's output
	// late, when set, runs on the hook's goroutine when the hook returns
	// after the caller gave up on it, to release what the hook produced
	// (a layer bound by a timed-out Init).
	late func()

	// grace, when positive, is how long the caller still waits for a
	// running hook once the caller's context ended before the hook's
	// timeout (see settleTimeout): a tool call's verdict.
	grace time.Duration

	ctx    context.Context // the hook's: the caller's, with the timeout
	cancel context.CancelFunc
	done   chan struct{} // closed when the job is done
	state  atomic.Int32
	begin  time.Time
	result error         // the hook's error, once done
	d      time.Duration // how long the hook took, once done
	err    error         // after runBatch, the final error
}

func runClosure(ctx context.Context, j *job) error { return j.call(ctx) }

// batch is a set of jobs one stack method waits for.
type batch struct {
	jobs       []job
	one        [1]job // backing array for single-hook batches
	concurrent bool
}

func newBatch(n int, concurrent bool) *batch {
	b := &batch{concurrent: concurrent}
	if n == 1 {
		b.jobs = b.one[:]
	} else {
		b.jobs = make([]job, n)
	}
	return b
}

// hookBatch returns a batch of hook with one job per enabled layer that
// implements T and whose ID keep accepts (every one when keep is nil), in
// slot order, or nil when there is none. A concurrent batch runs its jobs
// at the same time (Store); a sequential one runs them one after the other
// (Recall, Snapshot, Clear).
func hookBatch[T any](s *Stack, hook string, run func(context.Context, *job) error, concurrent bool, keep func(id string) bool) *batch {
	var buf [16]*entry // the layers of a typical stack, without a heap allocation
	es := buf[:0]
	for _, e := range s.entries {
		if _, ok := As[T](e.live); ok && !e.disabled && (keep == nil || keep(e.spec.ID)) {
			es = append(es, e)
		}
	}
	if len(es) == 0 {
		return nil
	}
	b := newBatch(len(es), concurrent)
	for i, e := range es {
		b.jobs[i].e, b.jobs[i].hook, b.jobs[i].run = e, hook, run
	}
	return b
}

// joinErrs joins the final errors of b's jobs, after runBatch.
func (b *batch) joinErrs() error {
	var errs []error
	for i := range b.jobs {
		if err := b.jobs[i].err; err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// runBatch runs the batch's jobs and waits until each is done or
// abandoned, then wraps and reports the failures, leaving each job's
// final error (nil for success) in its err field.
func (s *Stack) runBatch(ctx context.Context, b *batch) {
	if b.concurrent {
		runConcurrently(ctx, b.jobs)
	} else {
		runInOrder(ctx, b.jobs)
	}
	for i := range b.jobs {
		j := &b.jobs[i]
		if j.err != nil {
			var le *Error
			if !errors.As(j.err, &le) || le.Layer != j.e.spec.ID {
				j.err = &Error{Layer: j.e.spec.ID, Hook: j.hook, Err: j.err}
			}
		}
		s.report(ctx, j.e.spec.ID, j.hook, j.d, j.err)
	}
}

// runConcurrently runs each job on a goroutine of its own and waits for
// them. After starting hooks, the caller yields so that they run first
// on this P, and fast hooks are done before the caller would park to
// wait for them.
func runConcurrently(ctx context.Context, jobs []job) {
	for i := range jobs {
		if j := &jobs[i]; j.prepare(ctx) {
			go j.execute()
		}
	}
	runtime.Gosched()
	for i := range jobs {
		jobs[i].wait(ctx)
	}
}

// runInOrder runs the jobs one after another on one goroutine, waiting
// for each. One that is still running a hook the caller abandoned is
// left to finish it and exit, and the next job gets a new goroutine.
func runInOrder(ctx context.Context, jobs []job) {
	var next chan *job
	for i := range jobs {
		j := &jobs[i]
		if !j.prepare(ctx) {
			continue
		}
		if next == nil {
			next = make(chan *job, 1)
			go runJobs(next)
		}
		next <- j
		runtime.Gosched() // as in runConcurrently
		if !j.wait(ctx) {
			close(next)
			next = nil
		}
	}
	if next != nil {
		close(next)
	}
}

// prepare readies the job to run under its timeout and reports whether
// it should: not when ctx is already done or too many of the layer's
// hooks are stuck (the job then holds its error).
func (j *job) prepare(ctx context.Context) bool {
	j.begin = time.Now()
	if err := ctx.Err(); err != nil {
		j.state.Store(jobAbandoned) // nothing runs under a context that is already done
		j.err, j.d = err, time.Since(j.begin)
		return false
	}
	if n := j.e.stuck.Load(); n >= maxAbandonedHooks {
		j.state.Store(jobAbandoned)
		j.d = time.Since(j.begin)
		j.err = fmt.Errorf("%w: not called: %d earlier calls of this layer's hooks are still running after their timeout", ErrTimeout, n)
		return false
	}
	j.ctx, j.cancel = context.WithTimeout(ctx, j.e.timeoutOf(j.hook))
	j.done = make(chan struct{})
	return true
}

// runJobs executes the jobs it is sent, in order, until next is closed.
func runJobs(next <-chan *job) {
	for j := range next {
		j.execute()
	}
}

// execute runs on the job's goroutine: it waits for the layer to be free
// within the hook's deadline, calls the hook and hands over the result,
// or, when the caller gave up meanwhile, drops it.
func (j *job) execute() {
	sem := j.e.sem
	select {
	case sem <- struct{}{}:
	case <-j.ctx.Done():
		return // the caller abandons the job
	}
	if !j.state.CompareAndSwap(jobPending, jobRunning) {
		<-sem // abandoned while waiting for the layer
		return
	}
	res := j.protected(sem)
	d := time.Since(j.begin)
	if j.state.CompareAndSwap(jobRunning, jobDone) {
		j.result, j.d = res, d
		close(j.done)
		j.cancel() // whatever the hook started under its context learns that it is over
		return
	}
	// Too late: the caller counted the hook as stuck and dropped it.
	j.cancel()
	if j.late != nil {
		j.late()
	}
	j.e.stuck.Add(-1)
}

// protected calls the hook with panics recovered and releases the layer
// when it returns.
func (j *job) protected(sem chan struct{}) (err error) {
	defer func() {
		<-sem
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, r)
		}
	}()
	return j.run(j.ctx, j)
}

// wait waits until the job is done or its context ends; in the latter
// case it abandons the job, unless the hook won the race. It reports
// whether the job ended without being abandoned.
func (j *job) wait(parent context.Context) bool {
	if j.done == nil {
		return true // never started
	}
	select {
	case <-j.done:
	case <-j.ctx.Done():
		if j.abandoned(parent) {
			return false
		}
	}
	j.err = j.result
	return true
}

// abandoned abandons the job, whose context ended, and reports true;
// unless its running hook returns within the job's grace (when the
// caller's context ended) or won the race, which it waits for.
func (j *job) abandoned(parent context.Context) bool {
	running := j.state.Load() == jobRunning
	if running && j.grace > 0 && parent.Err() != nil && j.settled() {
		return false
	}
	if j.abandon() {
		j.cancel()
		j.d = time.Since(j.begin)
		j.err = j.abandonedErr(parent, running)
		return true
	}
	<-j.done
	return false
}

// abandonedErr is the error of a job abandoned when its context ended:
// the caller's error, else a timeout; a hook that was running when a
// grace was due may have taken effect, and the error says so.
func (j *job) abandonedErr(parent context.Context, running bool) error {
	err := parent.Err()
	if err == nil {
		err = fmt.Errorf("%w after %v", ErrTimeout, j.e.timeoutOf(j.hook))
	}
	if running && j.grace > 0 {
		err = fmt.Errorf("%w (the call was still running when it was abandoned: whether it took effect is unknown)", err)
	}
	return err
}

// settled waits for a running hook whose caller's context ended, up to
// the job's grace and never past the hook's own timeout, and reports
// whether it returned meanwhile.
func (j *job) settled() bool {
	left := min(j.grace, time.Until(j.begin.Add(j.e.timeoutOf(j.hook))))
	if left <= 0 {
		return false
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-j.done:
		return true
	case <-t.C:
		return false
	}
}

// abandon gives up on the job and reports whether it did so before the
// hook finished. A hook still running counts as stuck until it returns.
func (j *job) abandon() bool {
	if j.state.CompareAndSwap(jobPending, jobAbandoned) {
		return true
	}
	j.e.stuck.Add(1) // before the swap, so the hook's goroutine never takes it below zero
	if j.state.CompareAndSwap(jobRunning, jobAbandonedRunning) {
		return true
	}
	j.e.stuck.Add(-1)
	return false
}

// call runs one hook of one layer on its own goroutine and returns its
// (wrapped, already reported) error.
func (s *Stack) call(ctx context.Context, e *entry, hook string, fn func(context.Context) error) error {
	return s.callLate(ctx, e, hook, fn, nil)
}

// callLate is call with a clean-up for a result that arrives after the
// caller gave up (see job.late).
func (s *Stack) callLate(ctx context.Context, e *entry, hook string, fn func(context.Context) error, late func()) error {
	return s.callJob(ctx, e, hook, fn, late, 0)
}

// callJob runs one hook call; see job.late and job.grace.
func (s *Stack) callJob(ctx context.Context, e *entry, hook string, fn func(context.Context) error, late func(), grace time.Duration) error {
	b := newBatch(1, false)
	j := &b.jobs[0]
	j.e, j.hook, j.run, j.call, j.late, j.grace = e, hook, runClosure, fn, late, grace
	s.runBatch(ctx, b)
	return j.err
}

// closeLate closes a layer produced by a hook that returned too late, so
// that a timed-out Init or OnSpawn leaks nothing. It runs on the hook's
// goroutine, which counts as stuck until it returns, under the layer's
// Close timeout.
func closeLate(l Layer, timeout time.Duration) {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	defer func() { _ = recover() }()
	if c, ok := As[Closer](l); ok {
		_ = c.Close(ctx)
	} else if c, ok := As[io.Closer](l); ok {
		_ = c.Close()
	}
}

// stuckKey tells layers apart for maxAbandonedHooks: the type of the
// registered value and the layer's ID.
type stuckKey struct {
	typ reflect.Type
	id  string
}

// stuckCounts holds, per stuckKey, an *atomic.Int32: how many abandoned
// hooks of that layer are still running.
var stuckCounts sync.Map

// stuckCount returns the counter of abandoned, still running hooks of
// layer l with the given ID.
func stuckCount(l Layer, id string) *atomic.Int32 {
	k := stuckKey{reflect.TypeOf(l), id}
	if c, ok := stuckCounts.Load(k); ok {
		return c.(*atomic.Int32)
	}
	c, _ := stuckCounts.LoadOrStore(k, new(atomic.Int32))
	return c.(*atomic.Int32)
}
