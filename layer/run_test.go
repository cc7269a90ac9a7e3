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

// TestHookGoroutines checks that hooks run off the caller's goroutine
// and that no goroutine is left behind once they return.
func TestHookGoroutines(t *testing.T) {
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
	if seen[caller] > 0 || len(seen) == 0 {
		t.Errorf("hooks ran on %v, the caller is %d", seen, caller)
	}
	mu.Unlock()
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before the calls: hook goroutines did not exit", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
