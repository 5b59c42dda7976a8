// Package retry is tierkeeper's one retry loop and backoff: capped
// exponential backoff with jitter, and a generic Do that returns
// errors.Join(ctx.Err(), lastErr) when the context ends while it waits.
//
// Callers classify their own errors (Policy.Retryable): the blob providers
// retry 5xx and transport errors, the managed-ledger updater a lost
// compare-and-set, the bookie reader ETOOMANYREQUESTS.
package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff is capped exponential backoff with jitter: the n-th retry (n
// from 1) waits a uniformly random time in [d/2, d] with
// d = min(Initial * 2^(n-1), Max). The zero value never waits.
type Backoff struct {
	// Initial is the upper bound of the first wait.
	Initial time.Duration
	// Max caps every wait (before jitter). Zero or less than Initial means
	// Initial.
	Max time.Duration
}

// Delay returns the wait before retry n (n >= 1); rnd returns values in
// [0, 1) (nil: math/rand/v2).
func (b Backoff) Delay(n int, rnd func() float64) time.Duration {
	if rnd == nil {
		rnd = rand.Float64
	}
	ceil := max(b.Max, b.Initial)
	d := b.Initial
	for i := 1; i < n && d < ceil; i++ {
		d *= 2
	}
	d = min(d, ceil)
	if d <= 0 {
		return 0
	}
	return d/2 + time.Duration(rnd()*float64(d/2))
}

// Policy says which errors are retried, how often and how long apart.
type Policy struct {
	// Attempts is the most calls of the operation, the first included.
	// Less than 1 means 1 (no retry).
	Attempts int
	// Backoff spaces the attempts.
	Backoff Backoff
	// Retryable reports whether an attempt's error is worth another
	// attempt. Nil retries every error.
	Retryable func(error) bool
	// OnRetry, if set, is called before each wait with the number of the
	// attempt that failed (from 1), the wait and its error: for logs and
	// metrics.
	OnRetry func(attempt int, wait time.Duration, err error)
}

// Do calls op until it succeeds, fails with an error p.Retryable rejects,
// or p.Attempts calls are made, waiting p.Backoff between calls. It returns
// op's result and nil, or the last error as op returned it; when ctx ends
// before or between attempts, errors.Join(ctx.Err(), lastErr) (just
// ctx.Err() when no attempt was made), so callers can test for both.
func Do[T any](ctx context.Context, p Policy, op func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	var last error
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return zero, joinCtx(err, last)
		}
		v, err := op(ctx)
		if err == nil {
			return v, nil
		}
		last = err
		if n >= p.Attempts || (p.Retryable != nil && !p.Retryable(err)) {
			return zero, err
		}
		if cerr := ctx.Err(); cerr != nil {
			return zero, joinCtx(cerr, last)
		}
		wait := p.Backoff.Delay(n, nil)
		if p.OnRetry != nil {
			p.OnRetry(n, wait, err)
		}
		if err := Sleep(ctx, wait); err != nil {
			return zero, joinCtx(err, last)
		}
	}
}

// Run is Do for an operation without a result.
func Run(ctx context.Context, p Policy, op func(ctx context.Context) error) error {
	_, err := Do(ctx, p, func(ctx context.Context) (struct{}, error) { return struct{}{}, op(ctx) })
	return err
}

// Sleep waits d, or returns ctx.Err() as soon as ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
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

// joinCtx is errors.Join(ctxErr, last), without repeating a context error
// that last already carries.
func joinCtx(ctxErr, last error) error {
	if last == nil || errors.Is(last, ctxErr) {
		if last == nil {
			return ctxErr
		}
		return last
	}
	return errors.Join(ctxErr, last)
}
