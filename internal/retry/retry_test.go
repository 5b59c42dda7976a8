package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoffBounds(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for n := 1; n <= 12; n++ {
		want := min(100*time.Millisecond<<(n-1), time.Second)
		lo, hi := b.Delay(n, func() float64 { return 0 }), b.Delay(n, func() float64 { return 0.999999 })
		if lo != want/2 || hi > want || hi < want*99/100 {
			t.Errorf("retry %d: delay in [%v, %v], want [%v, %v]", n, lo, hi, want/2, want)
		}
		for range 200 {
			if d := b.Delay(n, nil); d < want/2 || d > want {
				t.Fatalf("retry %d: random delay %v outside [%v, %v]", n, d, want/2, want)
			}
		}
	}
	if d := (Backoff{}).Delay(3, nil); d != 0 {
		t.Errorf("zero backoff waits %v", d)
	}
	// Max below Initial (or unset) caps at Initial, never below it.
	if d := (Backoff{Initial: 40 * time.Millisecond}).Delay(9, func() float64 { return 0.999999 }); d > 40*time.Millisecond || d < 39*time.Millisecond {
		t.Errorf("Max unset: %v, want ~40ms", d)
	}
	// Huge n does not overflow.
	if d := b.Delay(1<<30, func() float64 { return 0.999999 }); d > time.Second || d < 990*time.Millisecond {
		t.Errorf("retry 2^30: %v", d)
	}
}

func TestDo(t *testing.T) {
	ctx := context.Background()
	transient := errors.New("transient")
	fatal := errors.New("fatal")
	p := Policy{Attempts: 5, Backoff: Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond},
		Retryable: func(err error) bool { return errors.Is(err, transient) }}

	calls := 0
	v, err := Do(ctx, p, func(context.Context) (int, error) {
		calls++
		if calls < 3 {
			return 0, transient
		}
		return 42, nil
	})
	if err != nil || v != 42 || calls != 3 {
		t.Errorf("succeeds on 3rd: %d, %v, calls %d", v, err, calls)
	}

	calls = 0
	err = Run(ctx, p, func(context.Context) error { calls++; return fatal })
	if err != fatal || calls != 1 {
		t.Errorf("non-retryable: err %v calls %d", err, calls)
	}

	calls = 0
	var waits []time.Duration
	p.OnRetry = func(n int, wait time.Duration, err error) {
		if n != len(waits)+1 || !errors.Is(err, transient) {
			t.Errorf("OnRetry(%d, %v, %v)", n, wait, err)
		}
		waits = append(waits, wait)
	}
	p.Attempts = 4
	err = Run(ctx, p, func(context.Context) error { calls++; return transient })
	if err != transient || calls != 4 || len(waits) != 3 {
		t.Errorf("exhausted: err %v calls %d retries %d", err, calls, len(waits))
	}
	for i, w := range waits {
		if hi := min(time.Millisecond<<i, 2*time.Millisecond); w < hi/2 || w > hi {
			t.Errorf("wait %d = %v outside [%v, %v]", i+1, w, hi/2, hi)
		}
	}

	// Attempts < 1 means one call.
	calls = 0
	_ = Run(ctx, Policy{}, func(context.Context) error { calls++; return transient })
	if calls != 1 {
		t.Errorf("zero policy: %d calls", calls)
	}
}

func TestDoContext(t *testing.T) {
	transient := errors.New("transient")
	hour := Policy{Attempts: 100, Backoff: Backoff{Initial: time.Hour, Max: time.Hour}}

	// Cancelled while waiting: both the context error and the last error, at once.
	cctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	time.AfterFunc(20*time.Millisecond, cancel)
	err := Run(cctx, hour, func(context.Context) error { return transient })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, transient) {
		t.Errorf("cancelled: %v, want both the context error and the last error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancel took %v", d)
	}

	// Already done: no call, just the context error.
	calls := 0
	err = Run(cctx, hour, func(context.Context) error { calls++; return nil })
	if err != context.Canceled || calls != 0 {
		t.Errorf("done context: %v, %d calls", err, calls)
	}

	// The operation itself returns the context error: not joined twice.
	dctx, dcancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer dcancel()
	err = Run(dctx, hour, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	if err != context.DeadlineExceeded {
		t.Errorf("op's own ctx error: %v", err)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Error(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); err != context.Canceled {
		t.Errorf("cancelled sleep: %v", err)
	}
	if err := Sleep(ctx, 0); err != context.Canceled {
		t.Errorf("zero sleep on a done context: %v", err)
	}
}
