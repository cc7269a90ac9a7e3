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

// WaitRetry sleeps for RetryDelay(attempt), or until ctx ends, in which case
// it returns ctx.Err(). attempt counts the conflicts so far, from 0.
func WaitRetry(ctx context.Context, attempt int) error {
	d := RetryDelay(attempt)
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
