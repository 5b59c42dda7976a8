package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff is capped exponential backoff with jitter: the n-th retry (n
// from 1) waits a uniformly random time in [d/2, d] with
// d = min(Initial * 2^(n-1), Max).
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// Delay returns the wait before retry n (n >= 1); rnd returns values in
// [0, 1) (nil: math/rand/v2).
func (b Backoff) Delay(n int, rnd func() float64) time.Duration {
	if rnd == nil {
		rnd = rand.Float64
	}
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if d <= 0 {
		return 0
	}
	return d/2 + time.Duration(rnd()*float64(d/2))
}

// Do runs op up to attempts times while retryable(err) holds, sleeping
// b.Delay between attempts. It returns nil, the last error, or — when ctx
// ends while waiting — errors.Join(ctx.Err(), lastErr). onRetry, if not
// nil, is called before each wait.
func Do(ctx context.Context, attempts int, b Backoff, op func(ctx context.Context) error,
	retryable func(error) bool, onRetry func(attempt int, wait time.Duration, err error)) error {
	var last error
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			if last == nil {
				return err
			}
			return errors.Join(err, last)
		}
		last = op(ctx)
		if last == nil || n >= attempts || !retryable(last) {
			return last
		}
		if err := ctx.Err(); err != nil {
			if errors.Is(last, err) {
				return last
			}
			return errors.Join(err, last)
		}
		wait := b.Delay(n, nil)
		if onRetry != nil {
			onRetry(n, wait, last)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(ctx.Err(), last)
		case <-t.C:
		}
	}
}
