package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoffBounds(t *testing.T) {
	b := Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
	for n := 1; n <= 10; n++ {
		want := min(100*time.Millisecond<<(n-1), time.Second)
		lo, hi := b.Delay(n, func() float64 { return 0 }), b.Delay(n, func() float64 { return 0.999999 })
		if lo != want/2 || hi > want || hi < want*99/100 {
			t.Errorf("retry %d: delay in [%v, %v], want [%v, %v]", n, lo, hi, want/2, want)
		}
	}
	if d := (Backoff{}).Delay(3, nil); d != 0 {
		t.Errorf("zero backoff waits %v", d)
	}
}

func TestDo(t *testing.T) {
	ctx := context.Background()
	b := Backoff{Initial: time.Millisecond, Max: 2 * time.Millisecond}
	transient := errors.New("transient")
	fatal := errors.New("fatal")
	calls := 0
	err := Do(ctx, 5, b, func(context.Context) error {
		calls++
		if calls < 3 {
			return transient
		}
		return nil
	}, func(err error) bool { return errors.Is(err, transient) }, nil)
	if err != nil || calls != 3 {
		t.Errorf("succeeds on 3rd: err %v calls %d", err, calls)
	}
	calls = 0
	err = Do(ctx, 5, b, func(context.Context) error { calls++; return fatal }, func(err error) bool { return errors.Is(err, transient) }, nil)
	if !errors.Is(err, fatal) || calls != 1 {
		t.Errorf("non-retryable: err %v calls %d", err, calls)
	}
	calls = 0
	retries := 0
	err = Do(ctx, 4, b, func(context.Context) error { calls++; return transient }, func(error) bool { return true },
		func(int, time.Duration, error) { retries++ })
	if !errors.Is(err, transient) || calls != 4 || retries != 3 {
		t.Errorf("exhausted: err %v calls %d retries %d", err, calls, retries)
	}
	cctx, cancel := context.WithCancel(ctx)
	err = Do(cctx, 100, Backoff{Initial: time.Hour, Max: time.Hour}, func(context.Context) error { cancel(); return transient },
		func(error) bool { return true }, nil)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, transient) {
		t.Errorf("cancelled: %v, want both the context error and the last error", err)
	}
}
