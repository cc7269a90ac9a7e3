package layer_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
)

// TestTrust20_AbandonedHooksBounded: a hook that ignores its context
// kept one goroutine per run forever (each run has its own stack, so the
// per-stack serialisation did not help). Now at most
// maxAbandonedHooks hooks of one layer run past their deadline at
// a time; later calls fail at once, without starting the hook, until
// they return.
func TestTrust20_AbandonedHooksBounded(t *testing.T) {
	release := make(chan struct{})
	var running, maxRunning atomic.Int32
	stuck := layer.Func(layer.Spec{ID: "stuck", Timeout: 5 * time.Millisecond},
		func(ctx context.Context, q layer.Query) ([]layer.Item, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
			if q.Text == "hang" {
				<-release // ignores ctx
			}
			return []layer.Item{{Text: "ok"}}, nil
		})
	// One stack per run, as an agent makes, until five calls have been
	// refused (a hook abandoned before its goroutine got to start it is
	// not stuck, so under load this may take a few more runs).
	runs, refused := 0, 0
	for ; refused < 5 && runs < 10*maxAbandonedHooks; runs++ {
		s := initStack(t, layer.StackConfig{Layers: []layer.Layer{stuck}})
		start := time.Now()
		_, err := s.Recall(t.Context(), layer.Query{Text: "hang"}, nil)
		if !errors.Is(err, layer.ErrTimeout) {
			t.Fatalf("run %d: Recall = %v, want ErrTimeout", runs, err)
		}
		if strings.Contains(err.Error(), "still running") {
			refused++
			if d := time.Since(start); d > time.Second {
				t.Errorf("run %d: a refused Recall took %v", runs, d)
			}
		}
	}
	time.Sleep(20 * time.Millisecond) // let started hooks reach the counter
	if got := maxRunning.Load(); got > int32(maxAbandonedHooks) {
		t.Errorf("%d runs left %d hooks running past their deadline, want at most %d (maxAbandonedHooks)", runs, got, maxAbandonedHooks)
	}
	if refused < 5 {
		t.Errorf("%d of %d calls refused, want 5", refused, runs)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for running.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// Once they return, the layer's hooks run again.
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{stuck}})
	deadline = time.Now().Add(5 * time.Second)
	for {
		out, err := s.Recall(t.Context(), layer.Query{}, nil)
		if err == nil && len(out) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the stuck hooks returned: Recall = %v, %v", out, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// maxAbandonedHooks is the stack's bound on a layer's abandoned hooks
// still running (see layer/run.go).
const maxAbandonedHooks = 16
