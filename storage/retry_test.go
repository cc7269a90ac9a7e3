package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/memlayer/memlayer/storage"
)

func TestRetryDelay(t *testing.T) {
	if d := storage.RetryDelay(0); d != 0 {
		t.Fatalf("RetryDelay(0) = %v, want 0: the first attempt should not wait", d)
	}
	for attempt := 1; attempt < 40; attempt++ {
		bound := 20 * time.Millisecond
		if attempt < 9 {
			bound = min(100*time.Microsecond<<(attempt-1), bound)
		}
		for range 50 {
			d := storage.RetryDelay(attempt)
			if d <= 0 || d > bound {
				t.Fatalf("RetryDelay(%d) = %v, want in (0, %v]", attempt, d, bound)
			}
		}
	}
}

func TestWaitRetryHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := storage.WaitRetry(ctx, 12); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitRetry on a cancelled context = %v, want context.Canceled", err)
	}
	if err := storage.WaitRetry(context.Background(), 1); err != nil {
		t.Fatalf("WaitRetry(1) = %v", err)
	}
}

// TestRetryDelayAfterScales: the delay after a lost race is bounded by
// the attempt's own duration, doubled per lost race, up to 16 times it
// (or 20ms); nothing before the first attempt.
func TestRetryDelayAfterScales(t *testing.T) {
	took := 5 * time.Millisecond
	if d := storage.RetryDelayAfter(0, took); d != 0 {
		t.Errorf("attempt 0: %v", d)
	}
	for attempt, bound := range map[int]time.Duration{1: took, 2: 2 * took, 4: 8 * took, 5: 16 * took, 9: 16 * took, 40: 16 * took} {
		for range 200 {
			if d := storage.RetryDelayAfter(attempt, took); d <= 0 || d > bound {
				t.Fatalf("attempt %d after %v: %v, want (0, %v]", attempt, took, d, bound)
			}
		}
	}
	for range 200 { // a fast backend keeps RetryDelay's bounds
		if d, r := storage.RetryDelayAfter(3, time.Microsecond), 400*time.Microsecond; d <= 0 || d > r {
			t.Fatalf("attempt 3 after 1µs: %v, want (0, %v]", d, r)
		}
	}
}
