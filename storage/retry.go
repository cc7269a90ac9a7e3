package storage

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff bounds the waits of [WaitRetry].
const (
	minRetryDelay = 100 * time.Microsecond
	maxRetryDelay = 20 * time.Millisecond
)

// RetryDelay is how long a writer should wait before attempt number
// attempt of a compare-and-swap update, counted from 0 like the conflicts
// lost so far: nothing before the first attempt, then a random ("full
// jitter") delay whose bound doubles with each lost race, from 100µs
// after the first up to 20ms. Spreading the retries out is what lets many writers
// contending for one key all get through in a bounded number of attempts,
// instead of colliding again in lockstep.
func RetryDelay(attempt int) time.Duration {
	if attempt <= 0 {
		return 0
	}
	bound := maxRetryDelay
	if attempt < 16 {
		bound = min(minRetryDelay<<(attempt-1), maxRetryDelay)
	}
	return time.Duration(rand.Int64N(int64(bound))) + 1
}

// RetryDelayAfter is RetryDelay for a writer whose attempt was exposed
// to a race for took (from its read to the end of its write): the bound
// starts at took when that is longer than 100µs, doubles with each lost
// race, and stops at 20ms or 16 times took, whichever is longer. Scaling
// to the attempt is what spreads contenders out on a backend where a
// round trip is slower than the fixed bounds (SQLite, Redis across a
// network): with bounds below the time an attempt takes, writers that
// lost together read and write together again.
func RetryDelayAfter(attempt int, took time.Duration) time.Duration {
	if attempt <= 0 {
		return 0
	}
	base := max(minRetryDelay, took)
	ceiling := max(maxRetryDelay, 16*took)
	bound := ceiling
	if attempt < 16 && base<<(attempt-1) < ceiling {
		bound = base << (attempt - 1)
	}
	return time.Duration(rand.Int64N(int64(bound))) + 1
}

// WaitRetryAfter sleeps for RetryDelayAfter(attempt, took), or until ctx
// ends, in which case it returns ctx.Err().
func WaitRetryAfter(ctx context.Context, attempt int, took time.Duration) error {
	return sleep(ctx, RetryDelayAfter(attempt, took))
}

// WaitRetry sleeps for RetryDelay(attempt), or until ctx ends, in which case
// it returns ctx.Err(). attempt counts the conflicts so far, from 0.
func WaitRetry(ctx context.Context, attempt int) error {
	return sleep(ctx, RetryDelay(attempt))
}

// sleep waits for d, or until ctx ends, in which case it returns
// ctx.Err().
func sleep(ctx context.Context, d time.Duration) error {
	if d == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
