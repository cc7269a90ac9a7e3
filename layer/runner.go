package layer

import (
	"sync"
	"time"
)

// This file is the pool of runner goroutines the hook batches run on
// (see run.go).
//
// Runners are reused: a runner that has finished its part of a batch
// parks, and the next batch wakes it instead of starting a goroutine. A
// fresh goroutine starts with a small stack, and hooks that encode JSON
// grow it, copying it several times: that cost more than the hooks
// themselves. A reused runner keeps its grown stack (the garbage
// collector shrinks an idle one gradually). Idle runners are a LIFO
// stack, so the most recently used (warmest) runner goes first and the
// others age at the bottom; a runner idle for runnerIdle is told to exit,
// so a process that stops using stacks ends up with no runner.
//
// The hand-off costs a mutex and a send on the runner's own channel,
// which readies the runner on the caller's P, as a go statement would.

// runnerIdle is how long a runner stays parked, unused, before it exits.
const runnerIdle = time.Second

// runReq asks a runner for b.runFrom(i). The zero runReq tells it to
// exit.
type runReq struct {
	b *batch
	i int
}

// runner is a reusable goroutine.
type runner struct {
	work      chan runReq // capacity 1: a send to an idle runner never blocks
	idleSince int64       // monoNow() when it last parked; guarded by runners.mu
}

var runners struct {
	mu      sync.Mutex
	idle    []*runner // parked runners, the longest idle first
	reaping bool      // a reap is scheduled
}

// startRunner runs b.runFrom(i) on a parked runner, or on a new one.
func startRunner(b *batch, i int) {
	runners.mu.Lock()
	if n := len(runners.idle); n > 0 {
		r := runners.idle[n-1]
		runners.idle[n-1] = nil
		runners.idle = runners.idle[:n-1]
		runners.mu.Unlock()
		r.work <- runReq{b, i}
		return
	}
	runners.mu.Unlock()
	r := &runner{work: make(chan runReq, 1)}
	go r.loop(runReq{b, i})
}

// loop serves requests until it is told to exit.
func (r *runner) loop(req runReq) {
	for req.b != nil {
		req.b.runFrom(req.i)
		req = runReq{} // keep nothing of the batch while parked
		runners.mu.Lock()
		r.idleSince = monoNow()
		runners.idle = append(runners.idle, r)
		if !runners.reaping {
			runners.reaping = true
			time.AfterFunc(runnerIdle, reapRunners)
		}
		runners.mu.Unlock()
		req = <-r.work
	}
}

// reapRunners tells the runners parked for runnerIdle or longer to exit,
// and schedules itself again while runners are parked.
func reapRunners() {
	now := monoNow()
	runners.mu.Lock()
	defer runners.mu.Unlock()
	n := 0
	for n < len(runners.idle) && now-runners.idle[n].idleSince >= int64(runnerIdle) {
		runners.idle[n].work <- runReq{}
		n++
	}
	m := copy(runners.idle, runners.idle[n:])
	clear(runners.idle[m:])
	runners.idle = runners.idle[:m]
	if m == 0 {
		runners.reaping = false
		return
	}
	time.AfterFunc(time.Duration(runners.idle[0].idleSince+int64(runnerIdle)-now), reapRunners)
}
