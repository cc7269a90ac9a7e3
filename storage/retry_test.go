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
