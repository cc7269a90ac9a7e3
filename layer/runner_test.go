package layer_test

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/memlayer/memlayer/layer"
)

// goroutineID returns the ID of the calling goroutine, from its stack
// header ("goroutine 42 [running]:").
func goroutineID(t *testing.T) int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Errorf("goroutine ID from %q: %v", buf[:], err)
	}
	return id
}

// TestHookGoroutinesReused checks that hooks run off the caller's
// goroutine, on goroutines reused from one call to the next, and that
// the idle ones exit.
func TestHookGoroutinesReused(t *testing.T) {
	before := runtime.NumGoroutine()
	caller := goroutineID(t)
	var mu sync.Mutex
	seen := map[int64]int{}
	l := layer.Func(layer.Spec{ID: "who"}, func(context.Context, layer.Query) ([]layer.Item, error) {
		id := goroutineID(t)
		mu.Lock()
		seen[id]++
		mu.Unlock()
		return []layer.Item{{Text: "x"}}, nil
	})
	s := initStack(t, layer.StackConfig{Layers: []layer.Layer{l}})
	const calls = 100
	for range calls {
		if _, err := s.Recall(t.Context(), layer.Query{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	if seen[caller] > 0 {
		t.Errorf("a hook ran on the caller's goroutine")
	}
	// Without reuse every call would start a goroutine of its own. With
	// it, a new one starts only when the caller hands work over before
	// the last runner is waiting again, which is rare.
	if len(seen) > calls/2 {
		t.Errorf("%d calls ran on %d goroutines, want reuse", calls, len(seen))
	}
	mu.Unlock()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Idle runners exit after one or two idle periods of a second.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before the calls: idle hook goroutines did not exit", runtime.NumGoroutine(), before)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
