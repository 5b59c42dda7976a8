package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// BenchmarkDispatchNothingDue is a dispatch pass over a queue of 900 000
// candidates (100 000 topics of 9) of which none is due: every ledger
// backs off after a failure (the store down, say). "pass" looks at every
// queued candidate to find that out; "tick" is a pass after it, with
// nothing changed and nothing due yet, which is skipped.
func BenchmarkDispatchNothingDue(b *testing.B) {
	now := time.Now()
	topics, per := 100000, 9
	s := New(nil, nil, Options{LedgersInFlight: 4, Now: func() time.Time { return now }, Registerer: prometheus.NewRegistry()})
	cs := make([]policy.Candidate, 0, topics*per)
	for i := range topics {
		ml := fmt.Sprintf("tenant-%d/ns-%d/persistent/topic-%d", i%10, (i/10)%10, i)
		for j := range per {
			ref := mledger.LedgerRef{ML: ml, LedgerID: int64(i*per + j + 1)}
			cs = append(cs, policy.Candidate{LedgerRef: ref, Action: policy.ActionOffload})
			s.states[ref] = &ledgerState{failures: 1, nextTry: now.Add(time.Hour + time.Duration(i))}
		}
	}
	s.Offer(policy.ListOf(cs...))
	<-s.wake
	ctx := context.Background()
	var wg sync.WaitGroup
	b.Run("pass", func(b *testing.B) {
		for range b.N {
			s.idle = idlePass{}
			s.dispatch(ctx, ctx, &wg)
		}
	})
	b.Run("tick", func(b *testing.B) {
		for range b.N {
			s.dispatch(ctx, ctx, &wg)
		}
	})
	if s.inFlight != 0 || !s.idle.set || !s.idle.until.Equal(now.Add(time.Hour)) {
		b.Fatalf("%d jobs started, idle %+v; none was due, the first in 1h", s.inFlight, s.idle)
	}
}

// BenchmarkJobEndAmongFailures is the bookkeeping at a job's end (one
// ledger, done) while 900 000 other ledgers back off or are parked: it
// looks at the job's own ledgers only (it recounted every state, 92 ms).
func BenchmarkJobEndAmongFailures(b *testing.B) {
	now := time.Now()
	s := New(doneRunner{}, nil,
		Options{Now: func() time.Time { return now }, Registerer: prometheus.NewRegistry()})
	for i := range 900000 {
		s.states[mledger.LedgerRef{ML: "failing", LedgerID: int64(i)}] = &ledgerState{failures: 5, parked: i%2 == 0, nextTry: now.Add(time.Hour)}
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		s.mu.Lock()
		s.inFlight++
		s.mu.Unlock()
		s.runJob(ctx, Job{ML: "done", Action: policy.ActionOffload, Ledgers: []int64{int64(i)}}, nil)
	}
}

// doneRunner reports every ledger of a job done.
type doneRunner struct{}

func (doneRunner) Run(_ context.Context, j Job) []Outcome {
	out := make([]Outcome, len(j.Ledgers))
	for i, id := range j.Ledgers {
		out[i] = Outcome{LedgerID: id, Result: ResultDone}
	}
	return out
}
