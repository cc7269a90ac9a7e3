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
// A stack method (Recall, Store, ...) builds a batch of jobs, one per
// layer, and waits for it. A hook never runs on the caller's goroutine, so
// a hook that ignores its context cannot block the caller past its
// timeout. To keep the hot path cheap, a sequential batch (Recall,
// Snapshot, Clear and Stats run in slot order) is run by a single runner
// goroutine that calls the hooks one after the other, and the caller
// sleeps until the whole batch is done or the running hook's deadline
// passes. When a hook outlives its deadline, the caller abandons it (its
// result is dropped, its context cancelled) and starts another runner for
// the rest of the batch; the abandoned runner stops once the slow hook
// returns. A concurrent batch (Store) gives each job its own runner.
// Either way the caller wakes once per batch in the common case, instead
// of once per hook, and no per-hook context.WithTimeout (which registers
// with the parent and starts a timer) is needed: the caller, which waits
// anyway, cancels the hook's context itself. Before it waits, the caller
// yields its P once, so fast hooks usually finish on the same P before
// the caller would park: no timer is armed and no other thread is woken.
// Slow hooks are unaffected: the caller resumes as soon as the runner
// blocks or is preempted, and then waits with a timer for the running
// hook's deadline. Runners are goroutines reused across batches and
// stacks (see runner.go).
//
// A hook that ignores its context keeps its runner after it is abandoned,
// until it returns; Go cannot stop it. Each run has a stack of its own, so
// without a bound a hook stuck for good would leak a goroutine per run.
// At most MaxAbandonedHooks abandoned hooks of one layer may be running
// at a time, counted across all stacks of the process; beyond that, that
// layer's hooks are refused at once (an error wrapping ErrTimeout) until
// some return.

// MaxAbandonedHooks is how many hook calls of one layer may still be
// running after the stack gave up on them at their timeout, across all
// the stacks of the process. A layer is told apart by the type of the
// value registered in the stack and its ID. While that many are running,
// every further hook call of the layer fails at once with an error
// wrapping [ErrTimeout], without calling the hook.
const MaxAbandonedHooks = 16

// Job states. A job goes pending → running → done when the hook returns
// in time; pending → abandoned when the caller gives up before the hook
// starts (it then never runs); running → abandonedRunning when the caller
// gives up while the hook runs; refused when too many of the layer's
// hooks are stuck (see MaxAbandonedHooks).
const (
	jobPending          = iota // not resolved yet
	jobRunning                 // the hook is running
	jobDone                    // the runner finished it; result holds the error
	jobAbandoned               // the caller gave up on it; err holds why
	jobAbandonedRunning        // the caller gave up on it while it ran
	jobRefused                 // never started; err holds why
)

// epoch anchors the monotonic clock readings stored in jobs.
var epoch = time.Now()

func monoNow() int64 { return int64(time.Since(epoch)) }

// job is one hook call of one layer.
type job struct {
	e       *entry
	hook    string
	timeout time.Duration
	// run calls the hook. It may use the fields below as its input and
	// output; the caller reads outputs only when the job is done.
	run   func(ctx context.Context, j *job) error
	call  func(ctx context.Context) error // for runClosure
	query Query
	turn  *Turn
	items []Item
	data  json.RawMessage // Snapshot's output
	stats Stats           // Stats' output
	// late, when set, runs on the runner goroutine when the hook returns
	// after the caller gave up on it, to release what the hook produced
	// (a layer bound by a timed-out Init).
	late func()

	ctx    hookCtx
	start  atomic.Int64 // monoNow() when started, 0 before
	state  atomic.Int32
	result error // written by the runner before it marks the job done
	end    int64 // monoNow() when the runner finished
	err    error // why the caller abandoned the job; after runBatch, the final error
}

func runClosure(ctx context.Context, j *job) error { return j.call(ctx) }

// unresolved reports whether the caller still waits for j.
func (j *job) unresolved() bool {
	st := j.state.Load()
	return st == jobPending || st == jobRunning
}

// batch is a set of jobs one stack method waits for.
type batch struct {
	jobs       []job
	one        [1]job // backing array for single-hook batches
	concurrent bool
	remaining  atomic.Int32
	done       chan struct{}
}

func newBatch(n int, concurrent bool) *batch {
	b := &batch{concurrent: concurrent, done: make(chan struct{})}
	if n == 1 {
		b.jobs = b.one[:]
	} else {
		b.jobs = make([]job, n)
	}
	return b
}

// hookBatch returns a batch of hook with one job per enabled layer that
// implements T, in slot order, or nil when no layer does. A concurrent
// batch gives each job its own runner (Store); a sequential one runs them
// one after the other (Recall, Snapshot, Clear, Stats).
func hookBatch[T any](s *Stack, hook string, run func(context.Context, *job) error, concurrent bool) *batch {
	n := 0
	for _, e := range s.entries {
		if _, ok := As[T](e.live); ok && !e.disabled {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	b := newBatch(n, concurrent)
	i := 0
	for _, e := range s.entries {
		if _, ok := As[T](e.live); !ok || e.disabled {
			continue
		}
		j := &b.jobs[i]
		i++
		j.e, j.hook, j.run = e, hook, run
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

// runFrom runs the jobs from i on, in order, until one is abandoned (a
// new runner then takes over) or all are done.
func (b *batch) runFrom(i int) {
	for ; i < len(b.jobs); i++ {
		if b.jobs[i].state.Load() == jobRefused {
			continue
		}
		if !b.runJob(&b.jobs[i]) {
			return
		}
		if b.concurrent {
			return
		}
	}
}

// runJob runs one job and reports whether it finished before the caller
// gave up on it.
func (b *batch) runJob(j *job) bool {
	if j.state.Load() != jobPending {
		return false
	}
	now := time.Now()
	j.ctx.deadline = now.Add(j.timeout)
	j.start.Store(int64(now.Sub(epoch)))
	sem := j.e.sem
	select {
	case sem <- struct{}{}:
	default:
		// The layer is busy (a previous hook still running): wait for it
		// within this hook's deadline.
		select {
		case sem <- struct{}{}:
		case <-j.ctx.Done():
			return false
		}
	}
	if !j.state.CompareAndSwap(jobPending, jobRunning) {
		<-sem // abandoned while waiting for the layer
		return false
	}
	res := j.protected(sem)
	// Like the cancel of context.WithTimeout: whatever the hook started
	// under its context learns that the hook is over.
	j.ctx.cancel(context.Canceled)
	j.end = monoNow()
	j.result = res
	if !j.state.CompareAndSwap(jobRunning, jobDone) {
		// Too late: the caller counted the hook as stuck and dropped
		// its result.
		if j.late != nil {
			j.late()
		}
		j.e.stuck.Add(-1)
		return false
	}
	if b.remaining.Add(-1) == 0 {
		close(b.done)
	}
	return true
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
	return j.run(&j.ctx, j)
}

// abandon marks j as given up with err, cancels its context and reports
// whether the caller won the race against the runner. A hook still
// running counts as stuck until it returns.
func (b *batch) abandon(j *job, err, ctxErr error) bool {
	if !j.state.CompareAndSwap(jobPending, jobAbandoned) {
		j.e.stuck.Add(1) // before the swap, so the runner never takes it below zero
		if !j.state.CompareAndSwap(jobRunning, jobAbandonedRunning) {
			j.e.stuck.Add(-1)
			return false
		}
	}
	j.err = err
	j.ctx.cancel(ctxErr)
	b.remaining.Add(-1)
	return true
}

var timerPool = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// runBatch runs the batch's jobs, waits until each is done or abandoned,
// then wraps and reports the failures, leaving each job's final error
// (nil for success) in its err field.
func (s *Stack) runBatch(ctx context.Context, b *batch) {
	begin := monoNow()
	for i := range b.jobs {
		j := &b.jobs[i]
		j.timeout = j.e.timeouts.of(j.hook)
		j.ctx.Context = ctx
	}
	b.remaining.Store(int32(len(b.jobs)))
	for i := range b.jobs {
		j := &b.jobs[i]
		if n := j.e.stuck.Load(); n >= MaxAbandonedHooks {
			j.state.Store(jobRefused)
			j.err = fmt.Errorf("%w: not called: %d earlier calls of this layer's hooks are still running after their timeout (MaxAbandonedHooks)", ErrTimeout, n)
			b.remaining.Add(-1)
		}
	}
	if err := ctx.Err(); err != nil {
		// Nothing runs under a context that is already done.
		for i := range b.jobs {
			b.abandon(&b.jobs[i], err, err)
		}
	} else {
		if b.concurrent {
			for i := range b.jobs {
				if b.jobs[i].state.Load() != jobRefused {
					startRunner(b, i)
				}
			}
		} else if b.remaining.Load() > 0 {
			startRunner(b, 0)
		}
		// Let the runner go first on this P: fast hooks then finish
		// before the caller would park, saving the timer and the wake-up.
		runtime.Gosched()
		s.wait(ctx, b)
	}
	for i := range b.jobs {
		j := &b.jobs[i]
		var err error
		var d time.Duration
		if j.state.Load() == jobDone {
			err = j.result
			d = time.Duration(j.end - j.start.Load())
		} else {
			err = j.err
			if st := j.start.Load(); st != 0 {
				d = time.Duration(monoNow() - st)
			} else {
				d = time.Duration(monoNow() - begin)
			}
		}
		if err != nil {
			var le *Error
			if !errors.As(err, &le) || le.Layer != j.e.spec.ID {
				err = &Error{Layer: j.e.spec.ID, Hook: j.hook, Err: err}
			}
		}
		j.err = err
		s.report(ctx, j.e.spec.ID, j.hook, d, err)
	}
}

// wait sleeps until every job of b is resolved, abandoning the ones that
// outlive their deadline or all of them when ctx is done.
func (s *Stack) wait(ctx context.Context, b *batch) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
			timerPool.Put(timer)
		}
	}()
	for b.remaining.Load() > 0 {
		// Sleep until the earliest deadline a pending job can have: a
		// started job's start + timeout; a job not started yet cannot end
		// before now + its timeout.
		now := monoNow()
		next := int64(-1)
		for i := range b.jobs {
			j := &b.jobs[i]
			if !j.unresolved() {
				continue
			}
			dl := now + int64(j.timeout)
			if st := j.start.Load(); st != 0 {
				dl = st + int64(j.timeout)
			}
			if next < 0 || dl < next {
				next = dl
			}
		}
		if next < 0 {
			return
		}
		if timer == nil {
			timer = timerPool.Get().(*time.Timer)
		}
		timer.Reset(time.Duration(next - now))
		select {
		case <-b.done:
			return
		case <-ctx.Done():
			err := ctx.Err()
			for i := range b.jobs {
				b.abandon(&b.jobs[i], err, err)
			}
			return
		case <-timer.C:
			now := monoNow()
			for i := range b.jobs {
				j := &b.jobs[i]
				st := j.start.Load()
				if st == 0 || now-st < int64(j.timeout) || !j.unresolved() {
					continue
				}
				err := fmt.Errorf("%w after %v", ErrTimeout, j.timeout)
				if b.abandon(j, err, context.DeadlineExceeded) && !b.concurrent && i+1 < len(b.jobs) {
					startRunner(b, i+1)
				}
			}
		}
	}
}

// call runs one hook of one layer through the runner and returns its
// (wrapped, already reported) error.
func (s *Stack) call(ctx context.Context, e *entry, hook string, fn func(context.Context) error) error {
	return s.callLate(ctx, e, hook, fn, nil)
}

// callLate is call with a clean-up for a result that arrives after the
// caller gave up (see job.late).
func (s *Stack) callLate(ctx context.Context, e *entry, hook string, fn func(context.Context) error, late func()) error {
	b := newBatch(1, false)
	j := &b.jobs[0]
	j.e, j.hook, j.run, j.call, j.late = e, hook, runClosure, fn, late
	s.runBatch(ctx, b)
	return j.err
}

// closeLate closes a layer produced by a hook that returned too late, so
// that a timed-out Init or OnSpawn leaks nothing. It runs on the runner
// goroutine, bounded by the layer's Close timeout.
func closeLate(l Layer, timeout time.Duration) {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		if c, ok := As[Closer](l); ok {
			_ = c.Close(ctx)
		} else if c, ok := As[io.Closer](l); ok {
			_ = c.Close()
		}
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// hookCtx is the context a hook runs under: the caller's values and
// cancellation plus the hook's deadline. The caller, which waits for the
// hook, cancels it when the deadline passes or its own context is done.
type hookCtx struct {
	context.Context
	deadline time.Time

	mu   sync.Mutex
	done chan struct{}
	err  error
}

// Deadline returns the earlier of the hook's and the parent's deadlines.
func (c *hookCtx) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done returns a channel closed when the hook is abandoned.
func (c *hookCtx) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if c.err != nil {
			close(c.done)
		}
	}
	return c.done
}

// Err returns why Done was closed: DeadlineExceeded when the hook timed
// out, the parent's error when the caller's context ended, Canceled once
// the hook has returned; nil before. As the context contract requires, it
// is non-nil exactly when Done is closed: a parent found cancelled here
// cancels the hook's context on the spot (the waiting caller would a
// moment later).
func (c *hookCtx) Err() error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if perr := c.Context.Err(); perr != nil {
		c.cancel(perr)
		c.mu.Lock()
		err = c.err
		c.mu.Unlock()
	}
	return err
}

func (c *hookCtx) cancel(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	if c.done != nil {
		close(c.done)
	}
}

// String names the context in panics and logs.
func (c *hookCtx) String() string { return "layer.hookContext" }

// stuckKey tells layers apart for MaxAbandonedHooks: the type of the
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
